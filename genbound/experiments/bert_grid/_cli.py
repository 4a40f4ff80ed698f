"""``genbound experiment bert-grid train|extract``: train the BERT grid of Part III and store its spectra.

``train --work W`` trains every ``(L, N, seed)`` model not yet saved under ``W`` (resumable; with
``--budget-s`` it starts no model that would end after that many seconds and exits with status 3 while
models are left); ``extract --work W`` writes the spectra file from the trained models (default: the
package's saved file). ``python -m genbound.experiments.bert_grid train|extract ...`` is the same parser
(:func:`add_arguments`) under another name. Every numeric argument is checked against the shared ranges
(:mod:`genbound.experiments.runtime.cli`) before anything is trained or written.
"""

from __future__ import annotations

import platform
import sys
import time

import torch

from ..._validate import check_int_range
from ...errors import ParameterError
from ..runtime.cli import MAX_SEED, check_ranges
from .config import DEPTHS, WIDTHS, GridConfig
from .files import DEFAULT_SPECTRA_FILE, expected_seconds, save_spectra
from .train import train_grid

__all__ = ["add_bert_grid", "add_arguments", "run", "EXIT_MODELS_LEFT"]

#: Exit status of ``train`` when models are left (the budget ran out, or a retry is due): run it again.
EXIT_MODELS_LEFT = 3


def add_bert_grid(psub) -> None:
    """Register ``experiment bert-grid`` with its two subcommands."""
    p = psub.add_parser(
        "bert-grid",
        help="Part III: train the grid of small BERT models and store their spectra",
        description="Train the BERT grid of Part III and store its spectra.",
    )
    add_arguments(p)


def add_arguments(parser) -> None:
    """Add the ``train`` and ``extract`` subcommands to ``parser`` and set its handler (:func:`run`)."""
    sub = parser.add_subparsers(dest="cmd", required=True, metavar="{train,extract}")
    t = sub.add_parser("train", help="train every grid point not yet saved under --work")
    t.add_argument("--work", required=True)
    t.add_argument("--steps", type=int, default=GridConfig.steps)
    t.add_argument("--seed", type=int, default=GridConfig.seed)
    t.add_argument(
        "--seeds", type=int, nargs="+", default=None, help="seeds to train (default: --seed alone)"
    )
    t.add_argument(
        "--budget-s",
        type=float,
        default=None,
        help="start no model that would end after this many seconds (expected time: 1.3 x the "
        "stored file's time for that cell); exit status 3 when models are left",
    )
    t.add_argument("--threads", type=int, default=1)
    e = sub.add_parser("extract", help="write the spectra file from the trained models")
    e.add_argument("--work", required=True)
    e.add_argument("--out", default=str(DEFAULT_SPECTRA_FILE))
    e.add_argument("--seeds", type=int, nargs="+", default=[0])
    e.add_argument(
        "--merge",
        nargs="*",
        default=[],
        help="earlier spectra files: models not under --work are carried over from them",
    )
    e.add_argument(
        "--reuse",
        action="store_true",
        help="take every row a merged file has from it instead of recomputing it",
    )
    e.add_argument(
        "--skip-missing",
        action="store_true",
        help="leave out (cell, seed) models that are neither trained nor merged",
    )
    for p in (t, e):
        p.add_argument("--depths", type=int, nargs="+", default=list(DEPTHS))
        p.add_argument("--widths", type=int, nargs="+", default=list(WIDTHS))
    parser.set_defaults(func=run)


def check_args(args) -> None:
    """Every numeric argument in its range (:data:`~genbound.experiments.runtime.cli.RANGES`), the seeds
    32-bit, the widths multiples of the head width, a positive budget; a
    :class:`~genbound.errors.ParameterError` naming the option otherwise."""
    check_ranges({"--depths": args.depths, "--widths": args.widths})
    head_dim = GridConfig.head_dim
    bad = [w for w in args.widths if w % head_dim]
    if bad:
        raise ParameterError(
            f"--widths must be multiples of the head width {head_dim}, got {bad[0]}"
        )
    for name in ("seed", "seeds"):
        value = getattr(args, name, None)
        for v in [] if value is None else value if isinstance(value, list) else [value]:
            check_int_range(v, f"--{name}", 0, MAX_SEED, why="32-bit seeds")
    if args.cmd == "train":
        check_ranges({"--steps": args.steps, "--threads": args.threads})
        if args.budget_s is not None and not args.budget_s > 0:
            raise ParameterError(
                f"--budget-s must be a positive number of seconds, got {args.budget_s}"
            )


def _log(msg) -> None:
    print(time.strftime("%H:%M:%S"), msg, flush=True)


def run(args) -> int:
    """Run ``train`` or ``extract``; the exit status (``train``: :data:`EXIT_MODELS_LEFT` while models
    are left)."""
    check_args(args)
    if args.cmd == "train":
        torch.set_num_threads(args.threads)
        cfg = GridConfig(steps=args.steps, seed=args.seed)
        _log(
            f"python {sys.version.split()[0]}, torch {torch.__version__}, {platform.machine()}, "
            f"{torch.get_num_threads()} thread(s)"
        )
        done = train_grid(
            args.work,
            depths=args.depths,
            widths=args.widths,
            cfg=cfg,
            seeds=args.seeds,
            budget_s=args.budget_s,
            expected_s=expected_seconds(),
            log=_log,
        )
        return 0 if done else EXIT_MODELS_LEFT
    save_spectra(
        args.work,
        args.out,
        depths=args.depths,
        widths=args.widths,
        seeds=args.seeds,
        merge=args.merge,
        reuse=args.reuse,
        skip_missing=args.skip_missing,
        log=_log,
    )
    return 0
