"""The house style, checked: ruff's formatter and linter ([tool.ruff] in pyproject.toml) over the package,
tests, tools and benchmarks. The same two commands run in .pre-commit-config.yaml."""

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


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


def test_one_version():
    """pyproject reads the version from genbound.__version__; CITATION.cff and CHANGES.md name the same one."""
    import re

    import genbound

    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject and 'attr = "genbound.__version__"' in pyproject
    assert not re.search(r"^version\s*=\s*\"", pyproject, re.M), (
        "a second version in pyproject.toml"
    )
    cff = re.search(r'^version:\s*"([^"]+)"', (ROOT / "CITATION.cff").read_text(), re.M)
    assert cff and cff.group(1) == genbound.__version__
    assert f"## {genbound.__version__}" in (ROOT / "CHANGES.md").read_text()


def test_house_files_exist():
    for name in ("LICENSE", "CHANGES.md", "CITATION.cff", ".pre-commit-config.yaml"):
        assert (ROOT / name).is_file(), name
    assert "MIT License" in (ROOT / "LICENSE").read_text()
