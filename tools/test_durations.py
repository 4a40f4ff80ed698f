"""Per-test durations of a ``make test`` run, read from its junit file: the total, the sum per floor of
the tests (``tests/<floor>/``; doctests of the package and chapters apart) and the slowest tests.

    python tools/test_durations.py test-results/junit.xml [--top 15]

``.ci/run`` prints it after ``make test``, so every CI log carries the durations.
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def durations(junit: Path) -> list[tuple[str, float]]:
    """``(test id, seconds)`` of every test case of the junit file."""
    root = ET.parse(junit).getroot()
    out = []
    for case in root.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        out.append((name, float(case.get("time") or 0.0)))
    return out


def floor_of(test_id: str) -> str:
    """``tests.experiments.test_x::...`` -> ``experiments``; doctests -> ``doctests``."""
    parts = test_id.split("::")[0].split(".")
    if parts[0] == "tests" and len(parts) > 2:
        return parts[1]
    return "doctests"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("junit", type=Path)
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args(argv)
    if not a.junit.is_file():
        print(f"test_durations: no junit file at {a.junit}", file=sys.stderr)
        return 2
    rows = durations(a.junit)
    per_floor: dict[str, float] = defaultdict(float)
    for name, t in rows:
        per_floor[floor_of(name)] += t
    print(f"{len(rows)} tests, {sum(t for _, t in rows):.0f} s summed over workers")
    for floor, t in sorted(per_floor.items(), key=lambda kv: -kv[1]):
        print(f"  {floor:12s} {t:8.1f} s")
    for name, t in sorted(rows, key=lambda r: -r[1])[: a.top]:
        print(f"  {t:8.1f} s  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
