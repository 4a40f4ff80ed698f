"""Benchmark (issue 26): ``genbound analyze`` against WeightWatcher, whole process, same checkpoint.

WeightWatcher (https://github.com/CalculatedContent/WeightWatcher, PyPI ``weightwatcher``) is not a
requirement of genbound and is not installed by ``make install``. To run this benchmark, install it
beside the project's environment without letting pip touch that environment's packages; its only
dependency the project's environment lacks is ``powerlaw`` (it needs numpy, pandas, scipy,
matplotlib, matplotlib-inline, scikit-learn, safetensors, tqdm, mpmath, all already there):

    python -m pip install --no-deps --target /tmp/ww-site weightwatcher==0.7.7 powerlaw==2.0.0
    PYTHONPATH=/tmp/ww-site python benchmarks/bench_weightwatcher.py --repeat 3

(``--no-deps`` keeps pip from pulling a second torch; ``python`` is the project environment's
interpreter.) Without weightwatcher the script stops with one ``bench_weightwatcher: error:`` line
and exit code 2.

What it times, each as a **whole process** (a fresh interpreter: imports, reading the checkpoint,
the work, writing the result), the sides interleaved ``--repeat`` times on one checkpoint:

* ``genbound``: ``python -m genbound.cli analyze PATH --json --quiet --device cpu`` (the console
  command; per layer the 2 x heads products ``QK``, ``V`` and the two feed-forward matrices: singular
  values, both proxies; no power-law fit, genbound has none);
* ``dense`` (issue 41): the independent dense float64 pipeline of ``benchmarks/bench_spectral.py``
  (``work_baseline``: every ``QK``, ``V``, ``M_in``, ``M_out`` formed densely, a full float64 SVD each,
  the formulas in plain loops) as a whole process, ``bench_spectral.py --child baseline``; its proxy
  and the log of its Edelman-style proxy are compared with genbound's (``agreement["dense"]``);
* ``ww-analyze``: ``WeightWatcher(model=PATH).analyze()`` with its defaults (per weight matrix: the
  full singular values with SciPy in float64, the power-law fit of the ESD, the norm metrics), then
  the details table written as CSV. WeightWatcher has no command line (its ``main`` prints "coming
  later"), so a three-line script is the whole process;
* ``ww-nofit``: the same ``analyze()`` with its power-law fit replaced by a stub (alpha -1, as
  WeightWatcher records a failed fit). ``analyze`` always runs the fit and has no option to skip it,
  so this is **not** a WeightWatcher mode: it measures what the rest of ``analyze`` (reading, the
  SVDs, the norm metrics) costs, i.e. the part that computes what genbound also computes;
* ``ww-esd``: WeightWatcher's own public route to spectra without a fit: ``get_ESD(layer=...)`` for
  every layer that ``describe()`` lists, and from the eigenvalues of ``W^T W`` the quantities genbound
  also reports (largest singular value, Frobenius norm, stable rank). Each ``get_ESD`` call runs
  ``describe()`` again, so this route costs more than ``analyze`` itself.

Reported per side: median wall time, median CPU time of the child (user + system, from ``wait4``),
peak resident set size of the child, and the ratios ``side / genbound`` of the medians. On a shared
machine the CPU-time ratio is the steadier one; the 1-minute load average before and after is
recorded.

Agreement, where the two tools compute the same thing: genbound's ``M_in`` and ``M_out`` of layer
``l`` are WeightWatcher's ``layer.l.intermediate.dense`` and ``layer.l.output.dense`` (transposed,
which changes no singular value). For those matrices: ``sigma_max`` against ``sv_max``,
``sigma_max^2`` against ``lambda_max`` (= WeightWatcher's ``spectral_norm``, the largest eigenvalue
of ``W^T W``), ``frobenius^2`` against ``norm`` (the sum of those eigenvalues), ``stable_rank``
against ``stable_rank`` and ``rank`` against ``matrix_rank`` (different tolerances; equal for these
full-rank matrices). The attention matrices do not overlap (WeightWatcher analyses ``W_Q``, ``W_K``,
``W_V``, ``W_O`` one by one; genbound the per-head products), nor does WeightWatcher's ``alpha``
(genbound fits no power law; its ``log_alpha`` is a different quantity).

    python benchmarks/bench_weightwatcher.py                    # BERT-base shape, a table
    python benchmarks/bench_weightwatcher.py --json --repeat 3  # one JSON object
    python benchmarks/bench_weightwatcher.py --path CHECKPOINT  # an existing folder (MiniLM, ...)
    python benchmarks/bench_weightwatcher.py --layers 2 --hidden 64 --heads 2 --d-ff 128   # quick

Run it under the CPU lock (``flock /tmp/genbound-cpu.lock nice -n 5 ...``), see benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROG = "bench_weightwatcher"
SIDES = ("genbound", "dense", "ww-analyze", "ww-nofit", "ww-esd")

#: The WeightWatcher whole process of ``ww-analyze``: its defaults, the details table as CSV.
WW_ANALYZE = """\
import sys
import weightwatcher as ww
ww.WeightWatcher(model=sys.argv[1]).analyze().to_csv(sys.argv[2], index=False)
"""

#: ``ww-esd``: WeightWatcher's eigenvalues only (``get_ESD`` per layer), no power-law fit.
WW_ESD = """\
import sys
import numpy as np
import pandas as pd
import weightwatcher as ww
w = ww.WeightWatcher(model=sys.argv[1])
rows = []
for layer_id, name in w.describe()[["layer_id", "name"]].itertuples(index=False):
    ev = np.asarray(w.get_ESD(layer=int(layer_id)), dtype=float)
    lam = float(ev.max())
    rows.append({"layer_id": layer_id, "name": name, "sv_max": lam ** 0.5, "lambda_max": lam,
                 "norm": float(ev.sum()), "stable_rank": float(ev.sum()) / lam})
pd.DataFrame(rows).to_csv(sys.argv[2], index=False)
"""

#: ``ww-nofit``: ``analyze()`` with its power-law fit replaced by a stub that records the values
#: WeightWatcher itself writes for a failed fit (alpha -1); NOT a WeightWatcher option (it has none):
#: it measures what the rest of ``analyze`` costs (reading, SVDs, norm metrics, the table).
WW_NOFIT = """\
import sys
import weightwatcher as ww
def no_fit(self, layer, params=None):
    for k in ("alpha", "xmin", "xmax", "D", "sigma", "num_pl_spikes"):
        layer.add_column(k, -1)
    layer.add_column("status", "no-fit stub"); layer.add_column("warning", "")
    return layer
ww.WeightWatcher.apply_powerlaw = no_fit
ww.WeightWatcher(model=sys.argv[1]).analyze().to_csv(sys.argv[2], index=False)
"""

_INFO = """\
import json, sys
out = {"python": sys.version.split()[0]}
import numpy, scipy, torch
out.update(torch=torch.__version__, aten_capability=torch.backends.cpu.get_cpu_capability(),
           torch_threads=torch.get_num_threads(), numpy=numpy.__version__, scipy=scipy.__version__)
try:
    import weightwatcher
    out["weightwatcher"] = weightwatcher.__version__
    import powerlaw
    out["powerlaw"] = getattr(powerlaw, "__version__", None)
    from importlib.metadata import version
    out["powerlaw"] = out["powerlaw"] or version("powerlaw")
except Exception as exc:
    out["weightwatcher_error"] = repr(exc)
print(json.dumps(out))
"""

#: Quantities compared, genbound's name (a function of its row) against WeightWatcher's column.
COMPARED = {
    "sv_max": lambda r: r["sigma_max"],
    "lambda_max": lambda r: r["sigma_max"] ** 2,
    "norm": lambda r: r["frobenius"] ** 2,
    "stable_rank": lambda r: r["stable_rank"],
    "matrix_rank": lambda r: r["rank"],
}
_FF_NAME = re.compile(r"(?:^|\.)layer\.(\d+)\.(intermediate\.dense|output\.dense)$")


class BenchError(Exception):
    """A condition under which the benchmark cannot run; printed as one line, exit code 2."""


# ---------------------------------------------------------------------------------------------------
# agreement (pure functions; tested without WeightWatcher)


def ww_feed_forward(names: list[str]) -> dict[tuple[str, int], int]:
    """Map ``(kind, layer) -> row index`` for the feed-forward matrices among WeightWatcher's layer
    names: ``...layer.L.intermediate.dense`` is ``M_in``, ``...layer.L.output.dense`` is ``M_out``
    (``...layer.L.attention.output.dense`` is neither).

    >>> ww_feed_forward(["bert.encoder.layer.3.attention.output.dense", "encoder.layer.3.output.dense",
    ...                  "encoder.layer.3.intermediate.dense", "embeddings.word_embeddings"])
    {('M_out', 3): 1, ('M_in', 3): 2}
    """
    out = {}
    for i, name in enumerate(names):
        m = _FF_NAME.search(str(name))
        if m and not str(name).endswith("attention.output.dense"):
            key = ("M_in" if m.group(2).startswith("intermediate") else "M_out", int(m.group(1)))
            if key in out:
                raise BenchError(
                    f"two WeightWatcher layers are {key}: {names[out[key]]!r} and {name!r}"
                )
            out[key] = i
    return out


def _rel(a: float, b: float) -> float:
    if a == b:
        return 0.0
    return abs(a - b) / max(abs(a), abs(b))


def agreement(matrices: list[dict], ww_rows: list[dict]) -> dict:
    """Largest relative difference per compared quantity over the feed-forward matrices both tools
    analyse (``matrices``: genbound's JSON rows; ``ww_rows``: WeightWatcher's table as records).
    Columns that ``ww_rows`` lacks are skipped. Refuses when the two cover different matrices.

    >>> g = [{"kind": "M_in", "layer": 0, "head": None, "sigma_max": 2.0, "frobenius": 3.0,
    ...       "stable_rank": 2.25, "rank": 4}, {"kind": "QK", "layer": 0, "head": 0}]
    >>> w = [{"name": "encoder.layer.0.intermediate.dense", "sv_max": 2.0, "lambda_max": 4.0,
    ...       "norm": 9.0, "stable_rank": 2.25}]
    >>> agreement(g, w)
    {'n_matrices': 1, 'max_rel_diff': {'sv_max': 0.0, 'lambda_max': 0.0, 'norm': 0.0, 'stable_rank': 0.0}, 'max': 0.0}
    """
    if ww_rows and ww_rows[0].get("kind") == "totals":  # the dense side: both proxies
        ours = next(r for r in matrices if r.get("kind") == "totals")
        diffs = {k: _rel(float(ours[k]), float(ww_rows[0][k])) for k in ("value", "edelman_log")}
        return {"n_matrices": None, "max_rel_diff": diffs, "max": max(diffs.values())}
    index = ww_feed_forward([r["name"] for r in ww_rows])
    ours = {(r["kind"], int(r["layer"])): r for r in matrices if r["kind"] in ("M_in", "M_out")}
    if set(ours) != set(index):
        raise BenchError(
            f"genbound and WeightWatcher cover different feed-forward matrices: "
            f"only genbound {sorted(set(ours) - set(index))}, "
            f"only WeightWatcher {sorted(set(index) - set(ours))}"
        )
    cols = [c for c in COMPARED if all(c in ww_rows[i] for i in index.values())]
    diffs = {
        c: max(_rel(float(COMPARED[c](ours[k])), float(ww_rows[i][c])) for k, i in index.items())
        for c in cols
    }
    return {
        "n_matrices": len(index),
        "max_rel_diff": diffs,
        "max": max(diffs.values(), default=math.nan),
    }


# ---------------------------------------------------------------------------------------------------
# whole-process timing


def timed(cmd: list[str], env: dict, cwd: str) -> dict:
    """Run ``cmd`` to completion; wall time, its CPU time (user + system) and peak RSS (``wait4``).

    stdout and stderr go to files (no pipe to drain while waiting). The peak RSS is the child's own
    ``ru_maxrss`` (Linux: the high-water mark of the process, which after ``fork`` + ``exec`` starts
    from the parent's, small here: the parent imports neither torch nor numpy).
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=err)
        previous = signal.signal(
            signal.SIGTERM, lambda *_: (p.kill(), sys.exit(143))
        )  # no orphan on `timeout`
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            signal.signal(signal.SIGTERM, previous)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if p.returncode != 0:
        raise BenchError(
            f"{' '.join(cmd[:4])} ... exited with {p.returncode}: {stderr.strip()[-2000:]}"
        )
    return {
        "wall_s": wall,
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "user_s": ru.ru_utime,
        "sys_s": ru.ru_stime,
        "peak_rss_mb": ru.ru_maxrss / 1024.0,
        "stdout": stdout,
    }


def _env(ww_site: str | None, threads: int | None) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), ww_site, os.environ.get("PYTHONPATH")) if p
    )
    env["HF_HUB_OFFLINE"] = "1"
    env["MPLBACKEND"] = "Agg"
    if threads:
        for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[k] = str(threads)
    return env


def side_command(side: str, path: str, out_csv: str) -> list[str]:
    """The command line of one side (see the module docstring)."""
    if side == "genbound":
        return [
            sys.executable,
            "-m",
            "genbound.cli",
            "analyze",
            path,
            "--json",
            "--quiet",
            "--device",
            "cpu",
        ]
    if side == "dense":
        bench = str(ROOT / "benchmarks" / "bench_spectral.py")
        return [sys.executable, bench, "--child", "baseline", "--path", path, "--device", "cpu"]
    if side == "ww-analyze":
        return [sys.executable, "-c", WW_ANALYZE, path, out_csv]
    if side == "ww-nofit":
        return [sys.executable, "-c", WW_NOFIT, path, out_csv]
    if side == "ww-esd":
        return [sys.executable, "-c", WW_ESD, path, out_csv]
    raise ValueError(side)


def _read_csv_records(path: str) -> list[dict]:
    import csv

    def num(x):
        try:
            return float(x)
        except ValueError:
            return x

    with open(path, newline="") as f:
        return [{k: num(v) for k, v in row.items()} for row in csv.DictReader(f)]


def _machine() -> dict:
    cpu, flags = platform.processor() or "?", ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and cpu in ("?", "", platform.machine()):
                cpu = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = line.split(":", 1)[1]
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "avx512f": " avx512f" in f" {flags}",
        "avx2": " avx2" in f" {flags}",
    }


def checkpoint_key(path: str) -> str:
    """Identify a checkpoint folder across invocations: a hash of its ``config.json`` and of the
    names and sizes of its safetensors files (records of other checkpoints are not mixed)."""
    import hashlib

    h = hashlib.sha256((Path(path) / "config.json").read_bytes())
    for f in sorted(Path(path).glob("*.safetensors")):
        h.update(f"{f.name}:{f.stat().st_size}".encode())
    return h.hexdigest()[:16]


def write_checkpoint(
    path: str, layers: int, heads: int, hidden: int, d_ff: int, seed: int, env: dict
) -> dict:
    """Write the seeded random BERT-shaped checkpoint (:func:`genbound.testing.make_bert_checkpoint`)
    in a child process, so that this process stays small (its peak RSS is every child's floor)."""
    make = (
        "import sys, json; from genbound.testing import make_bert_checkpoint as m; "
        "print(json.dumps(m(sys.argv[1], layers=%d, heads=%d, hidden=%d, d_ff=%d, seed=%d)))"
        % (layers, heads, hidden, d_ff, seed)
    )
    out = subprocess.run(
        [sys.executable, "-c", make, path], env=env, check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout)


def _ff_rows(side: str, stdout: str, out_csv: str) -> list[dict]:
    """The rows of one side's result that the agreement compares (genbound: its ``M_in``/``M_out``
    rows; WeightWatcher: its feed-forward layers), kept small enough to record."""
    if side == "genbound":
        keep = ("kind", "layer", "sigma_max", "frobenius", "stable_rank", "rank")
        d = json.loads(stdout)
        rows = [{k: r[k] for k in keep} for r in d["matrices"] if r["kind"] in ("M_in", "M_out")]
        return rows + [
            {"kind": "totals", "value": d["spectral_adaptive"], "edelman_log": d["edelman_log"]}
        ]
    if side == "dense":
        d = json.loads(stdout.strip().splitlines()[-1])
        return [{"kind": "totals", "value": d["value"], "edelman_log": d["edelman_log"]}]
    rows = _read_csv_records(out_csv)
    idx = ww_feed_forward([r["name"] for r in rows])
    keep = ("name", *COMPARED)
    return [{k: rows[i][k] for k in keep if k in rows[i]} for i in sorted(idx.values())]


def _commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return out + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def run(
    path: str | None = None,
    layers=12,
    heads=12,
    hidden=768,
    d_ff=3072,
    seed=0,
    repeat=3,
    threads=None,
    sides=SIDES,
    ww_site=None,
    record: str | None = None,
) -> dict:
    """Time ``sides`` (interleaved, ``repeat`` rounds) on ``path`` (default: a fresh random
    BERT-shaped checkpoint in a temporary folder). Each run is one record; with ``record`` (a JSONL
    file) each is appended as soon as it ends, and the summary covers every record in the file for
    the same checkpoint and thread setting (so a long comparison can be run in short invocations)."""
    env = _env(ww_site, threads)
    info = json.loads(
        subprocess.run(
            [sys.executable, "-c", _INFO], env=env, capture_output=True, text=True, check=True
        ).stdout
    )
    if any(s.startswith("ww") for s in sides) and "weightwatcher" not in info:
        raise BenchError(
            "weightwatcher is not importable ("
            + info.get("weightwatcher_error", "?")
            + "); it is not a genbound requirement: install it as the docstring of "
            "benchmarks/bench_weightwatcher.py says and put it on PYTHONPATH or --ww-site"
        )
    common = {"machine": _machine(), "versions": info, "commit": _commit(), "threads": threads}
    records = []
    with tempfile.TemporaryDirectory(prefix="genbound-bench-ww-") as tmp:
        if path is None:
            path = str(Path(tmp) / "ckpt")
            write_checkpoint(path, layers, heads, hidden, d_ff, seed, env)
            common["shape"] = {
                "layers": layers,
                "heads": heads,
                "hidden": hidden,
                "d_ff": d_ff,
                "seed": seed,
            }
        else:
            path = str(Path(path).resolve())
            common["path"] = path
        common["checkpoint"] = checkpoint_key(path)
        for f in Path(path).glob("*.safetensors"):  # warm the page cache for every side alike
            f.read_bytes()
        for _ in range(repeat):
            for s in sides:
                out_csv = str(Path(tmp) / f"{s}.csv")
                load0, t0 = os.getloadavg()[0], time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                r = timed(side_command(s, path, out_csv), env, tmp)
                r["ff"] = _ff_rows(s, r.pop("stdout"), out_csv)
                r.update(
                    common,
                    side=s,
                    started_utc=t0,
                    load_1min_before=load0,
                    load_1min_after=os.getloadavg()[0],
                )
                records.append(r)
                if record:
                    with open(record, "a") as f:
                        f.write(json.dumps(r) + "\n")
    if record:
        with open(record) as f:
            every = [json.loads(line) for line in f if line.strip()]
        records = [
            r for r in every if r["checkpoint"] == common["checkpoint"] and r["threads"] == threads
        ]
    return summarize(records)


def _rounds(records: list[dict]):
    """Pairs ``(genbound run, other run)``: each run of another side with the genbound run that came
    last before it (in the same invocation: the same interleaved round).

    >>> [(a["k"], b["k"]) for a, b in _rounds([{"side": "genbound", "k": 0}, {"side": "ww-analyze", "k": 1},
    ...  {"side": "genbound", "k": 2}, {"side": "ww-esd", "k": 3}, {"side": "ww-analyze", "k": 4}])]
    [(0, 1), (2, 3), (2, 4)]
    """
    last = None
    for r in records:
        if r["side"] == "genbound":
            last = r
        elif last is not None:
            yield last, r


def summarize(records: list[dict]) -> dict:
    """Medians per side (wall, CPU, peak RSS), the ratios ``side / genbound`` of the medians and the
    medians of the per-round ratios (``paired_*``: steadier when the load changes between rounds), the
    agreement of each WeightWatcher side with genbound (their latest runs), and the conditions."""
    sides = [s for s in SIDES if any(r["side"] == s for r in records)]
    by = {s: [r for r in records if r["side"] == s] for s in sides}
    med = {
        s: {k: statistics.median(r[k] for r in by[s]) for k in ("wall_s", "cpu_s", "peak_rss_mb")}
        | {
            "runs": len(by[s]),
            "all_wall_s": [round(r["wall_s"], 3) for r in by[s]],
            "all_cpu_s": [round(r["cpu_s"], 3) for r in by[s]],
        }
        for s in sides
    }
    last = records[-1] if records else {}
    loads = [x for r in records for x in (r["load_1min_before"], r["load_1min_after"])]
    out = {
        "checkpoint": last.get("checkpoint"),
        "shape": last.get("shape"),
        "path": last.get("path"),
        "threads": last.get("threads"),
        "medians": med,
        "ratios": {},
        "agreement": {},
        "load_1min_range": [min(loads), max(loads)] if loads else None,
        "first_utc": min((r["started_utc"] for r in records), default=None),
        "last_utc": max((r["started_utc"] for r in records), default=None),
        "commits": sorted({str(r.get("commit")) for r in records}),
        "machine": last.get("machine"),
        "versions": last.get("versions"),
    }
    if "genbound" in by:
        g = med["genbound"]
        for s in sides:
            if s != "genbound":
                pairs = [(prev, r) for prev, r in _rounds(records) if r["side"] == s]
                out["ratios"][s] = {
                    "wall": med[s]["wall_s"] / g["wall_s"],
                    "cpu": med[s]["cpu_s"] / g["cpu_s"],
                    "paired_wall": statistics.median(b["wall_s"] / a["wall_s"] for a, b in pairs),
                    "paired_cpu": statistics.median(b["cpu_s"] / a["cpu_s"] for a, b in pairs),
                }
                out["agreement"][s] = agreement(by["genbound"][-1]["ff"], by[s][-1]["ff"])
    return out


def _print_table(res: dict) -> None:
    v, m = res["versions"], res["machine"]
    print(
        f"{m['cpu']}, {m['cpus']} CPUs, avx512f {m['avx512f']}, ATen {v.get('aten_capability')}; "
        f"torch {v.get('torch')}, weightwatcher {v.get('weightwatcher')}, powerlaw {v.get('powerlaw')}, "
        f"scipy {v.get('scipy')}; commit {', '.join(res['commits'])}"
    )
    lo, hi = res["load_1min_range"]
    print(
        f"checkpoint {res['shape'] or res['path']} ({res['checkpoint']}); threads {res['threads'] or 'default'}; "
        f"{res['first_utc']} to {res['last_utc']}; 1-minute load {lo:.2f} to {hi:.2f}"
    )
    print(
        f"{'side':>12} {'runs':>4} {'wall s':>9} {'CPU s':>9} {'peak MiB':>9} {'wall ratio':>11} {'CPU ratio':>10}"
        f" {'paired wall':>12} {'paired CPU':>11}"
    )
    for s, d in res["medians"].items():
        r = res["ratios"].get(s, dict.fromkeys(("wall", "cpu", "paired_wall", "paired_cpu"), 1.0))
        print(
            f"{s:>12} {d['runs']:4d} {d['wall_s']:9.2f} {d['cpu_s']:9.2f} {d['peak_rss_mb']:9.1f} "
            f"{r['wall']:10.2f}x {r['cpu']:9.2f}x {r['paired_wall']:11.2f}x {r['paired_cpu']:10.2f}x"
        )
    for s, a in res["agreement"].items():
        print(
            f"agreement with {s} on "
            + (f"{a['n_matrices']} feed-forward matrices" if a["n_matrices"] else "both proxies")
            + " (largest relative difference): "
            + ", ".join(f"{k} {x:.2g}" for k, x in a["max_rel_diff"].items())
        )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--path", help="an existing checkpoint folder (default: write a random BERT-shaped one)"
    )
    ap.add_argument(
        "--write-checkpoint",
        metavar="DIR",
        help="only write the random BERT-shaped checkpoint (the shape options) into DIR and exit",
    )
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--d-ff", type=int, default=3072)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--repeat", type=int, default=3, help="runs per side, interleaved; medians are reported"
    )
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="OMP/OpenBLAS/MKL threads in every child (default: the libraries' own)",
    )
    ap.add_argument(
        "--sides", default=",".join(SIDES), help=f"comma-separated subset of {','.join(SIDES)}"
    )
    ap.add_argument(
        "--ww-site", help="folder holding weightwatcher (added to the children's PYTHONPATH)"
    )
    ap.add_argument(
        "--record",
        metavar="FILE",
        help="append every run to this JSONL file and summarise all of its runs on the same "
        "checkpoint and threads (a long comparison in several short invocations)",
    )
    ap.add_argument(
        "--summary", action="store_true", help="with --record: run nothing, summarise the file"
    )
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    a = ap.parse_args(argv)
    sides = tuple(s for s in a.sides.split(",") if s)
    try:
        if not sides or set(sides) - set(SIDES):
            raise BenchError(
                f"--sides must be a comma-separated subset of {','.join(SIDES)}, got {a.sides!r}"
            )
        if a.repeat < 1:
            raise BenchError(f"--repeat must be at least 1, got {a.repeat}")
        if a.path is not None and not (Path(a.path) / "config.json").is_file():
            raise BenchError(f"--path {a.path!r} is not a checkpoint folder (no config.json)")
        if a.write_checkpoint:
            info = write_checkpoint(
                a.write_checkpoint, a.layers, a.heads, a.hidden, a.d_ff, a.seed, _env(None, None)
            )
            print(json.dumps(info))
            return 0
        if a.summary:
            if not a.record or not Path(a.record).is_file():
                raise BenchError("--summary needs --record FILE, an existing file")
            with open(a.record) as f:
                every = [json.loads(line) for line in f if line.strip()]
            if a.path:
                key = checkpoint_key(a.path)
                every = [r for r in every if r["checkpoint"] == key]
            keys = sorted({r["checkpoint"] for r in every})
            if len(keys) > 1:
                raise BenchError(
                    f"{a.record} holds runs on {len(keys)} checkpoints ({', '.join(keys)}); "
                    "name one with --path"
                )
            res = summarize([r for r in every if r["threads"] == a.threads])
            if not res["medians"]:
                raise BenchError(
                    f"{a.record} holds no run for this checkpoint and --threads {a.threads}"
                )
        else:
            res = run(
                a.path,
                a.layers,
                a.heads,
                a.hidden,
                a.d_ff,
                a.seed,
                a.repeat,
                a.threads,
                sides,
                a.ww_site,
                a.record,
            )
    except BenchError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(res))
    else:
        _print_table(res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
