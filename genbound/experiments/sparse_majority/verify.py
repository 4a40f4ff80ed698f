"""Reproducing saved rows: rerun runs of a sweep's results file with its recorded configuration and
compare every column (part of :mod:`genbound.experiments.sparse_majority`).

Every run of a sweep is trained alone (:func:`~genbound.experiments.sparse_majority.run_sweep`), so a
row is a function of ``(seq_len, seed)`` and the configuration in the file's header. On a CPU with one
torch thread and the recorded torch version, a rerun reproduces **every column but** ``seconds`` (the
wall time) **exactly**: fit step, steps, accuracies, losses, norms (``norms_json``), bounds and ``m*``
(floats are compared bit for bit, as written with ``repr``). With other threads, another torch build or
a GPU, the float32 training trajectory can differ in the last bits, and Adam's nearly sign-like early
steps can amplify that into another fit step; :func:`verify_rows` then reports the columns that differ.

Which case a check is in is decided from the file's recorded environment, not from its outcome
(:func:`reproduction_case`): on the recorded machine kind (CPU model, kernel-selecting CPU flags,
torch's CPU capability, torch build and its BLAS, kernel environment variables, threads, device) every
compared column is expected to agree exactly; anywhere else a rerun is another draw of the same
experiment, and :meth:`RowCheck.sizes` says how far it is from the saved row. A file that does not
record the CPU kind (written before genbound recorded it) is never taken for the same kind. A commit
other than the one that produced a column is named too (it is what the check tests, not a reason to
expect a difference).

>>> parse_row_keys("64:3, 16:1")
[(64, 3), (16, 1)]
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, fields
from typing import Callable, Sequence

from ...errors import ParameterError
from ..runtime.machine import _show as show
from ..runtime.machine import commit_mismatches, environment, same_machine_kind

__all__ = [
    "NOT_COMPARED",
    "RowCheck",
    "ReproductionCase",
    "reproduction_case",
    "parse_row_keys",
    "pick_rows",
    "config_of",
    "verify_rows",
    "compare_draws",
]

#: Columns a rerun is not expected to reproduce: the wall time.
NOT_COMPARED = ("seconds",)


@dataclass(frozen=True)
class RowCheck:
    """One saved row against its rerun: ``key`` ``(seq_len, seed)``, ``compared`` (column names),
    ``differences`` (``column -> (saved, rerun)`` for the columns that differ), ``seconds`` (the
    rerun's wall time), ``saved_seconds`` and ``rerun`` (the rerun's record, the file's columns)."""

    key: tuple[int, int]
    compared: tuple[str, ...]
    differences: dict
    seconds: float
    saved_seconds: float
    rerun: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def exact(self) -> bool:
        """Every compared column is equal."""
        return not self.differences

    def sizes(self) -> dict:
        """``column -> size`` of every difference, as text: ``rerun - saved`` for integers, that and
        the relative difference for floats, the largest relative difference over the norms for
        ``norms_json``, ``saved -> rerun`` otherwise."""
        return {c: _size(a, b) for c, (a, b) in self.differences.items()}

    def to_dict(self) -> dict:
        """A JSON-ready dict."""
        return {
            "seq_len": self.key[0],
            "seed": self.key[1],
            "exact": self.exact,
            "n_compared": len(self.compared),
            "differences": {k: [_plain(a), _plain(b)] for k, (a, b) in self.differences.items()},
            "sizes": self.sizes(),
            "seconds": self.seconds,
            "saved_seconds": self.saved_seconds,
        }


def _leaves(obj):
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _leaves(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _leaves(v)
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield float(obj)


def _rel(a: float, b: float) -> float:
    return abs(b - a) / max(abs(a), abs(b)) if (a or b) else 0.0


def _size(a, b) -> str:
    """The size of a difference between a saved value ``a`` and a rerun's ``b``.

    >>> _size(795, 758), _size(0.9915, 0.9899), _size(True, False)
    ('-37', '-0.0016 (relative 1.6e-03)', 'True -> False')
    >>> _size('{"w": [1.0, 2.0]}', '{"w": [1.0, 2.002]}')
    'largest relative difference 1.0e-03 over 2 norms'
    """
    if isinstance(a, bool) or isinstance(b, bool):
        return f"{a} -> {b}"
    if isinstance(a, int) and isinstance(b, int):
        return f"{b - a:+d}"
    if isinstance(a, float) and isinstance(b, float):
        if not (math.isfinite(a) and math.isfinite(b)):
            return f"{a!r} -> {b!r}"
        return f"{b - a:+.2g} (relative {_rel(a, b):.1e})"
    if isinstance(a, str) and isinstance(b, str):
        import json

        try:
            la, lb = list(_leaves(json.loads(a))), list(_leaves(json.loads(b)))
        except ValueError:
            return "differs"
        if len(la) == len(lb) and la:
            return f"largest relative difference {max(_rel(x, y) for x, y in zip(la, lb)):.1e} over {len(la)} norms"
    return f"{a!r} -> {b!r}"


@dataclass(frozen=True)
class ReproductionCase:
    """Which case a rerun of a results file's rows is in: ``same_kind`` (every machine field recorded
    and equal here, so exact agreement is expected), ``machine`` (the machine fields that differ or
    are not recorded, :class:`~genbound.experiments.runtime.machine.Mismatch`) and ``commits`` (the commits
    that produced the compared columns, where they differ from this checkout's)."""

    same_kind: bool
    machine: tuple = ()
    commits: tuple = ()

    def expectation(self) -> str:
        """One sentence: what agreement to expect, and why."""
        if self.same_kind:
            return (
                "same machine kind, torch build and thread count as recorded: every compared column "
                "is expected to agree exactly"
            )
        return (
            f"another machine kind than recorded ({', '.join(m.field for m in self.machine)} differ or "
            f"are not recorded): a rerun is another draw of the same experiment, and differences are "
            f"reported with their size"
        )

    def lines(self) -> list[str]:
        """The named mismatches, each ``field: recorded X vs here Y`` (machine fields the file does not
        record on one line, then the others, then the commits)."""
        missing = [m for m in self.machine if m.recorded is None]
        out = (
            [
                f"not recorded in the file (written before genbound recorded them): "
                f"{', '.join(m.field for m in missing)}; here "
                + "; ".join(f"{m.field} {_show(m.here)}" for m in missing)
            ]
            if missing
            else []
        )
        return out + [str(m) for m in (*self.machine, *self.commits) if m.recorded is not None]

    def to_dict(self) -> dict:
        return {
            "same_kind": self.same_kind,
            "expectation": self.expectation(),
            "mismatches": [
                {"field": m.field, "recorded": m.recorded, "here": m.here}
                for m in (*self.machine, *self.commits)
            ],
        }


def _show(value) -> str:

    return show(value)


def reproduction_case(table, *, device="cpu", here: dict | None = None) -> ReproductionCase:
    """The :class:`ReproductionCase` of rerunning rows of the results ``table`` here on ``device``
    with the current torch thread count (``here``: an environment dict to compare with instead)."""

    here = environment(device=device) if here is None else here
    same, machine = same_machine_kind(table.environment, here)
    compared = [c for c in table.columns if c not in NOT_COMPARED]
    commits = commit_mismatches(table.header, compared, here.get("commit"))
    return ReproductionCase(same, tuple(machine), tuple(commits))


def _plain(v):
    return None if isinstance(v, float) and not math.isfinite(v) else v


def parse_row_keys(text: str) -> list[tuple[int, int]]:
    """``"64:3,16:1"`` -> ``[(64, 3), (16, 1)]`` (``T:seed`` pairs; raises
    :class:`~genbound.errors.ParameterError` on anything else, naming the item)."""
    items = [t.strip() for t in str(text).split(",")]
    if not any(items):
        raise ParameterError("--verify-saved-rows needs T:seed pairs, e.g. 64:3,16:1")
    out = []
    for it in items:
        parts = it.split(":")
        try:
            if len(parts) != 2:
                raise ValueError
            key = (int(parts[0]), int(parts[1]))
        except ValueError:
            raise ParameterError(
                f"--verify-saved-rows: {it!r} is not T:seed (two integers, e.g. 64:3)"
            ) from None
        if key in out:
            raise ParameterError(f"--verify-saved-rows names {it!r} twice")
        out.append(key)
    return out


def pick_rows(table, k: int, *, seed: int = 0) -> list[tuple[int, int]]:
    """``k`` distinct keys ``(seq_len, seed)`` of the results table, drawn uniformly with ``random.Random(seed)``
    from the sorted keys; ``k`` must be at least 1 and at most the number of rows (else
    :class:`~genbound.errors.ParameterError`)."""
    keys = sorted(table.keys)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= len(keys):
        raise ParameterError(
            f"--verify-saved K must be an integer in [1, {len(keys)}] (the saved rows), got {k!r}"
        )
    return random.Random(seed).sample(keys, k)


def config_of(table):
    """The :class:`~genbound.experiments.sparse_majority.SparseMajorityConfig` recorded in the header."""
    from .config import SparseMajorityConfig

    names = {f.name for f in fields(SparseMajorityConfig)}
    rec = dict(table.config)
    unknown = sorted(set(rec) - names)
    if unknown:
        raise ParameterError(
            f"{table.path}: the recorded configuration has fields this genbound does not "
            f"know: {unknown}"
        )
    return SparseMajorityConfig(**rec).validated()


def _equal(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def verify_rows(
    table,
    keys: Sequence[tuple[int, int]],
    *,
    device="cpu",
    on_check: Callable[[RowCheck], None] | None = None,
) -> list[RowCheck]:
    """Rerun the rows ``keys`` of the results ``table`` (:func:`~genbound.experiments.sparse_majority.read_sweep`)
    with its recorded configuration, each alone, and compare every column of the file but those in
    ``NOT_COMPARED`` (the wall time). Every key is checked against the table before anything is trained (a key
    that is not a saved row raises :class:`~genbound.errors.ParameterError`)."""
    from .runs import run_seq_len

    saved = {(r["seq_len"], r["seed"]): r for r in table.rows}
    missing = [k for k in keys if k not in saved]
    if missing:
        raise ParameterError(
            f"{table.path}: no saved row for " + ", ".join(f"T={t} seed={s}" for t, s in missing)
        )
    cfg = config_of(table)
    compared = tuple(c for c in table.columns if c not in NOT_COMPARED)
    out = []
    for key in keys:
        (run,) = run_seq_len(key[0], [key[1]], cfg, device=device, progress=False)
        new = run.to_dict()
        diffs = {c: (saved[key][c], new[c]) for c in compared if not _equal(saved[key][c], new[c])}
        chk = RowCheck(
            key,
            compared,
            diffs,
            float(run.seconds),
            float(saved[key]["seconds"]),
            {c: new[c] for c in table.columns},
        )
        out.append(chk)
        if on_check is not None:
            on_check(chk)
    return out


def compare_draws(a, b) -> dict:
    """How far two sweeps of the same configuration are apart row for row (``a`` and ``b`` DataFrames as
    :func:`~genbound.experiments.sparse_majority.read_csv` returns them, e.g. one trained on each of two
    machine kinds): the rows they share (``rows``), how many have the same fitting step (``same_fit_step``)
    and the same fitted flag (``same_fitted``), the mean and largest absolute difference of the test
    accuracy (``test_acc_mean_abs``, ``test_acc_max_abs``) and the largest absolute difference between
    their per-length mean gaps over all runs (``mean_gap_max_abs``).

    >>> import pandas as pd
    >>> a = pd.DataFrame({"seq_len": [16, 16], "seed": [0, 1], "fit_step": [5, 7], "fitted": [True, True],
    ...                   "test_acc": [0.9, 0.8], "acc_gap": [0.1, 0.2]})
    >>> b = a.assign(fit_step=[5, 9], test_acc=[0.9, 0.7], acc_gap=[0.1, 0.3])
    >>> d = compare_draws(a, b)
    >>> d["rows"], d["same_fit_step"], round(d["test_acc_max_abs"], 12), round(d["mean_gap_max_abs"], 12)
    (2, 1, 0.1, 0.05)
    """
    key = ["seq_len", "seed"]
    cols = ["fit_step", "fitted", "test_acc", "acc_gap"]
    for name, df in (("first", a), ("second", b)):
        missing = [c for c in key + cols if c not in df]
        if missing:
            raise ParameterError(f"compare_draws: the {name} sweep lacks the columns {missing}")
    j = a[key + cols].merge(b[key + cols], on=key, suffixes=("_a", "_b"))
    if j.empty:
        raise ParameterError("compare_draws: the two sweeps share no (seq_len, seed) row")
    dacc = (j["test_acc_a"] - j["test_acc_b"]).abs()
    means = j.groupby("seq_len")[["acc_gap_a", "acc_gap_b"]].mean()
    return {
        "rows": int(len(j)),
        "same_fit_step": int((j["fit_step_a"] == j["fit_step_b"]).sum()),
        "same_fitted": int((j["fitted_a"] == j["fitted_b"]).sum()),
        "test_acc_mean_abs": float(dacc.mean()),
        "test_acc_max_abs": float(dacc.max()),
        "mean_gap_max_abs": float((means["acc_gap_a"] - means["acc_gap_b"]).abs().max()),
    }
