"""Start-up time of the ``genbound`` command line: ``genbound --help`` and each subcommand's ``--help``,
each in a fresh interpreter, against a bare ``python -c pass`` timed in the same run.

Usage: ``python benchmarks/bench_startup.py [--repeat N] [--json]``. Reports, per command, the
minimum wall time over ``N`` runs, that minus the bare interpreter's, and whether torch was imported
(``python -X importtime`` is not used: it slows the imports it measures). The issue's target:
``genbound --help`` under 0.3 s on a quiet machine. Run it under the CPU lock with a 1-minute load
below 1.5 (benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "genbound --help": [sys.executable, "-m", "genbound.cli", "--help"],
    "genbound claims --help": [sys.executable, "-m", "genbound.cli", "claims", "--help"],
    "genbound analyze --help": [sys.executable, "-m", "genbound.cli", "analyze", "--help"],
    "genbound experiment --help": [sys.executable, "-m", "genbound.cli", "experiment", "--help"],
}
_PROBE = (
    "import runpy, sys, atexit\n"
    "atexit.register(lambda: print('TORCH' if 'torch' in sys.modules else 'NOTORCH', file=sys.stderr))\n"
    "sys.argv = ['genbound'] + sys.argv[1:]\n"
    "runpy.run_module('genbound.cli', run_name='__main__')\n"
)


def _time(cmd: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def _imports_torch(cmd: list[str], env: dict) -> bool | None:
    if cmd[1:3] != ["-m", "genbound.cli"]:
        return None
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, *cmd[3:]], env=env, capture_output=True, text=True
    )
    return "NOTORCH" not in out.stderr


def run(repeat: int = 5) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    rows = {}
    for name, cmd in COMMANDS.items():
        _time(cmd, env)  # warm the file cache
        times = [_time(cmd, env) for _ in range(repeat)]
        rows[name] = {
            "min_s": min(times),
            "all_s": times,
            "imports_torch": _imports_torch(cmd, env),
        }
    bare = rows["python -c pass"]["min_s"]
    for r in rows.values():
        r["above_bare_s"] = r["min_s"] - bare
    return {"repeat": repeat, "load_1min": os.getloadavg()[0], "commands": rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    out = run(args.repeat)
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print(f"1-minute load at the end: {out['load_1min']:.2f}")
        for name, r in out["commands"].items():
            torch = {None: "", True: "imports torch", False: "no torch"}[r["imports_torch"]]
            print(
                f"{name:>28}: {r['min_s']:.3f} s (min of {args.repeat}; {r['above_bare_s']:+.3f} s above "
                f"a bare interpreter) {torch}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
