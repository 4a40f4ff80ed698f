"""Two checkpoints of one architecture compared matrix by matrix: ``genbound analyze A --compare B``.

One concept: the comparison (architectures checked first, then each matrix's spectral quantities in A
and B with their ratio B / A and difference, sorted by how much they moved, a per-layer summary, and
both bounds side by side where both exist). Each side is :func:`genbound.analysis.api.analyze` of its
checkpoint: nothing here computes a spectrum or a bound.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ArchitectureError, ShapeError
from ..jsonsafe import json_float
from .api import analyze, weights_of
from .identity import same_weights
from .report import table_text

if TYPE_CHECKING:  # annotations only: pandas is imported where a table is built
    import numpy as np
    import pandas as pd

__all__ = [
    "COMPARED",
    "check_same_architecture",
    "compare_table",
    "layer_summary",
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


def _change(table) -> "np.ndarray":
    """Per row, the largest ``|log ratio|`` of the matrix's own quantities (:data:`OWN`; ``inf``
    where a ratio is 0, infinite or undefined: a matrix that vanished or appeared moved most)."""
    import numpy as np

    cols = [f"{q}_ratio" for q in OWN if f"{q}_ratio" in table.columns]
    r = table[cols].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        lr = np.abs(np.log(r))
    lr[~np.isfinite(lr)] = np.inf
    return lr.max(axis=1) if lr.shape[1] else np.zeros(len(table))


def compare_table(a, b) -> "pd.DataFrame":
    """Two reports of one architecture (:class:`~genbound.analysis.api.Analysis` or
    :class:`~genbound.analysis.api.SpectraOnly`), matrix by matrix:
    columns ``kind, layer, head, expert, rows, cols``, then for each quantity ``q`` of
    :data:`COMPARED` (``contribution`` only when both have a bound) ``q_a, q_b, q_ratio`` (``B / A``,
    exactly 1 where equal) and ``q_diff`` (``B - A``), and ``change``: the largest ``|log q_ratio|``
    over the matrix's own quantities (:data:`OWN`; 0 for a matrix that did not move). Rows are sorted by ``change``, largest first (ties
    in layer order). Rows whose identity or shape differ raise :class:`~genbound.errors.ShapeError`
    naming the first."""
    ta, tb = _matched_tables(a, b)
    out = ta[_KEYS].copy()
    for q in (q for q in COMPARED if q in ta.columns and q in tb.columns):
        dtype = int if q == "rank" else float
        out[f"{q}_a"], out[f"{q}_b"] = ta[q].to_numpy(), tb[q].to_numpy()
        out[f"{q}_ratio"] = _ratio(ta[q], tb[q])
        out[f"{q}_diff"] = tb[q].to_numpy(dtype=dtype) - ta[q].to_numpy(dtype=dtype)
    out["change"] = _change(out)
    out = out.sort_values("change", ascending=False, kind="stable")
    return out.reset_index(drop=True)


def layer_summary(table) -> "pd.DataFrame":
    """Per layer and matrix kind (in layer order): ``matrices``, ``changed`` (how many differ), the
    median ``sigma_max_ratio`` and ``frobenius_ratio`` over the group's matrices, and its largest
    ``change``."""
    import pandas as pd

    t = table.assign(_changed=_changed(table))
    kinds = list(dict.fromkeys(t.sort_index()["kind"]))  # the kinds in the report's order
    g = t.groupby(["layer", "kind"], sort=False)
    out = pd.DataFrame(
        {
            "matrices": g.size(),
            "changed": g["_changed"].sum().astype(int),
            "sigma_max_ratio": g["sigma_max_ratio"].median(),
            "frobenius_ratio": g["frobenius_ratio"].median(),
            "change": g["change"].max(),
        }
    ).reset_index()
    out["_k"] = out["kind"].map({k: i for i, k in enumerate(kinds)})
    out = out.sort_values(["layer", "_k"], kind="stable").drop(columns="_k")
    return out.reset_index(drop=True)


#: The quantities of a matrix itself, whose difference makes a row changed (a contribution moves with
#: the other matrices too, through the bound's weights, so it is shown but does not make a row changed).
OWN = ("sigma_max", "frobenius", "stable_rank", "rank")


def _changed(table) -> "pd.Series":
    """Rows where a matrix's own quantity (:data:`OWN`) differs between A and B."""
    cols = [f"{q}_ratio" for q in OWN if f"{q}_ratio" in table.columns]
    return (table[cols] != 1.0).any(axis=1)


def _bounds_side_by_side(a, b) -> dict | None:
    """The two bound values and their ratio, or ``None`` when a model has no bound."""
    if a.spectra_only or b.spectra_only:
        return None
    out = {}
    getters = [
        ("spectral_adaptive", lambda r: r.spectral.value),
        ("edelman_log", lambda r: r.edelman.log_value),
    ]
    if getattr(a, "network", None) is not None and getattr(b, "network", None) is not None:
        getters.insert(0, ("proved_capacity", lambda r: r.network.capacity))
    for name, get in getters:
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
    model has none: ``spectra_only``; ``proved_capacity`` first where both have the proved bound),
    ``checkpoint_a``/``checkpoint_b``: which bytes each side was computed from
    (:mod:`genbound.analysis.identity`) and ``identical_weights``: whether their weights are
    byte-identical (``null`` when not hashed); ``summary``: the rows of :func:`layer_summary`, and ``matrices``: the rows of
    :func:`compare_table`, largest change first (non-finite numbers as ``null``)."""
    w = a.weights

    def records(t):
        return [{k: _json_value(v) for k, v in r.items()} for r in t.to_dict(orient="records")]

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
        "checkpoint_a": a.checkpoint,
        "checkpoint_b": b.checkpoint,
        "identical_weights": same_weights(a.checkpoint, b.checkpoint),
        "n_matrices": len(table),
        "n_changed": int(_changed(table).sum()),
        "summary": records(layer_summary(table)),
        "matrices": records(table),
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
        ("proved_capacity", "proved capacity (theorem P)"),
        ("spectral_adaptive", "spectral-adaptive proxy (not a bound)"),
        ("edelman_log", "log Edelman-style proxy (not a bound)"),
    ):
        v = d["bound"].get(name)
        if v is None:
            continue
        show = [("-" if x is None else f"{x:.6g}") for x in (v["a"], v["b"], v["ratio"])]
        lines.append(f"{words}: A {show[0]}   B {show[1]}   ratio {show[2]}")
    return lines + [f"A: {d['verdict_a']}", f"B: {d['verdict_b']}"]


def _identity_lines(d: dict) -> list[str]:
    """One line: whether A's and B's weights are byte-identical, with both digests' first 12 hex."""
    a, b, same = d.get("checkpoint_a"), d.get("checkpoint_b"), d.get("identical_weights")
    if same is None:
        return [] if not (a and b) else ["weights: not compared byte for byte (not hashed)"]
    sha = [r["weights_sha256"][:12] for r in (a, b)]
    if same:
        return [f"weights: byte-identical (sha256 {sha[0]})"]
    return [f"weights: differ (sha256 A {sha[0]}, B {sha[1]})"]


def _shown_columns(table) -> list[str]:
    """The columns of the comparison table the console shows."""
    cols = ["kind", "layer", "head"] + (["expert"] if (table["expert"] >= 0).any() else [])
    cols += ["sigma_max_a", "sigma_max_b", "sigma_max_ratio", "frobenius_ratio"]
    cols += ["stable_rank_ratio", "rank_diff"]
    if "contribution_ratio" in table.columns:
        cols.append("contribution_ratio")
    return cols + ["change"]


def _where(row) -> str:
    """``M_in layer 0`` / ``QK layer 1 head 0`` / ``M_in layer 0 expert 2``."""
    out = f"{row['kind']} layer {int(row['layer'])}"
    if int(row["head"]) >= 0:
        out += f" head {int(row['head'])}"
    if int(row["expert"]) >= 0:
        out += f" expert {int(row['expert'])}"
    return out


def _moved_line(d: dict, table) -> str:
    """How many matrices moved, and the one that moved most with its ratios."""
    head = (
        f"changed: {d['n_changed']} of {d['n_matrices']} matrices (sigma_max, frobenius, stable "
        f"rank or rank differ)"
    )
    if d["n_changed"] == 0:
        return head + "; A and B have the same spectra"
    top = table.iloc[0]
    ratios = ", ".join(
        f"{q} x{top[f'{q}_ratio']:.6g}" for q in ("sigma_max", "frobenius") if f"{q}_ratio" in top
    )
    return head + f"; the largest change: {_where(top)} ({ratios})"


def comparison_report(d: dict, table, *, show_all: bool = False) -> str:
    """The text of ``genbound analyze A --compare B``: what moved first (the count and the largest
    change), the bounds side by side, the per-layer summary (groups with a change; every group with
    ``show_all``), then the matrices that changed, largest change first; the unchanged ones are
    counted, and listed with ``show_all`` (``--all``)."""
    changed = _changed(table)
    summary = layer_summary(table)
    moved = summary if show_all else summary[summary["changed"] > 0]
    rows = table if show_all else table[changed]
    lines = [
        f"compare A = {d['a']} with B = {d['b']}: {d['family']}, {d['layers']} layers, hidden "
        f"{d['hidden']}, {d['heads']} heads; {d['n_matrices']} matrices; ratio = B / A, "
        f"diff = B - A",
        _moved_line(d, table),
        *_bound_lines(d),
        *_identity_lines(d),
    ]
    if len(moved):
        lines += [
            "per layer and kind"
            + ("" if show_all else " (groups with a change)")
            + ": median ratio over the group's matrices",
            table_text(moved, digits=6),
        ]
    if len(rows):
        lines += [
            "matrices" + ("" if show_all else " that changed") + ", largest |log ratio| first "
            "(change: the largest over sigma_max, frobenius, stable rank and rank):",
            table_text(rows[_shown_columns(table)], digits=6),
        ]
    unchanged = int((~changed).sum())
    if unchanged and not show_all:
        lines.append(
            f"{unchanged} unchanged matrices not listed (sigma_max, frobenius, stable rank and rank "
            f"equal); --all lists every matrix"
        )
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
