"""Two checkpoints of one architecture compared matrix by matrix: ``genbound analyze A --compare B``.

One concept: the comparison (architectures checked first, then each matrix's spectral quantities in A
and B with their ratio B / A and difference, and both bounds side by side where both exist). Each side
is :func:`genbound.analysis.api.analyze` of its checkpoint: nothing here computes a spectrum or a bound.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ArchitectureError, ShapeError
from ..jsonsafe import json_float
from .api import analyze, weights_of
from .report import table_text

if TYPE_CHECKING:  # annotations only: pandas is imported where a table is built
    import pandas as pd

__all__ = [
    "COMPARED",
    "check_same_architecture",
    "compare_table",
    "comparison_dict",
    "comparison_report",
    "compare_checkpoints",
]

#: The quantities compared per matrix (``contribution`` only when both models have a bound).
COMPARED = ("sigma_max", "frobenius", "stable_rank", "rank", "contribution")

#: What must agree between two checkpoints for ``--compare`` (weights attribute -> words).
_ARCH_FIELDS = {
    "family": "family",
    "n_layers": "layers",
    "hidden": "hidden size",
    "n_heads": "heads",
    "kv_heads": "key/value heads",
    "d_head": "d_head",
    "d_ff": "d_ff",
    "n_experts": "experts",
    "covered": "coverage by the papers' bound",
}

#: The columns that name a matrix (they must agree row by row between A and B).
_KEYS = ["kind", "layer", "head", "expert", "rows", "cols"]


def check_same_architecture(wa, wb, *, a: str = "A", b: str = "B") -> None:
    """Refuse two weights whose architectures differ: one
    :class:`~genbound.errors.ArchitectureError` naming every differing field and both values."""
    diff = [
        f"{what} {getattr(wa, f)!r} vs {getattr(wb, f)!r}"
        for f, what in _ARCH_FIELDS.items()
        if getattr(wa, f) != getattr(wb, f)
    ]
    if diff:
        raise ArchitectureError(
            f"--compare: {a} and {b} are not the same architecture ({'; '.join(diff)}); "
            f"compare two checkpoints of one architecture (for example a base and a fine-tuned model)"
        )


def _ratio(x, y):
    """``y / x`` elementwise, exactly 1 where ``x == y`` (a zero matrix in both included)."""
    import numpy as np

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x == y, 1.0, y / x)


def _matched_tables(a, b):
    """Both reports' per-matrix tables, each with an ``expert`` column; refuses (``ShapeError``) two
    tables whose lengths, or whose rows' identity or shape (:data:`_KEYS`), differ."""
    ta, tb = a.matrices(), b.matrices()
    for t in (ta, tb):
        if "expert" not in t.columns:
            t.insert(3, "expert", -1)
    if len(ta) != len(tb):
        raise ShapeError(f"--compare: A has {len(ta)} matrices, B has {len(tb)}")
    ka, kb = ta[_KEYS].to_numpy(), tb[_KEYS].to_numpy()
    bad = (ka != kb).any(axis=1)
    if bad.any():
        i = int(bad.argmax())
        raise ShapeError(
            f"--compare: matrix {i} is {dict(zip(_KEYS, ka[i].tolist()))} in A but "
            f"{dict(zip(_KEYS, kb[i].tolist()))} in B"
        )
    return ta, tb


def compare_table(a, b) -> "pd.DataFrame":
    """Two reports of one architecture (:class:`~genbound.analysis.api.Analysis` or
    :class:`~genbound.analysis.api.SpectraOnly`), matrix by matrix:
    columns ``kind, layer, head, expert, rows, cols``, then for each quantity ``q`` of
    :data:`COMPARED` (``contribution`` only when both have a bound) ``q_a, q_b, q_ratio`` (``B / A``,
    exactly 1 where equal) and ``q_diff`` (``B - A``). Rows whose identity or shape differ raise
    :class:`~genbound.errors.ShapeError` naming the first."""
    ta, tb = _matched_tables(a, b)
    out = ta[_KEYS].copy()
    for q in (q for q in COMPARED if q in ta.columns and q in tb.columns):
        dtype = int if q == "rank" else float
        out[f"{q}_a"], out[f"{q}_b"] = ta[q].to_numpy(), tb[q].to_numpy()
        out[f"{q}_ratio"] = _ratio(ta[q], tb[q])
        out[f"{q}_diff"] = tb[q].to_numpy(dtype=dtype) - ta[q].to_numpy(dtype=dtype)
    return out.reset_index(drop=True)


def _changed(table) -> "pd.Series":
    """Rows where any compared quantity differs between A and B."""
    cols = [c for c in table.columns if c.endswith("_ratio")]
    return (table[cols] != 1.0).any(axis=1)


def _bounds_side_by_side(a, b) -> dict | None:
    """The two bound values and their ratio, or ``None`` when a model has no bound."""
    if a.spectra_only or b.spectra_only:
        return None
    out = {}
    for name, get in (
        ("spectral_adaptive", lambda r: r.spectral.value),
        ("edelman_log", lambda r: r.edelman.log_value),
    ):
        x, y = float(get(a)), float(get(b))
        out[name] = {
            "a": json_float(x),
            "b": json_float(y),
            "ratio": json_float(float(_ratio(x, y))),
        }
    return out


def _json_value(v):
    """One cell of the comparison table as JSON: a Python scalar, non-finite floats as ``None``."""
    v = v.item() if hasattr(v, "item") else v
    return json_float(v) if isinstance(v, float) else v


def comparison_dict(a, b, table, *, path_a: str, path_b: str) -> dict:
    """The ``--json`` object of ``--compare``: both sources, the bounds side by side (``null`` when a
    model has none: ``spectra_only``), and ``matrices``: the rows of :func:`compare_table`
    (non-finite numbers as ``null``)."""
    w = a.weights
    rows = [{k: _json_value(v) for k, v in r.items()} for r in table.to_dict(orient="records")]
    return {
        "a": path_a,
        "b": path_b,
        "family": w.family,
        "layers": w.n_layers,
        "hidden": w.hidden,
        "heads": w.n_heads,
        "spectra_only": bool(a.spectra_only),
        "bound": _bounds_side_by_side(a, b),
        "verdict_a": a.verdict(),
        "verdict_b": b.verdict(),
        "n_matrices": len(table),
        "n_changed": int(_changed(table).sum()),
        "matrices": rows,
    }


def _bound_lines(d: dict) -> list[str]:
    """Both bound values side by side with both verdicts, or the spectra-only label."""
    if d["bound"] is None:
        return [
            "SPECTRA ONLY, NO BOUND: the papers' bound does not cover every block of this model, "
            "so no bound is compared (genbound analyze on either one says why)"
        ]
    lines = []
    for name, words in (
        ("spectral_adaptive", "spectral-adaptive proxy"),
        ("edelman_log", "log Edelman-style proxy"),
    ):
        v = d["bound"][name]
        show = [("-" if x is None else f"{x:.6g}") for x in (v["a"], v["b"], v["ratio"])]
        lines.append(f"{words}: A {show[0]}   B {show[1]}   ratio {show[2]}")
    return lines + [f"A: {d['verdict_a']}", f"B: {d['verdict_b']}"]


def _shown_columns(table) -> list[str]:
    """The columns of the comparison table the console shows."""
    cols = ["kind", "layer", "head"] + (["expert"] if (table["expert"] >= 0).any() else [])
    cols += ["sigma_max_a", "sigma_max_b", "sigma_max_ratio", "frobenius_ratio"]
    cols += ["stable_rank_ratio", "rank_diff"]
    if "contribution_ratio" in table.columns:
        cols.append("contribution_ratio")
    return cols


def comparison_report(d: dict, table) -> str:
    """The text of ``genbound analyze A --compare B``."""
    lines = [
        f"compare A = {d['a']} with B = {d['b']}: {d['family']}, {d['layers']} layers, hidden "
        f"{d['hidden']}, {d['heads']} heads; {d['n_matrices']} matrices; ratio = B / A, "
        f"diff = B - A",
        *_bound_lines(d),
        f"matrices that differ (any ratio != 1): {d['n_changed']} of {d['n_matrices']}",
        table_text(table[_shown_columns(table)], digits=6),
    ]
    return "\n".join(lines)


def compare_checkpoints(path_a, path_b, *, layers=None, attention_scale: bool = False, **kwargs):
    """``(a, b, table)``: both checkpoints' architectures checked first (one
    :class:`~genbound.errors.ArchitectureError` naming the difference, before any spectrum), then
    both analysed (:func:`~genbound.analysis.api.analyze` with ``layers``, ``attention_scale`` and
    ``kwargs``) and compared (:func:`compare_table`)."""
    ws = [weights_of(p, layers=layers, attention_scale=attention_scale) for p in (path_a, path_b)]
    check_same_architecture(*ws, a=f"A ({path_a})", b=f"B ({path_b})")
    kwargs.update(layers=layers, attention_scale=attention_scale)
    a, b = (analyze(p, **kwargs) for p in (path_a, path_b))
    return a, b, compare_table(a, b)
