"""``genbound analyze``: both Part III proxies for a checkpoint folder, from the command line.

Book: :ref:`ch-sakai-trained`. ``genbound analyze PATH`` loads a checkpoint folder (``config.json`` +
``model.safetensors``, a sharded ``model.safetensors.index.json`` or ``pytorch_model.bin``) of a
supported family (``genbound.weights.families``) layer by layer, and prints the spectrum-adaptive
proxy of Sakai & Imaizumi (2026) and their Edelman-style proxy (:func:`genbound.analysis.api.analyze`),
or, for a model the bound does not cover, its spectra only. ``--json`` prints the object of
:data:`~genbound.analysis.report.JSON_FIELDS`, ``--csv`` writes the per-matrix rows, ``--plot`` the
figure (:mod:`genbound.analysis.figures`), ``--compare B`` compares two checkpoints matrix by matrix
(:mod:`genbound.analysis.compare`).

Every bad file, config or option ends in one line ``genbound: error: ...`` on stderr and exit code 2
(``genbound.weights.files``), before any spectrum is computed and before anything is written:
``--csv`` and ``--plot`` paths (existing folder, known figure format) and ``--layers`` (each layer
once, all in range) are checked first; a ``config.json`` whose ``model_type`` disagrees with the
tensor names is refused (``genbound.weights.loading.check_model_type``); so is standard output
redirected into a file of the checkpoint (``> model.safetensors``, ``>> config.json``) or into ``--csv``'s.
A progress bar over layers goes to stderr when stderr is a terminal (``--quiet`` turns it off).
``--verbose`` adds the implementation's details to the console (device, time, spectrum routes, grid,
mode); ``--threads N`` sets torch's CPU threads for the run (default: torch's own choice).

One concept: the ``genbound analyze`` subcommand (its options, the checks of its options and output
paths before any work, and which report it prints or writes).

>>> import tempfile, json, io, contextlib
>>> from genbound.testing import make_bert_checkpoint
>>> from genbound.cli import main
>>> with tempfile.TemporaryDirectory() as d:
...     _ = make_bert_checkpoint(d, layers=2, heads=2, hidden=8, d_ff=16, seed=0)
...     buf = io.StringIO()
...     with contextlib.redirect_stdout(buf):
...         rc = main(["analyze", d, "--json", "--device", "cpu"])
>>> out = json.loads(buf.getvalue())
>>> rc, out["layers"], out["hidden"], out["heads"], out["n_matrices"], len(out["matrices"])
(0, 2, 8, 2, 12, 12)
>>> sorted(out["matrices"][0])
['contribution', 'frobenius', 'head', 'kind', 'layer', 'log_scale', 'p_opt', 'proved_p', 'rank', 'shape', 'sigma_max', 'spectral_level', 'stable_rank', 'union_cost']
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import textwrap
from pathlib import Path

from ..errors import GenboundError, ParameterError, require
from ..experiments.runtime.outputs import check_apart, files_in, standard_output
from ..experiments.runtime.results import results_file_kind
from .api import analyze
from .compare import compare_checkpoints, comparison_dict, comparison_report
from .esd import check_svals_path, write_svals
from .esd_alpha import check_esd_alpha_path, write_esd_alpha
from .figures import check_plot_format, write_plot
from .report import JSON_FIELDS, KINDS, MATRIX_FIELDS, console_report, spectra_only_report

__all__ = ["add_parser", "run", "check_outputs", "fix_heap_growth", "set_threads", "MAX_GRID_M"]

#: The largest grid resolution ``--grid-m`` (the default, ``ceil(L + ln N)``, is a few tens).
MAX_GRID_M = 1000


# ---------------------------------------------------------------------------------------------- options
def _fill(text: str) -> str:
    return textwrap.fill(text, 78, break_on_hyphens=False)


def _description() -> str:
    """What ``genbound analyze --help`` says first: what it evaluates, and the four kinds of matrix."""
    return (
        _fill(
            "Evaluate the Sakai & Imaizumi (2026) spectrum-adaptive proxy and the Edelman-style "
            "proxy on a checkpoint folder (config.json + model.safetensors) of a family the "
            "papers' bound covers (BERT, RoBERTa, ELECTRA, DistilBERT, GPT-2, OPT, ViT), layer by "
            "layer. For a family it does not cover (Llama, Mistral, Qwen, Gemma, Phi-3, Mixtral, "
            "GPT-NeoX, Falcon, GPT-J, BLOOM, DeBERTa-v2) the report is labelled SPECTRA ONLY, NO BOUND: why, per "
            "matrix kind, then every matrix's spectra. --compare B: two checkpoints of one "
            "architecture, matrix by matrix."
        )
        + "\n\n"
        + _fill("The proxies sum over products of weights, not over raw weights. Per layer:")
        + "\n"
        + "\n".join(f"  {k:6s} {v}" for k, v in KINDS.items())
    )


def _epilog() -> str:
    """The end of ``genbound analyze --help``: the JSON keys and the per-matrix columns."""
    return (
        _fill("--json keys: " + ", ".join(JSON_FIELDS) + ".")
        + "\n"
        + _fill(
            "Per-matrix rows (JSON 'matrices', --csv columns): "
            + ", ".join(MATRIX_FIELDS)
            + " (CSV: shape as rows, cols). Descriptions: genbound.analysis.JSON_FIELDS."
        )
    )


def _add_output_options(p) -> None:
    """``--json``, ``--csv``, ``--plot``: what the command prints or writes."""
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (totals, and 'matrices': one row per QK/V/M_in/M_out matrix)",
    )
    p.add_argument(
        "--csv",
        metavar="FILE",
        help="write the per-matrix table (kind, layer, head, rows, cols, rank, "
        "sigma_max, frobenius, stable_rank, p_opt, contribution) as CSV",
    )
    p.add_argument(
        "--plot",
        metavar="FILE",
        help="write a figure titled with the model, family and verdict: per matrix kind, a "
        "per-layer panel (each matrix's proxy term, or sigma_max for a spectra-only family) and "
        "the empirical spectral density, log-log (format from the extension: png, pdf, svg, ...)",
    )
    p.add_argument(
        "--svals",
        metavar="FILE.npz",
        help="write every matrix's singular values (descending, float64) to a numpy .npz archive, "
        "one array per matrix named like L0.H3.QK, L0.M_in, L1.E2.M_gate, for fitting your own "
        "spectral densities (numpy.load(FILE))",
    )
    p.add_argument(
        "--esd-alpha",
        metavar="FILE.csv",
        help="write each matrix's power-law fit of its empirical spectral density (the alpha of "
        "WeightWatcher: Clauset-Shalizi-Newman maximum likelihood, xmin by Kolmogorov-Smirnov), "
        "one row per matrix: an empirical diagnostic, not a bound, used by no bound",
    )
    p.add_argument(
        "--extras",
        action="store_true",
        help="add the token and position embeddings and the LM head or classifier (where the "
        "checkpoint has them) to the rows of --csv, --json ('extra_matrices') and the console, "
        "as spectra only with layer -1: not in any bound, the papers' bounds cover the blocks "
        "only; the bounds do not change",
    )


def _add_bound_options(p) -> None:
    """The options of the computation: device, attention scale, mode, ``L_phi``, grid, rank, layers."""
    p.add_argument(
        "--device", default="auto", help="auto (CUDA when available), cpu or cuda (default auto)"
    )
    p.add_argument(
        "--attention-scale",
        action="store_true",
        help="put the model's score scale (1/sqrt(d_head)) into every QK = W_Q W_K^T",
    )
    p.add_argument(
        "--mode",
        choices=["exact", "authors"],
        default="exact",
        help="exact: thin-QR cores, sub-threshold values are zeros (default); authors: dense SVD, "
        "threshold only at p = 0",
    )
    p.add_argument(
        "--L-phi", type=float, default=1.13, dest="L_phi", help="activation Lipschitz constant"
    )
    p.add_argument(
        "--grid-m",
        type=int,
        default=None,
        help="grid resolution m, 1 .. 1000 (default ceil(L + ln N))",
    )
    p.add_argument(
        "--rank-tol", type=float, default=1e-10, help="relative rank tolerance (default 1e-10)"
    )
    p.add_argument(
        "--layers",
        type=int,
        nargs="+",
        default=None,
        help="analyse only these layer indices (0-based, each once; treated as the whole network)",
    )


def _add_report_options(p) -> None:
    """``--top``, ``--n-samples``, ``--compare``, ``--quiet``, ``--overwrite``."""
    p.add_argument(
        "--top",
        type=int,
        default=5,
        help="matrices with the largest contributions shown (default 5)",
    )
    p.add_argument(
        "--n-samples",
        type=int,
        default=None,
        dest="n_samples",
        metavar="N",
        help="training-set size: report each estimate of the gap at N (capacity / sqrt(N)), "
        "whether it is vacuous there, and the sample size from which it would not be",
    )
    p.add_argument(
        "--delta",
        type=float,
        default=0.05,
        help="confidence of the proved bound is 1 - delta (default 0.05)",
    )
    p.add_argument(
        "--margin",
        type=float,
        default=1.0,
        help="margin gamma of the ramp loss of the proved bound (default 1)",
    )
    p.add_argument(
        "--input-radius",
        type=float,
        default=1.0,
        dest="input_radius",
        help="B_X: the largest norm of an input token row, a premise of the proved bound (default 1)",
    )
    p.add_argument(
        "--seq-len",
        type=int,
        default=None,
        dest="seq_len",
        metavar="T",
        help="the longest input sequence; with it the proved bound may use Schatten indices p > 0 "
        "(without it only p = 0, and the bound is free of T)",
    )
    p.add_argument(
        "--compare",
        metavar="B",
        default=None,
        help="a second checkpoint of the same architecture (for example the fine-tuned model of "
        "a base PATH): what moved first (a per-layer summary, then each changed matrix's "
        "sigma_max, frobenius, stable_rank, rank and, where a bound exists, contribution in PATH "
        "and B with their ratio B / PATH, largest change first), and the bounds side by side",
    )
    p.add_argument(
        "--all",
        action="store_true",
        dest="show_all",
        help="with --compare: list every matrix and every layer's summary, the unchanged ones too "
        "(by default they are counted)",
    )
    p.add_argument(
        "--no-hash",
        action="store_true",
        dest="no_hash",
        help="do not compute the SHA-256 of the checkpoint's files (--json 'checkpoint' then lists "
        "the files read and their sizes only); hashing streams each file once more, about 0.1 s "
        "per 100 MB from the page cache",
    )
    p.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar (shown only when stderr is a terminal)",
    )
    p.add_argument(
        "--verbose",
        action="store_true",
        help="add the implementation's details to the console report: device and wall time, "
        "matrices per spectrum route (gram, qr-core, qr-svd, ...), the proxy's grid m and mode",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="torch CPU threads for this run, 1 .. the cores present (default: torch's own, "
        "OMP_NUM_THREADS when set, else one per physical core; on a shared machine pass a few)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="let --csv or --plot replace a file that is a genbound results file of an experiment "
        "(refused without it, so that a trained sweep is not lost to a typo)",
    )


def add_parser(sub) -> None:
    """Register ``genbound analyze`` with the subparsers ``sub`` of ``genbound.cli.build_parser``."""
    p = sub.add_parser(
        "analyze",
        help="spectrum-adaptive and Edelman-style proxies of a checkpoint",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=_description(),
        epilog=_epilog(),
    )
    p.add_argument(
        "path", help="checkpoint folder (config.json + model.safetensors or pytorch_model.bin)"
    )
    _add_output_options(p)
    _add_bound_options(p)
    _add_report_options(p)
    p.set_defaults(func=run)


# ---------------------------------------------------------------------------------------------- checks
def _check_path(path, option: str) -> None:
    """Refuse an output path that is a folder, or whose folder is missing or not writable."""
    f = Path(path)
    if f.is_dir():
        raise ParameterError(f"{option} {path}: is a folder; expected a file name")
    parent = f.parent if str(f.parent) else Path(".")
    if not parent.is_dir():
        raise ParameterError(f"{option} {path}: folder {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK):
        raise ParameterError(f"{option} {path}: folder {str(parent)!r} is not writable")


def check_outputs(
    csv=None, plot=None, *, overwrite: bool = False, svals=None, esd_alpha=None
) -> None:
    """Refuse output paths that could not be written, before any work: ``csv``/``plot``/``svals``
    must name a file in an existing, writable folder, must not be a genbound results file of an
    experiment (unless ``overwrite``), ``plot`` must end in a format matplotlib writes (``.png``,
    ``.pdf``, ``.svg``, ...) and ``svals`` in ``.npz``. Raises
    :class:`~genbound.errors.ParameterError` naming the option."""
    for option, path in (
        ("--csv", csv),
        ("--plot", plot),
        ("--svals", svals),
        ("--esd-alpha", esd_alpha),
    ):
        if path is None:
            continue
        _check_path(path, option)
        kind = results_file_kind(path)
        if kind is not None and not overwrite:
            raise ParameterError(
                f"{option} {path}: is a genbound results file of experiment {kind!r}; writing "
                f"the analysis there would replace its rows; choose another file, or pass "
                f"--overwrite to replace it"
            )
    if plot is not None:
        check_plot_format(plot)
    if svals is not None:
        check_svals_path(svals)
    if esd_alpha is not None:
        check_esd_alpha_path(esd_alpha)


#: The names of the files a checkpoint folder is read from (config, index, weights, the cache's ref).
CHECKPOINT_FILES = (
    "*.json",
    "*.safetensors",
    "*.bin",
    "*.pt",
    "*.pth",
    "*.ckpt",
    "*.msgpack",
    "*.h5",
)


def checkpoint_inputs(path) -> list[Path]:
    """The paths genbound reads of the checkpoint folder ``path``: the folder, the files of
    :data:`CHECKPOINT_FILES` in it and, for a Hugging Face cache folder, in the snapshot it names (each
    resolved through its symlink into ``blobs/``), and the cache's ``refs/main``."""
    from ..weights.loading import hf_snapshot  # keeps torch out of ``genbound analyze --help``

    folder = Path(path)
    out = [folder, folder / "refs" / "main"] + files_in(folder, CHECKPOINT_FILES)
    try:
        snap = hf_snapshot(folder) if folder.is_dir() else folder
    except GenboundError:
        snap = folder
    if snap != folder:
        out += [snap] + files_in(snap, CHECKPOINT_FILES)
    return out


def check_outputs_apart(args) -> None:
    """Refuse ``--csv``, ``--plot``, ``--svals`` or standard output redirected to a file (``> FILE``,
    ``>> FILE``) naming a file of the checkpoint (or of ``--compare``'s), or two of them one file, before
    anything is read or written."""
    inputs = {"a file of the checkpoint PATH": checkpoint_inputs(args.path)}
    if getattr(args, "compare", None) is not None:
        inputs["a file of the checkpoint --compare B"] = checkpoint_inputs(args.compare)
    outputs = {"--csv": args.csv, "--plot": args.plot, "--svals": getattr(args, "svals", None)}
    outputs["--esd-alpha"] = getattr(args, "esd_alpha", None)
    outputs["standard output"] = standard_output()
    check_apart(outputs, inputs)


def _check_numbers(args) -> None:
    """Refuse ``--top``, ``--n-samples``, ``--grid-m``, ``--threads`` and ``--rank-tol`` out of range."""
    if args.top < 0:
        raise ParameterError(f"--top must be >= 0, got {args.top}")
    if args.n_samples is not None and args.n_samples < 1:
        raise ParameterError(f"--n-samples must be >= 1, got {args.n_samples}")
    if not 0.0 < args.delta < 1.0:  # NaN fails this too
        raise ParameterError(f"--delta must lie in (0, 1), got {args.delta}")
    for name in ("margin", "input_radius"):
        v = getattr(args, name)
        if not (v > 0.0 and math.isfinite(v)):
            raise ParameterError(
                f"--{name.replace('_', '-')} must be a positive finite number, got {v}"
            )
    if getattr(args, "show_all", False) and getattr(args, "compare", None) is None:
        raise ParameterError("--all lists the unchanged matrices of --compare; pass --compare B")
    if args.seq_len is not None and args.seq_len < 1:
        raise ParameterError(f"--seq-len must be >= 1, got {args.seq_len}")
    if args.grid_m is not None:
        from .._validate import check_int_range  # keeps torch out of ``genbound analyze --help``

        check_int_range(args.grid_m, "--grid-m", 1, MAX_GRID_M, why="MAX_GRID_M")
    if getattr(args, "threads", None) is not None:
        from .._validate import check_int_range, max_threads  # as above

        check_int_range(args.threads, "--threads", 1, max_threads(), why="the cores present")
    if not 0.0 <= args.rank_tol < 1.0:  # NaN fails this too
        raise ParameterError(
            f"--rank-tol must lie in [0, 1) (relative to sigma_max), got {args.rank_tol}"
        )


def _check_plot(args) -> None:
    """Refuse ``--plot`` or ``--svals`` with ``--compare``, before any spectrum (each model's figure
    and singular values are its own analysis's)."""
    for option in ("plot", "svals", "esd_alpha"):
        if getattr(args, option, None) and getattr(args, "compare", None) is not None:
            flag = "--" + option.replace("_", "-")
            raise ParameterError(
                f"{flag} and --compare together: write each model's {flag} file on its own "
                f"(genbound analyze PATH {flag} FILE)"
            )


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


def set_threads(n) -> None:
    """``--threads N``: torch's intra-op CPU threads for this run (``None``: torch's own default)."""
    if n is not None:
        import torch

        torch.set_num_threads(int(n))


# ---------------------------------------------------------------------------------------------- run
def _analyze_kwargs(args) -> dict:
    """The keywords of :func:`~genbound.analysis.api.analyze` that the options give."""
    return dict(
        device=args.device,
        attention_scale=args.attention_scale,
        mode=args.mode,
        L_phi=args.L_phi,
        grid_m=args.grid_m,
        rank_tol=args.rank_tol,
        layers=args.layers,
        progress=(not args.quiet) and sys.stderr.isatty(),
        n_samples=args.n_samples,
        delta=args.delta,
        margin=args.margin,
        input_radius=args.input_radius,
        seq_len=args.seq_len,
        digest=not getattr(args, "no_hash", False),
    )


def _run_compare(args, kwargs: dict) -> int:
    """``genbound analyze A --compare B``: the comparison's CSV, then its JSON or its text."""
    a, b, table = compare_checkpoints(args.path, args.compare, **kwargs)
    if args.csv:
        table.to_csv(args.csv, index=False)
    d = comparison_dict(a, b, table, path_a=str(args.path), path_b=str(args.compare))
    show_all = getattr(args, "show_all", False)
    print(json.dumps(d) if args.json else comparison_report(d, table, show_all=show_all))
    return 0


def _extra_rows(a, args):
    """The ``--extras`` rows (:func:`genbound.weights.extras.extra_table`) of analysis ``a``."""
    from ..weights.extras import extra_table  # here: keeps torch out of --help

    return extra_table(a.weights, device=args.device, rank_tol=args.rank_tol)


def _extra_json(extras) -> list[dict]:
    keys = ("rank", "sigma_max", "frobenius", "stable_rank", "norm_21", "route", "covered", "note")
    rows = []
    for r in extras.to_dict("records"):
        head = {"kind": r["kind"], "layer": int(r["layer"]), "shape": [r["rows"], r["cols"]]}
        rows.append(head | {k: r[k] for k in keys})
    return rows


def _extra_lines(a, extras) -> str:
    """The console's ``--extras`` section: one line per matrix, and that no bound covers them."""
    from ..weights.extras import EXTRA_NOTE  # here: keeps torch out of --help

    if not len(extras):
        return (
            f"--extras: this {a.weights.family} checkpoint holds no embedding or head matrix "
            f"that genbound names"
        )
    lines = [f"embeddings and head (--extras, layer -1; spectra only, {EXTRA_NOTE}):"]
    for r in extras.to_dict("records"):
        shape = f"{r['rows']} x {r['cols']}"
        lines.append(
            f"  {r['kind']:<16} {shape:>14}  sigma_max {r['sigma_max']:.4g}  "
            f"stable_rank {r['stable_rank']:.4g}  rank {r['rank']}"
        )
        if "tied" in r["note"]:
            lines.append("    " + r["note"].split("; ", 1)[1])
    return "\n".join(lines)


def _run_one(args, kwargs: dict) -> int:
    """``genbound analyze PATH``: the per-matrix CSV and the figure, then the JSON or the text."""
    a = analyze(args.path, **kwargs)
    table = a.matrices()
    extras = _extra_rows(a, args) if getattr(args, "extras", False) else None
    if args.csv and extras is not None:
        from ..weights.extras import with_extras  # here: keeps torch out of --help

        with_extras(table, extras).to_csv(args.csv, index=False)
    elif args.csv:
        table.to_csv(args.csv, index=False)
    if getattr(args, "svals", None):
        write_svals(a, args.svals)
    if getattr(args, "esd_alpha", None):
        write_esd_alpha(a, args.esd_alpha)
    if args.plot:
        write_plot(a, args.plot)
    d = a.to_dict()
    if extras is not None:
        d["extra_matrices"] = _extra_json(extras)
    if args.json:
        print(json.dumps(d))
        return 0
    verbose = getattr(args, "verbose", False)
    if a.spectra_only:
        text = spectra_only_report(a, d, table, verbose=verbose)
    else:
        text = console_report(a, d, table, top=args.top, verbose=verbose)
    print(text if extras is None else text + "\n" + _extra_lines(a, extras))
    return 0


def run(args) -> int:
    """The handler of ``genbound analyze``: every option and output path checked, then one report."""
    require("torch", "genbound analyze")
    check_outputs(
        csv=args.csv,
        plot=args.plot,
        overwrite=getattr(args, "overwrite", False),
        svals=getattr(args, "svals", None),
        esd_alpha=getattr(args, "esd_alpha", None),
    )
    check_outputs_apart(args)
    _check_numbers(args)
    fix_heap_growth()
    _check_plot(args)
    set_threads(getattr(args, "threads", None))
    kwargs = _analyze_kwargs(args)
    if getattr(args, "compare", None) is not None:
        if getattr(args, "extras", False):
            raise ParameterError("--extras is for one checkpoint; leave it out with --compare")
        return _run_compare(args, kwargs)
    return _run_one(args, kwargs)
