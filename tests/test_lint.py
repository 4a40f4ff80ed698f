"""The house style, checked: ruff's formatter and linter ([tool.ruff] in pyproject.toml) over the package,
tests, tools and benchmarks. The same two commands run in .pre-commit-config.yaml."""

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _ruff(*args: str) -> subprocess.CompletedProcess:
    pytest.importorskip("ruff", reason="ruff is pinned in requirements.txt")
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_code_is_formatted():
    r = _ruff("format", "--check", ".")
    assert r.returncode == 0, "run `ruff format .`:\n" + r.stdout[-3000:] + r.stderr[-1000:]


def test_code_passes_the_linter():
    r = _ruff("check", "--output-format", "concise", ".")
    assert r.returncode == 0, "ruff check found:\n" + r.stdout[-3000:] + r.stderr[-1000:]


def test_the_linter_catches_an_unused_import(tmp_path):
    # the configuration is live: a file with an unused import under genbound/ is reported
    (tmp_path / "genbound").mkdir()
    (tmp_path / "genbound" / "m.py").write_text("import os\n")
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    pytest.importorskip("ruff")
    r = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "."], cwd=tmp_path, capture_output=True, text=True
    )
    assert r.returncode == 1 and "F401" in r.stdout
