"""What every experiment's command line shares: the ranges of the numeric options and their check
(:data:`RANGES`, :func:`check_ranges`), comma-separated lists, ``--shard I/K``, the line that says what an
interrupted run saved, and warnings on stderr.

Every numeric argument is checked against its range (:data:`RANGES`) before anything is trained or
written: sequence lengths ``s .. MAX_SEQ_LEN``, seeds ``0 .. MAX_SEED`` (at most ``MAX_SEEDS`` of them),
threads ``1 ..`` the cores present (``os.cpu_count()``), sizes and step counts up to
``MAX_EXAMPLES`` and ``MAX_STEPS``, training tokens ``n_train * T`` up to ``MAX_TOKENS``; a value
outside is one ``genbound: error:`` line naming the option, the range and the value (long lists
shown by their first items).

One concept: the arguments the experiment commands share (each experiment package's ``_cli`` module
registers its own subcommand with them).
"""

from __future__ import annotations

import sys

from ..._validate import check_int_range, max_threads, shown, shown_value
from ...errors import ParameterError

__all__ = [
    "parse_int_list",
    "parse_float_list",
    "parse_shard",
    "check_ranges",
    "saved_note",
    "warn",
    "RANGES",
    "MAX_SEQ_LEN",
    "MAX_SEED",
    "MAX_SEEDS",
    "MAX_EXAMPLES",
    "MAX_STEPS",
    "MAX_TOKENS",
    "MAX_WIDTH",
    "MAX_DEPTH",
]

#: The longest sequence length T (the saved sweep goes to 1024; memory and time grow with T).
MAX_SEQ_LEN = 8192

#: The largest seed (torch and numpy seeds are 32-bit) and the most seeds one command trains.
MAX_SEED = 2**31 - 1

MAX_SEEDS = 10_000

#: The most examples in a training, validation or test set, and the most optimiser steps or epochs.
MAX_EXAMPLES = 1_000_000

MAX_STEPS = 10_000_000

#: The most training tokens (``n_train * T``) of one full-batch sparse-majority stack (memory: each
#: token carries a few floats per head; the saved sweep's largest is 300 * 1024).
MAX_TOKENS = 2**27

#: The widest and deepest network of the Part V family, and the most bootstrap or null resamples.
MAX_WIDTH = 4096

MAX_DEPTH = 64

MAX_RESAMPLES = 1_000_000

#: ``option -> (lowest, highest, where the limit comes from)`` of every integer option of the
#: ``experiment`` commands (``None`` as highest: the cores present, ``os.cpu_count()``).
RANGES = {
    "--seq-lens": (1, MAX_SEQ_LEN, "MAX_SEQ_LEN"),
    "--s": (1, MAX_SEQ_LEN, "at most MAX_SEQ_LEN"),
    "--seeds": (1, MAX_SEEDS, "MAX_SEEDS"),
    "--first-seed": (0, MAX_SEED, "32-bit seeds"),
    "--verify-seed": (0, MAX_SEED, "32-bit seeds"),
    "--threads": (1, None, "the cores present"),
    "--n-train": (1, MAX_EXAMPLES, "MAX_EXAMPLES"),
    "--n-val": (1, MAX_EXAMPLES, "MAX_EXAMPLES"),
    "--n-test": (1, MAX_EXAMPLES, "MAX_EXAMPLES"),
    "--steps": (1, MAX_STEPS, "MAX_STEPS"),
    "--warmup": (0, MAX_STEPS, "MAX_STEPS"),
    "--max-epochs": (1, MAX_STEPS, "MAX_STEPS"),
    "--eval-every": (1, MAX_STEPS, "MAX_STEPS"),
    "--boot": (1, MAX_RESAMPLES, "MAX_RESAMPLES"),
    "--nulls": (1, MAX_RESAMPLES, "MAX_RESAMPLES"),
    "--depths": (1, MAX_DEPTH, "MAX_DEPTH"),
    "--widths": (1, MAX_WIDTH, "MAX_WIDTH"),
    "--batches": (0, MAX_EXAMPLES, "MAX_EXAMPLES; 0 is full batch"),
    "--n-train-sm": (1, MAX_EXAMPLES, "MAX_EXAMPLES"),
    "--n-train-digits": (1, MAX_EXAMPLES, "MAX_EXAMPLES"),
    "--post-steps": (1, MAX_STEPS, "MAX_STEPS"),
    "--draws": (1, MAX_EXAMPLES, "MAX_EXAMPLES"),
    "--test-draws": (1, MAX_EXAMPLES, "MAX_EXAMPLES"),
    "--n-train-certify": (0, MAX_EXAMPLES, "MAX_EXAMPLES; 0 is the row's"),
}


def check_ranges(values: dict) -> None:
    """Check ``{option: value or list of values}`` against :data:`RANGES` (``None`` values skipped);
    raises :class:`~genbound.errors.ParameterError` naming the option, its range and the value."""
    for option, value in values.items():
        if value is None:
            continue
        lo, hi, why = RANGES[option]
        if hi is None:
            hi, why = max_threads(), "the cores present, os.cpu_count()"
        name = option.replace("-certify", "")
        for v in value if isinstance(value, (list, tuple)) else [value]:
            check_int_range(v, name, lo, hi, why=why)


def _parse_list(text: str, name: str, conv, kind: str) -> list:
    items = [t for t in str(text).split(",") if t.strip()]
    try:
        out = [conv(t) for t in items]
    except ValueError:
        bad = next(t for t in items if not _converts(conv, t))
        raise ParameterError(
            f"{name} must be a comma-separated list of {kind}, got {shown(items) if len(items) > 5 else shown_value(str(text))} "
            f"({shown_value(bad.strip())} is not one)"
        ) from None
    if not out:
        raise ParameterError(f"{name} is empty")
    return out


def _converts(conv, text: str) -> bool:
    try:
        conv(text)
    except ValueError:
        return False
    return True


def parse_int_list(text: str, name: str) -> list[int]:
    """``"16,32,64"`` -> ``[16, 32, 64]``; raises :class:`~genbound.errors.ParameterError` on bad input.

    >>> parse_int_list("16, 64", "--seq-lens")
    [16, 64]
    """
    return _parse_list(text, name, int, "integers")


def parse_float_list(text: str, name: str) -> list[float]:
    """``"1e-3,3e-3"`` -> ``[0.001, 0.003]``; raises :class:`~genbound.errors.ParameterError` on bad input.

    >>> parse_float_list("0, 0.1", "--weight-decays")
    [0.0, 0.1]
    """
    return _parse_list(text, name, float, "numbers")


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/K"`` -> ``(I, K)`` with ``0 <= I < K``."""
    try:
        i, k = (int(v) for v in text.split("/"))
    except ValueError:
        raise ParameterError(f"--shard must be I/K (two integers), got {text!r}") from None
    if not (k >= 1 and 0 <= i < k):
        raise ParameterError(f"--shard I/K needs 0 <= I < K, got {text!r}")
    return i, k


def saved_note(csv, writer, n_before, what: str) -> str:
    """What an interrupted training command saved and how to resume it (one line)."""
    if csv is None:
        return f"nothing saved (no --csv); the {what} printed above are all there is"
    if writer is not None:
        new = len(writer.done) - n_before
        return (
            f"{new} finished {what} appended to {csv} in this run ({len(writer.done)} in the file); "
            f"the unfinished ones are not in it; rerun the same command to resume"
        )
    return (
        f"every finished stack of {what} is in {csv}, the unfinished one is not; rerun the same command "
        f"to resume"
    )


def warn(msg: str) -> None:
    print(f"genbound: warning: {msg}", file=sys.stderr, flush=True)
