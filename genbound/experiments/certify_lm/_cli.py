"""``genbound experiment certify-lm``: train character-level transformers on the complete works of
Shakespeare and certify each with the compression (Occam) bounds of Part VII.

``genbound experiment certify-lm --sizes xs,s --csv runs.csv`` trains and certifies every named size
(default: every size of the saved sweep) at the seeds ``0 .. seeds - 1`` and appends one row per model
to a results file (resumable: finished ``(size, seed)`` keys are skipped); progress goes to standard
error (``--quiet`` silences it). ``--saved`` prints the rows of the saved runs instead (no training).
Every argument is checked, the corpus read and, for an existing ``--csv``, its models' vocabulary
compared with the corpus's before anything is trained or written.
"""

from __future__ import annotations

import json
from pathlib import Path

from ...errors import InputError, ParameterError
from .config import CertifyLMConfig
from .config import SIZES, SWEEP_PLAN
from ..runtime.outputs import check_apart
from .data import corpus_files, corpus_of
from .files import read_sweep
from .sweep import run_sweep
from ...jsonsafe import json_tree
from .files import saved_rows

__all__ = ["add_certify_lm"]

#: The sizes of the saved sweep.
SWEEP_SIZES = ("xs", "s", "m", "l", "xl")


def add_certify_lm(psub) -> None:
    """Register ``experiment certify-lm``."""

    d = CertifyLMConfig()
    p = psub.add_parser(
        "certify-lm",
        help="Part VII: compression certificates of character-level transformers",
        description="Train character-level transformers on the shakespeare package's complete works, "
        "quantize them, code them and bound their bits per character and top-1 error (document- and "
        "token-level Occam bounds).",
    )
    p.add_argument("--sizes", default=",".join(SWEEP_SIZES), help="model sizes, e.g. xs,s")
    p.add_argument("--seeds", type=int, default=1, help="seeds 0 .. SEEDS - 1")
    p.add_argument(
        "--plan",
        action="store_true",
        help="run the saved sweep's (size, seed) plan (SWEEP_PLAN) instead of --sizes and --seeds",
    )
    p.add_argument(
        "--vocab",
        default=d.vocab,
        help="ascii (128 codes, fixed a priori) or corpus (read off the text)",
    )
    p.add_argument("--pilot-docs", type=int, default=d.pilot_docs, help="documents set aside")
    p.add_argument("--qat-bits", type=int, default=d.qat_bits, help="quantization-aware training")
    p.add_argument(
        "--corpus", default=d.corpus, help="a folder of .txt files (default: the package's)"
    )
    p.add_argument("--doc-len", type=int, default=d.doc_len)
    p.add_argument("--steps", type=int, default=d.steps, help="0: each size's default")
    p.add_argument(
        "--bits", default=",".join(str(b) for b in d.bits_grid), help="quantization levels"
    )
    p.add_argument(
        "--alphas", default=",".join(str(a) for a in d.alpha_grid), help="smoothing weights"
    )
    p.add_argument("--delta", type=float, default=d.delta)
    p.add_argument("--csv", default=None, help="the results file to create or resume")
    p.add_argument(
        "--saved", action="store_true", help="print the saved sweep's rows (no training)"
    )
    p.add_argument("--json", action="store_true", help="print each row as one JSON line")
    p.add_argument("--quiet", action="store_true", help="no progress on standard error")
    p.set_defaults(func=_run)


def _parse(text: str, name: str, conv) -> tuple:
    try:
        out = tuple(conv(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ParameterError(
            f"--{name} must be numbers separated by commas, got {text!r}"
        ) from None
    if not out:
        raise ParameterError(f"--{name} is empty")
    return out


def _run(args) -> int:

    if args.saved:
        for row in saved_rows():
            _report(row, args.json)
        return 0
    cfg = CertifyLMConfig(
        corpus=args.corpus,
        doc_len=args.doc_len,
        steps=args.steps,
        bits_grid=_parse(args.bits, "bits", int),
        alpha_grid=_parse(args.alphas, "alphas", float),
        delta=args.delta,
        vocab=args.vocab,
        pilot_docs=args.pilot_docs,
        qat_bits=args.qat_bits,
    ).validated()
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    bad = [s for s in sizes if s not in SIZES]
    if not sizes or bad:
        raise ParameterError(f"--sizes {args.sizes!r}: the sizes are {', '.join(SIZES)}")
    if args.seeds < 1:
        raise ParameterError(f"--seeds must be positive, got {args.seeds}")
    check_apart({"--csv": args.csv}, {"a corpus text": corpus_files(cfg.corpus)[1]})
    corpus = corpus_of(cfg)
    if args.csv and Path(args.csv).exists():
        vs = {int(r["V"]) for r in read_sweep(args.csv).rows}
        if vs and vs != {corpus.V}:
            raise InputError(
                f"vocabulary mismatch: the models in {args.csv} read {sorted(vs)} characters, the "
                f"corpus has {corpus.V}"
            )
    run_sweep(
        args.csv,
        sizes,
        range(args.seeds),
        cfg,
        quiet=args.quiet,
        on_row=lambda row: _report(row, args.json),
        corpus=corpus,
        keys=list(SWEEP_PLAN) if args.plan else None,
    )
    return 0


def _report(row: dict, as_json: bool) -> None:
    """One certified model on stdout: a JSON line or a summary."""

    if as_json:
        print(json.dumps(json_tree(dict(row))), flush=True)
        return
    print(
        f"{row['size']} seed {row['seed']} ({row['n_params']} parameters, {row['bits']} bits, alpha "
        f"{row['alpha']:g}): code {row['code_bits']:.0f} bits; train {row['train_quant_bits']:.3f} "
        f"bits/char, held-out {row['heldout_quant_bits']:.3f}; token bound "
        f"{row['token_bound_bits']:.3f}, document bound {row['doc_bound_bits']:.3f} (chance "
        f"{row['chance_bits']:.3f}); top-1 error bound {row['token_error_bound']:.3f} / "
        f"{row['doc_error_bound']:.3f}",
        flush=True,
    )
