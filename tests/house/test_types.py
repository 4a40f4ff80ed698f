"""mypy over the numeric core and the weights (``[tool.genbound.mypy]`` in pyproject.toml): no file may
have more type errors than recorded, and a file with fewer must lower its record (a ratchet whose goal
is none; spectra.py and norms.py are at none)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _config() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["genbound"]["mypy"]


def errors_per_file(output: str) -> Counter:
    """``path -> number of errors`` in mypy's output (``path:line: error: ...`` lines)."""
    return Counter(m.group(1) for m in re.finditer(r"^([\w/.]+\.py):\d+: error:", output, re.M))


def ratchet_breaches(found: Counter, recorded: dict) -> list[str]:
    out = [
        f"{p}: {n} type errors, over its record {recorded.get(p, 0)}"
        for p, n in sorted(found.items())
        if n > recorded.get(p, 0)
    ]
    out += [
        f"{p}: {found.get(p, 0)} type errors, under its record {n}: lower it"
        for p, n in sorted(recorded.items())
        if found.get(p, 0) < n
    ]
    return out


@pytest.mark.slow
def test_type_errors_only_go_down():
    pytest.importorskip("mypy")
    cfg = _config()
    run = subprocess.run(
        [sys.executable, "-m", "mypy", *cfg["paths"]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode in (0, 1), run.stderr[-2000:]
    assert ratchet_breaches(errors_per_file(run.stdout), cfg["errors"]) == [], run.stdout[-4000:]


def test_the_ratchet_reads_mypy_and_sees_both_directions():
    out = (
        "genbound/a.py:3: error: x  [t]\ngenbound/a.py:9: error: y  [t]\ngenbound/b.py:1: note: z\n"
    )
    found = errors_per_file(out)
    assert found == Counter({"genbound/a.py": 2})
    assert ratchet_breaches(found, {"genbound/a.py": 2}) == []
    assert "over its record 1" in ratchet_breaches(found, {"genbound/a.py": 1})[0]
    assert "lower it" in ratchet_breaches(found, {"genbound/a.py": 3})[0]
