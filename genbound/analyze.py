"""``genbound analyze``: both Part III proxies for a checkpoint folder, from the command line.

Book: :ref:`ch-sakai-trained`. ``genbound analyze PATH`` loads a checkpoint folder (``config.json`` +
``model.safetensors``, a sharded ``model.safetensors.index.json`` or ``pytorch_model.bin``) of one of
five architectures (BERT, RoBERTa, ELECTRA, DistilBERT, GPT-2; ``genbound.weights.families``)
layer by layer, and prints the spectrum-adaptive proxy of Sakai & Imaizumi (2026) and their
Edelman-style proxy, with a per-layer summary. ``--json`` prints one object::

    {"spectral_adaptive": ..., "spectral_adaptive_capacity": ..., "spectral_adaptive_trivial": null,
     "edelman": ..., "edelman_capacity": ..., "edelman_trivial": null, "edelman_log": ...,
     "family": "bert", "layers": L, ...}

``*_capacity`` is the ``n``-free complexity of :prf:ref:`prop-sa-capacity` (the rate is capacity over
``sqrt(n)``); ``*_trivial`` is ``null`` because a checkpoint carries no sample size.

``routes`` counts the matrices by the route their spectrum took (``qr-core`` for heads; ``gram``,
``qr-svd`` or ``svd`` for feed-forward matrices, :func:`genbound.spectra.certified_singular_values`;
``dense-svd`` in ``--mode authors``). Every bad file, config or option ends in one line
``genbound: error: ...`` on stderr and exit code 2 (``genbound.weights.files``).

``edelman`` is ``null`` when the proxy exceeds float64 (``edelman_overflow`` is then ``true``);
``edelman_log`` is always finite. ``--csv FILE`` writes the per-matrix table, ``--plot FILE`` a figure
of the per-matrix contributions. A progress bar over layers goes to stderr when stderr is a terminal
(``--quiet`` turns it off).

>>> import tempfile, json, io, contextlib
>>> from genbound.testing import make_bert_checkpoint
>>> from genbound.cli import main
>>> with tempfile.TemporaryDirectory() as d:
...     _ = make_bert_checkpoint(d, layers=2, heads=2, hidden=8, d_ff=16, seed=0)
...     buf = io.StringIO()
...     with contextlib.redirect_stdout(buf):
...         rc = main(["analyze", d, "--json", "--device", "cpu"])
>>> out = json.loads(buf.getvalue())
>>> rc, out["layers"], out["hidden"], out["heads"], out["matrices"]
(0, 2, 8, 2, 12)
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import dataclass

__all__ = ["Analysis", "analyze", "add_parser", "run", "fix_heap_growth"]


@dataclass(frozen=True)
class Analysis:
    """Both proxies of one checkpoint, with the weights' shape and the wall time."""

    spectral: object  # SpectralBoundReport
    edelman: object  # EdelmanProxyReport
    weights: object  # TransformerWeights
    device: str
    seconds: float

    def to_dict(self) -> dict:
        w, r, e = self.weights, self.spectral, self.edelman
        finite = math.isfinite(e.value)
        return {
            "spectral_adaptive": r.value,
            "spectral_adaptive_capacity": r.to_dict()["capacity"],
            "spectral_adaptive_trivial": r.trivial,
            "edelman": e.value if finite else None,
            "edelman_capacity": e.to_dict()["capacity"],
            "edelman_trivial": e.trivial,
            "edelman_log": e.log_value,
            "edelman_overflow": not finite,
            "layers": w.n_layers, "hidden": w.hidden, "heads": w.n_heads, "d_head": w.d_head, "d_ff": w.d_ff,
            "matrices": len(r.table), "grid_m": r.grid_m, "L_phi": r.L_phi, "rank_tol": r.rank_tol,
            "mode": r.mode, "p_opt_zero": int((r.table["p_opt"] == 0).sum()),
            "attention_scale": w.attention_scale, "device": self.device, "seconds": self.seconds,
            "source": w.source, "family": w.family,
            "routes": {k: int(v) for k, v in r.table["route"].value_counts().sort_index().items()},
        }


def analyze(source, *, device=None, attention_scale: bool = False, mode: str = "exact", L_phi: float = 1.13,
            grid_m: int | None = None, rank_tol: float = 1e-10, layers=None, progress: bool = False,
            svd_driver: str | None = None) -> Analysis:
    """Load ``source`` and evaluate :func:`~genbound.bounds.sakai_imaizumi.spectral_adaptive_bound` and
    :func:`~genbound.bounds.sakai_imaizumi.edelman_proxy` on it (one pass over the layers)."""
    from .bounds.sakai_imaizumi import edelman_proxy, spectral_adaptive_bound
    from .device import resolve_device
    from .errors import ParameterError
    from .weights import load_weights

    dev = resolve_device(device)
    t0 = time.perf_counter()
    if mode not in ("exact", "authors"):
        raise ParameterError(f"mode must be 'exact' or 'authors', got {mode!r}")
    w = load_weights(source, attention_scale=attention_scale, layers=layers)
    w.spectra(device=dev, method="core" if mode == "exact" else "dense", progress=progress, svd_driver=svd_driver)
    r = spectral_adaptive_bound(w, L_phi=L_phi, grid_m=grid_m, rank_tol=rank_tol, device=dev, mode=mode,
                                progress=progress)
    e = edelman_proxy(r.spectra, L_phi=L_phi, mode=mode)
    return Analysis(spectral=r, edelman=e, weights=w, device=str(dev), seconds=time.perf_counter() - t0)


def add_parser(sub) -> None:
    p = sub.add_parser("analyze", help="spectrum-adaptive and Edelman-style proxies of a checkpoint",
                       description="Evaluate the Sakai & Imaizumi (2026) spectrum-adaptive proxy and the "
                                   "Edelman-style proxy on a checkpoint folder (config.json + model.safetensors) "
                                   "of a BERT, RoBERTa, ELECTRA, DistilBERT or GPT-2 model, layer by layer.")
    p.add_argument("path", help="checkpoint folder (config.json + model.safetensors or pytorch_model.bin)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--csv", metavar="FILE", help="write the per-matrix table as CSV")
    p.add_argument("--plot", metavar="FILE", help="write a figure of the per-matrix contributions")
    p.add_argument("--device", default="auto", help="auto (CUDA when available), cpu or cuda (default auto)")
    p.add_argument("--attention-scale", action="store_true",
                   help="put the model's score scale (1/sqrt(d_head)) into every QK")
    p.add_argument("--mode", choices=["exact", "authors"], default="exact",
                   help="exact: thin-QR cores, sub-threshold values are zeros (default); authors: dense SVD, "
                        "threshold only at p = 0")
    p.add_argument("--L-phi", type=float, default=1.13, dest="L_phi", help="activation Lipschitz constant")
    p.add_argument("--grid-m", type=int, default=None, help="grid resolution m (default ceil(L + ln N))")
    p.add_argument("--rank-tol", type=float, default=1e-10, help="relative rank tolerance (default 1e-10)")
    p.add_argument("--layers", type=int, nargs="+", default=None, help="analyse only these layer indices")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def fix_heap_growth(threshold: int = 128 * 1024) -> bool:
    """Pin glibc's mmap threshold (``mallopt(M_MMAP_THRESHOLD, 128 KiB)``) for this process.

    glibc raises the threshold after a large block is freed, so later layer-sized temporaries come
    from the heap, which fragments and keeps several layers' worth of memory resident. The
    ``analyze`` command owns its process and pins the threshold, so every layer-sized temporary is
    mapped and unmapped on its own and the peak stays near one layer (measured in
    ``benchmarks/RESULTS.md``). The library never changes allocator settings. Returns whether the
    setting was applied (False where glibc is not available).
    """
    try:
        import ctypes
        import ctypes.util

        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(-3, int(threshold)))  # -3 = M_MMAP_THRESHOLD (malloc.h)
    except (OSError, AttributeError):
        return False


def run(args) -> int:
    fix_heap_growth()
    progress = (not args.quiet) and sys.stderr.isatty()
    a = analyze(args.path, device=args.device, attention_scale=args.attention_scale, mode=args.mode,
                L_phi=args.L_phi, grid_m=args.grid_m, rank_tol=args.rank_tol, layers=args.layers,
                progress=progress)
    if args.csv:
        a.spectral.table.to_csv(args.csv, index=False)
    if args.plot:
        plot_contributions(a.spectral, args.plot)
    if args.json:
        print(json.dumps(a.to_dict()))
        return 0
    d = a.to_dict()
    print(f"{d['source']}: {d['family']}, {d['layers']} layers, hidden {d['hidden']}, {d['heads']} heads (d_head "
          f"{d['d_head']}), d_ff {d['d_ff']}; {d['matrices']} matrices; device {d['device']}; "
          f"{d['seconds']:.2f} s")
    print("spectrum routes: " + ", ".join(f"{k} {v}" for k, v in d["routes"].items()))
    print(f"spectral-adaptive proxy (Sakai & Imaizumi): {a.spectral.value:.6g}   [p_opt = 0 for "
          f"{d['p_opt_zero']} of {d['matrices']} matrices, grid m = {d['grid_m']}, mode {d['mode']}]")
    ed = f"{a.edelman.value:.6g}" if math.isfinite(a.edelman.value) else "inf in float64"
    print(f"Edelman-style proxy: {ed}   (log = {a.edelman.log_value:.6g})")
    t = a.spectral.table
    per = t.groupby(["layer", "kind"], sort=False)["contribution"].sum().unstack("kind")[["QK", "V", "M_in", "M_out"]]
    per.insert(0, "log_alpha", a.edelman.table["log_alpha"].to_numpy())
    print("per-layer sums of min_p T(p):")
    print(per.to_string(float_format=lambda x: f"{x:.5g}"))
    return 0


def plot_contributions(report, path) -> None:
    """Bar-free figure: each matrix's ``min_p T(p)`` against its layer, one marker per kind."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .plotting import new_axes

    fig, ax = new_axes()
    t = report.table
    for kind, marker in (("QK", "o"), ("V", "s"), ("M_in", "^"), ("M_out", "v")):
        sel = t[t["kind"] == kind]
        ax.scatter(sel["layer"], sel["contribution"], marker=marker, s=14, label=kind, alpha=0.7)
    ax.set_xlabel("layer")
    ax.set_ylabel(r"$\min_p T(p)$")
    ax.set_yscale("log")
    ax.legend()
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
