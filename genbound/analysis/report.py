"""What a report of ``genbound analyze`` says, in every form it is read: the console text, the ``--json``
object and the per-matrix rows (the ``--csv`` table).

Book: :ref:`ch-sakai-trained`. The proxies are sums over four kinds of matrix per layer (:data:`KINDS`),
not over the raw weights:

* ``QK``: one head's query-key product ``W_Q W_K^T`` (``N x N``, rank at most ``d_head``, with the
  head's row-vector maps ``W_Q, W_K`` of shape ``N x d_head``; the scores are ``x W_Q W_K^T y^T``),
  one per head;
* ``V``: one head's value-output product ``W_V W_O`` (``N x N``, rank at most ``d_head``), one per head;
* ``M_in``: the feed-forward input matrix (``N x d_ff``); ``M_out``: its output matrix (``d_ff x N``).

The ``--json`` object has the keys of :data:`JSON_FIELDS` (each described there); ``matrices`` is the
per-matrix list (keys :data:`MATRIX_FIELDS`), the same rows as the ``--csv`` table
(:func:`matrix_table`). The console opens with theorem P, its verdict on two lines (:func:`verdict_lines`),
the proxies (not bounds) and, when ``p = 0`` wins for every matrix, what the authors' proxy then is
(``sum sqrt(rank * N) + sqrt(L)``, of the shapes and ranks only); ``--verbose`` adds the routes. The JSON's
``verdict`` (:func:`verdict`) is one line, with where the book defines it (:data:`DEFINED_IN`).

A spectra-only report (a model the papers' bound does not cover) opens with the label and one line
per uncovered kind (:func:`spectra_only_report`); its rows have the keys of :data:`SPECTRA_FIELDS`
and every bound key of its JSON is ``null``.

One concept: the text and the rows of one model's report (nothing here loads a model or computes a
spectrum: :mod:`genbound.analysis.api` does, and its result objects call these functions).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..jsonsafe import json_float
from ..kinds import KIND_DESCRIPTIONS
from .identity import CHECKPOINT_DESCRIPTION, identity_lines

if TYPE_CHECKING:  # annotations only: pandas is imported where a table is built
    import pandas as pd

__all__ = [
    "KINDS",
    "MATRIX_FIELDS",
    "JSON_FIELDS",
    "SPECTRA_FIELDS",
    "DEFINED_IN",
    "verdict",
    "verdict_lines",
    "matrix_table",
    "analysis_dict",
    "spectra_only_dict",
    "console_report",
    "spectra_only_report",
    "short_reason",
    "table_text",
]

#: The four kinds of proxy matrix, in words (the ``kind`` column and key): the one definition,
#: :data:`genbound.kinds.KIND_DESCRIPTIONS` (its keys are :data:`genbound.kinds.KINDS`).
KINDS = KIND_DESCRIPTIONS

#: Keys of each row of ``matrices`` in the JSON (the ``--csv`` columns, with ``shape`` as ``rows, cols``).
MATRIX_FIELDS = {
    "kind": "QK, V, M_in or M_out (see KINDS)",
    "layer": "layer index (0-based, among the analysed layers)",
    "head": "head index for QK and V; -1 for M_in and M_out",
    "shape": "[rows, cols] of the matrix",
    "rank": "numerical rank (singular values above rank_tol * min(rows, cols) * max(sigma_max, 1))",
    "sigma_max": "largest singular value (spectral norm)",
    "frobenius": "Frobenius norm (in mode exact: of the singular values above the rank threshold)",
    "stable_rank": "frobenius^2 / sigma_max^2 (0 for a zero matrix)",
    "p_opt": "the Schatten index p in the grid that minimises the matrix's term T(p)",
    "contribution": "min_p T(p): the matrix's term in the spectrum-adaptive proxy (not a bound)",
    "proved_p": "the Schatten index theorem P chose for the matrix (0: its rank level)",
    "spectral_level": "the spectral-norm level exp(k/J) >= sigma_max that theorem P pays for",
    "log_scale": "log of the factor that turns the loss radius into the matrix's radius (theorem P)",
    "union_cost": "the matrix's share of theorem P's union bound, in nats",
}

#: Keys of the ``--json`` object, in words.
JSON_FIELDS = {
    "proved_capacity": "theorem P's capacity 12 int_0^{1/4} sqrt(H): a proved bound on the reference model "
    "built from these matrices (book/part3/network.md, thm-p-network)",
    "proved_union_cost": "theorem P's union cost over the post hoc choices, in nats",
    "proved_gap": "theorem P's bound on the ramp-loss gap at n_samples (null without n_samples)",
    "proved_trivial": "whether theorem P's gap at n_samples is at or above 1 (null without n_samples)",
    "proved_samples_needed": "the least n with theorem P's gap <= 1 (null beyond 10**40)",
    "premises": "theorem P's premises with this report's numbers, one line",
    "reference_model_note": "what the bound is about when the checkpoint is not the reference architecture",
    "spectral_adaptive": "the spectrum-adaptive proxy of Sakai & Imaizumi (not a bound): sum of contributions "
    "+ sqrt(L)",
    "spectral_adaptive_capacity": "the authors' proxy read as a rate (prop-sa-capacity; not a bound): "
    "the rate is capacity / sqrt(n)",
    "spectral_adaptive_trivial": "null: a checkpoint carries no sample size n, so triviality is undecided",
    "edelman": "the Edelman-style proxy (not a bound); null when it exceeds float64",
    "edelman_capacity": "the Edelman-style proxy's n-free complexity (the proxy itself)",
    "edelman_trivial": "null: a checkpoint carries no sample size n, so triviality is undecided",
    "edelman_log": "natural log of the Edelman-style proxy (always finite)",
    "edelman_overflow": "true when edelman exceeds float64",
    "layers": "L, the number of analysed layers",
    "hidden": "N, the hidden size",
    "heads": "attention heads per layer",
    "d_head": "N / heads",
    "d_ff": "feed-forward width",
    "n_matrices": "number of proxy matrices: L * (2 * heads + 2)",
    "matrices": "one object per proxy matrix (keys: MATRIX_FIELDS), the rows of the --csv table",
    "p_opt_counts": "per kind, how many matrices chose each p ({kind: {p: count}}; p as a string)",
    "grid_m": "grid resolution m of the Schatten indices p",
    "L_phi": "activation Lipschitz constant",
    "rank_tol": "relative rank tolerance",
    "mode": "exact or authors",
    "p_opt_zero": "number of matrices whose p_opt is 0",
    "attention_scale": "whether the score scale 1/sqrt(d_head) is inside every QK",
    "device": "device the spectra were computed on",
    "seconds": "wall time of loading and both proxies",
    "source": "the checkpoint folder",
    "checkpoint": CHECKPOINT_DESCRIPTION,
    "family": "weight-name family (bert, distilbert, gpt2)",
    "routes": "matrices per spectrum route (qr-core, gram, qr-svd, svd, dense-svd)",
    "n_samples": "the sample size given with --n-samples (null: none given)",
    "spectral_adaptive_gap": "capacity / sqrt(n_samples): the spectrum-adaptive estimate of the "
    "generalization gap at n_samples (null without n_samples)",
    "spectral_adaptive_samples_needed": "the least n with capacity / sqrt(n) <= 1, the loss range: "
    "from this sample size on the estimate is not vacuous (null beyond 10**40)",
    "edelman_gap": "edelman / sqrt(n_samples) (null without n_samples, or beyond float64)",
    "edelman_samples_needed": "the least n with edelman / sqrt(n) <= 1 (null beyond 10**40)",
    "verdict": "one line: whether the proved bound is vacuous (at n_samples, or undecided without it), "
    "the proxies labelled as not bounds, and where the book defines it",
    "defined_in": "the book's chapter and statement of the proved bound and of vacuous (trivial)",
}

#: Keys of each row of ``matrices`` in a spectra-only JSON (the ``--csv`` columns, with ``shape`` as
#: ``rows, cols``): the columns of :meth:`genbound.weights.TransformerWeights.matrix_table`.
SPECTRA_FIELDS = {
    "kind": "QK, V, M_in, M_out, and M_gate / router where the block has them",
    "layer": "layer index (0-based, among the analysed layers)",
    "head": "query-head index for QK and V; -1 for the feed-forward kinds",
    "expert": "expert index in a mixture of experts; -1 elsewhere",
    "shape": "[rows, cols] of the matrix",
    "rank": "numerical rank (singular values above rank_tol * min(rows, cols) * max(sigma_max, 1))",
    "sigma_max": "largest singular value (spectral norm)",
    "frobenius": "Frobenius norm",
    "nuclear": "nuclear norm (sum of the singular values)",
    "stable_rank": "frobenius^2 / sigma_max^2 (0 for a zero matrix)",
    "norm_21": "(2,1) norm: the sum of the columns' Euclidean norms",
    "route": "how the spectrum was computed (qr-core, gram, qr-svd)",
    "covered": "whether the papers' bound covers the matrix's block",
    "note": "why not (or what the architecture changes), in words",
}

#: Where the book defines the capacity, the rate ``capacity / sqrt(n)`` and when a report is vacuous
#: (``trivial``): the chapter file and the statement's label (:prf:ref:`prop-sa-capacity`).
DEFINED_IN = (
    "book/part3/network.md, thm-p-network (the proxies: book/part3/deep.md, prop-sa-capacity)"
)
#: Said in every report with a bound: the checkpoints genbound reads have residual streams and LayerNorm.
REFERENCE_NOTE = (
    "the proved bound is about the reference model built from this checkpoint's matrices (no residual "
    "stream, no LayerNorm, rows projected to the unit ball), not about the checkpoint's own forward pass"
)

#: The JSON keys that hold a bound or one of its parameters: ``null`` in a spectra-only report.
_BOUND_KEYS = (
    "proved_capacity",
    "proved_union_cost",
    "proved_gap",
    "proved_trivial",
    "proved_samples_needed",
    "premises",
    "reference_model_note",
    "spectral_adaptive",
    "spectral_adaptive_capacity",
    "spectral_adaptive_trivial",
    "edelman",
    "edelman_capacity",
    "edelman_trivial",
    "edelman_log",
    "edelman_overflow",
    "p_opt_counts",
    "grid_m",
    "L_phi",
    "mode",
    "p_opt_zero",
    "spectral_adaptive_gap",
    "spectral_adaptive_samples_needed",
    "edelman_gap",
    "edelman_samples_needed",
)

#: How each per-matrix column becomes a JSON value (a column not named here is kept as it is).
_ROW_TYPES = {
    "layer": int,
    "head": int,
    "expert": int,
    "rank": int,
    "covered": bool,
    **dict.fromkeys(
        (
            "sigma_max",
            "frobenius",
            "nuclear",
            "stable_rank",
            "norm_21",
            "p_opt",
            "contribution",
            "proved_p",
            "spectral_level",
            "log_scale",
            "union_cost",
        ),
        float,
    ),
}


# ---------------------------------------------------------------------------------------------- verdict
def _count(n: int) -> str:
    """A sample size: ``54``, or ``6.1e+10`` from a million on."""
    return f"{n:d}" if n < 10**6 else f"{float(n):.2g}"


def _count_or_inf(m) -> str:
    """A sample size, or ``> 1e40`` when there is none."""
    return _count(int(m)) if math.isfinite(m) else "> 1e40"


def _rate_text(name: str, rep, rate: str, n) -> str:
    """One report's part of the verdict: its rate at ``n`` (if given) and where it stops being vacuous."""
    m = rep.samples_needed()
    fin = math.isfinite(m)
    need = f"not vacuous from n = {_count(m)} on" if fin else "vacuous for every n up to 1e40"
    if n is None:
        return f"{name} {rate}: {need}"
    gap = rep.gap_at(n)
    g = f"{gap:.3g}" if math.isfinite(gap) else "inf"
    return f"{name} {rate} = {g} {'>=' if rep.trivial else '<'} 1 ({need})"


def _verdict_head(flags: dict, n) -> str:
    """The start of the verdict: vacuous or not at ``n`` (``flags``: report name -> ``trivial``)."""
    if n is None:
        return "no sample size given, so undecided whether vacuous (--n-samples N decides it); "
    if all(flags.values()):
        return f"vacuous at n = {n}: "
    if not any(flags.values()):
        return f"not vacuous at n = {n}: "
    vac = next(k for k, v in flags.items() if v)
    return f"{vac} vacuous at n = {n}, the other not: "


def verdict(spectral, edelman, network=None) -> str:
    """One line: whether theorem P's proved bound (``network``) is vacuous (its gap at ``n_samples`` is at or
    above the loss range 1) and from which sample size it is not, then the two proxies **labelled as not
    bounds** with their rates, and where the book defines it all (:data:`DEFINED_IN`). Without ``network``
    the line is the proxies' alone, each labelled.

    >>> from genbound.bounds.sakai_imaizumi import SpectralBoundReport, EdelmanProxyReport
    >>> r, e = SpectralBoundReport.examples()[1], EdelmanProxyReport.examples()[1]
    >>> r.n_samples, r.trivial
    (10, True)
    >>> print(verdict(r, e))  # doctest: +ELLIPSIS
    vacuous at n = 10: authors' proxy (not a bound) capacity/sqrt(n) = ... >= 1 (not vacuous from n = ... on); ...
    """
    n = spectral.n_samples
    proxies = [
        _rate_text("authors' proxy (not a bound)", spectral, "capacity/sqrt(n)", n),
        _rate_text("Edelman-style proxy (not a bound)", edelman, "value/sqrt(n)", n),
    ]
    if network is None:
        flags = {"authors' proxy": spectral.trivial, "Edelman-style proxy": edelman.trivial}
        return _verdict_head(flags, n) + "; ".join(proxies) + f"; defined in {DEFINED_IN}"
    head = _verdict_head({"proved bound": network.trivial}, n)
    proved = _rate_text("proved bound (theorem P)", network, "gap", n)
    return head + proved + "; " + "; ".join(proxies) + f"; defined in {DEFINED_IN}"


def verdict_lines(network) -> list[str]:
    """The verdict of :func:`verdict` on two short lines (the console's): vacuous or not at ``n_samples``
    (or that no sample size was given), then from which ``n`` theorem P's bound is not vacuous. The same
    numbers and the same decision as :func:`verdict`, said shorter.

    >>> from genbound.bounds.network import NetworkBound
    >>> print("\\n".join(verdict_lines(NetworkBound.examples()[0])))  # doctest: +ELLIPSIS
    VACUOUS at n = 10: theorem P's gap bound ... >= 1
    not vacuous from n = ... on (theorem P's gap bound <= 1 there)
    """
    n, m = network.n_samples, network.samples_needed()
    if n is None:
        first = "no sample size given: --n-samples N says whether the bound is vacuous at N"
    else:
        gap = network.gap_at(n)
        g = f"{gap:.3g}" if math.isfinite(gap) else "inf"
        word, cmp = ("VACUOUS", ">=") if network.trivial else ("NOT VACUOUS", "<")
        first = f"{word} at n = {n}: theorem P's gap bound {g} {cmp} 1"
    if math.isfinite(m):
        return [first, f"not vacuous from n = {_count(m)} on (theorem P's gap bound <= 1 there)"]
    return [first, "vacuous for every n up to 1e40 (theorem P's gap bound >= 1)"]


# ---------------------------------------------------------------------------------------------- rows
def matrix_table(report, network=None) -> "pd.DataFrame":
    """The per-matrix table a user reads (``--csv``, and ``matrices`` in the JSON): columns ``kind, layer,
    head, rows, cols, rank, sigma_max, frobenius, stable_rank, p_opt, contribution`` (:data:`MATRIX_FIELDS`),
    one row per matrix of a :class:`~genbound.bounds.sakai_imaizumi.SpectralBoundReport`, in its order."""
    import numpy as np

    t = report.table
    smax = t["spectral_norm"].to_numpy(dtype=float)
    fro = t["frobenius_norm"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        stable = np.where(smax > 0, (fro / np.where(smax > 0, smax, 1.0)) ** 2, 0.0)
    out = t[["kind", "layer", "head", "rows", "cols", "rank"]].copy()
    out["sigma_max"], out["frobenius"], out["stable_rank"] = smax, fro, stable
    out["p_opt"] = t["p_opt"].to_numpy(dtype=float)
    out["contribution"] = t["contribution"].to_numpy(dtype=float)
    if network is not None:  # theorem P's rows are in the same (hybrid, table) order
        nt = network.table
        for col in ("proved_p", "spectral_level", "log_scale", "union_cost"):
            out[col] = nt["p" if col == "proved_p" else col].to_numpy(dtype=float)
    return out.reset_index(drop=True)


def _json_rows(table, fields: dict) -> list[dict]:
    """The rows of a per-matrix table as JSON objects with the keys of ``fields`` (:data:`MATRIX_FIELDS`
    or :data:`SPECTRA_FIELDS`), in that order; ``shape`` is ``[rows, cols]``."""
    rows = []
    for r in table.itertuples(index=False):
        row = {}
        for key in fields:
            if key == "shape":
                row[key] = [int(r.rows), int(r.cols)]
            else:
                v = getattr(r, key)
                row[key] = _ROW_TYPES[key](v) if key in _ROW_TYPES else v
        rows.append(row)
    return rows


def _p_counts(table) -> dict:
    """Per kind, how many matrices chose each ``p`` (``{kind: {p: count}}``, ``p`` as a string)."""
    out = {}
    for kind in KINDS:
        sel = table.loc[table["kind"] == kind, "p_opt"]
        if len(sel):
            out[kind] = {f"{p:g}": int(n) for p, n in sel.value_counts().sort_index().items()}
    return out


def _routes(table) -> dict:
    """Matrices per spectrum route (the ``route`` column), in the routes' order."""
    return {k: int(v) for k, v in table["route"].value_counts().sort_index().items()}


def _gap(report):
    """The report's gap estimate at its own sample size (``None`` without one), as JSON."""
    return json_float(None if report.n_samples is None else report.gap_at(report.n_samples))


def _bound_dict(r, e, nb) -> dict:
    """The JSON keys of the proved bound (``nb``) and both proxies (``r``: the spectrum-adaptive report,
    ``e``: the Edelman-style one)."""
    finite = math.isfinite(e.value)
    return {
        "proved_capacity": nb.capacity,
        "proved_union_cost": nb.union_cost,
        "proved_gap": _gap(nb),
        "proved_trivial": nb.trivial,
        "proved_samples_needed": json_float(nb.samples_needed()),
        "premises": nb.premises,
        "reference_model_note": REFERENCE_NOTE,
        "spectral_adaptive": r.value,
        "spectral_adaptive_capacity": r.to_dict()["capacity"],
        "spectral_adaptive_trivial": r.trivial,
        "edelman": e.value if finite else None,
        "edelman_capacity": e.to_dict()["capacity"],
        "edelman_trivial": e.trivial,
        "edelman_log": e.log_value,
        "edelman_overflow": not finite,
    }


def analysis_dict(a) -> dict:
    """The ``--json`` object of a report with a bound (:class:`~genbound.analysis.api.Analysis`; keys
    :data:`JSON_FIELDS`)."""
    w, r, e = a.weights, a.spectral, a.edelman
    mt = a.matrices()
    return {
        **_bound_dict(r, e, a.network),
        "layers": w.n_layers,
        "hidden": w.hidden,
        "heads": w.n_heads,
        "d_head": w.d_head,
        "d_ff": w.d_ff,
        "n_matrices": len(r.table),
        "matrices": _json_rows(mt, MATRIX_FIELDS),
        "p_opt_counts": _p_counts(mt),
        "grid_m": r.grid_m,
        "L_phi": r.L_phi,
        "rank_tol": r.rank_tol,
        "mode": r.mode,
        "p_opt_zero": int((r.table["p_opt"] == 0).sum()),
        "attention_scale": w.attention_scale,
        "device": a.device,
        "seconds": a.seconds,
        "source": w.source,
        "checkpoint": a.checkpoint,
        "family": w.family,
        "routes": _routes(r.table),
        "n_samples": r.n_samples,
        "spectral_adaptive_gap": _gap(r),
        "spectral_adaptive_samples_needed": json_float(r.samples_needed()),
        "edelman_gap": _gap(e),
        "edelman_samples_needed": json_float(e.samples_needed()),
        "verdict": a.verdict(),
        "defined_in": DEFINED_IN,
    }


def spectra_only_dict(a) -> dict:
    """The ``--json`` object of a spectra-only report (:class:`~genbound.analysis.api.SpectraOnly`): the keys
    of :data:`JSON_FIELDS` (those of a bound ``null``), rows with the keys of :data:`SPECTRA_FIELDS`, and
    ``spectra_only``, ``bound``, ``uncovered``, ``kv_heads``, ``experts``."""
    w, t = a.weights, a.table
    out = {"spectra_only": True, "bound": None, "uncovered": a.reasons}
    out.update(dict.fromkeys(_BOUND_KEYS))
    out.update(
        {
            "layers": w.n_layers,
            "hidden": w.hidden,
            "heads": w.n_heads,
            "kv_heads": w.kv_heads or w.n_heads,
            "experts": w.n_experts,
            "d_head": w.d_head,
            "d_ff": w.d_ff,
            "n_matrices": len(t),
            "matrices": _json_rows(t, SPECTRA_FIELDS),
            "rank_tol": a.rank_tol,
            "attention_scale": w.attention_scale,
            "device": a.device,
            "seconds": a.seconds,
            "source": w.source,
            "checkpoint": a.checkpoint,
            "family": w.family,
            "routes": _routes(t),
            "n_samples": a.n_samples,
            "verdict": a.verdict(),
            "defined_in": DEFINED_IN,
        }
    )
    return out


# ---------------------------------------------------------------------------------------------- console
def table_text(table, digits: int = 5) -> str:
    """A table as the console shows it: no index, floats with ``digits`` significant digits."""
    return table.to_string(index=False, float_format=lambda x: f"{x:.{digits}g}")


def _p0_sentence(d: dict) -> list[str]:
    """Which term dominates the authors' proxy and what it ignores, when ``p = 0`` wins everywhere."""
    n = d["n_matrices"]
    if d["p_opt_zero"] != n:
        return []
    return [
        f"authors' proxy (not a bound): p = 0 wins for all {n} matrices, so it is sum sqrt(rank * N) "
        f"+ sqrt(L), a function of the shapes and ranks only: no norm or singular value of any weight "
        f"enters it"
    ]


def _summary_lines(a, d: dict) -> list[str]:
    """The model, the proved bound and its verdict on two lines, the proxies (each labelled not a bound)
    and which term dominates the authors' proxy (the first lines of :func:`console_report`)."""
    n, ns = d["n_matrices"], d["n_samples"]
    ed = f"{a.edelman.value:.6g}" if math.isfinite(a.edelman.value) else "inf in float64"
    return [
        f"{d['source']}: {d['family']}, {d['layers']} layers, hidden {d['hidden']}, {d['heads']} heads (d_head "
        f"{d['d_head']}), d_ff {d['d_ff']}; {n} matrices",
        f"PROVED BOUND (theorem P, book/part3/network.md): capacity {a.network.capacity:.6g}, union cost "
        f"{a.network.union_cost:.5g} nats; gap <= 2 capacity/sqrt(n) + 3 sqrt((log(2/delta) + union)/(2n))",
        *verdict_lines(a.network),
        f"authors' proxy, not a bound (Sakai & Imaizumi): {a.spectral.value:.6g}; "
        + _rate_text("", a.spectral, "capacity/sqrt(n)", ns).strip(),
        *_p0_sentence(d),
        f"Edelman-style proxy, not a bound: {ed} (log = {a.edelman.log_value:.6g}); "
        + _rate_text("", a.edelman, "value/sqrt(n)", ns).strip(),
        f"premises: {a.network.premises}",
        f"note: {REFERENCE_NOTE}",
        *identity_lines(d["checkpoint"]),
        f"defined in {DEFINED_IN}",
        "matrices per layer: QK = one head's W_Q W_K^T, V = one head's W_V W_O (one each per head), "
        "M_in and M_out = the feed-forward matrices",
    ]


def _verbose_lines(d: dict) -> list[str]:
    """What ``--verbose`` adds: the device and wall time, the spectrum routes, the grid and the mode."""
    return [
        f"run: device {d['device']}; {d['seconds']:.2f} s; authors' proxy over grid m = {d['grid_m']}, "
        f"mode {d['mode']}",
        "spectrum routes: " + ", ".join(f"{k} {v}" for k, v in d["routes"].items()),
    ]


def _p_opt_lines(d: dict) -> list[str]:
    """The chosen ``p`` per kind with counts."""
    lines = ["authors' proxy: chosen Schatten index p_opt per kind (p: count):"]
    for kind, counts in d["p_opt_counts"].items():
        lines.append(f"  {kind:6s} " + ", ".join(f"p = {p}: {c}" for p, c in counts.items()))
    return lines


def _top_lines(a, table, top: int, n: int) -> list[str]:
    """The ``top`` matrices with the largest contributions and their share of the proxy."""
    if not top:
        return []
    k = min(top, n)
    big = table.sort_values("contribution", ascending=False, kind="stable").head(k)
    value = a.spectral.value
    share = big["contribution"].sum() / value if value > 0 else float("nan")
    show = big[
        ["kind", "layer", "head", "rank", "sigma_max", "stable_rank", "p_opt", "contribution"]
    ]
    return [f"largest {k} contributions ({share:.1%} of the proxy):", table_text(show)]


#: The console's name of the Edelman table's ``log_alpha`` (not WeightWatcher's power-law ``alpha``).
PEELING = "log peeling factor"


def _per_layer_lines(a) -> list[str]:
    """Per layer: each kind's sum of ``min_p T(p)``, beside the layer's log peeling factor (the
    Edelman table's ``log_alpha``: the log of the later layers' Lipschitz product, not a power law)."""
    t = a.spectral.table
    per = (
        t.groupby(["layer", "kind"], sort=False)["contribution"].sum().unstack("kind")[list(KINDS)]
    )
    per.insert(0, PEELING, a.edelman.table["log_alpha"].to_numpy())
    return [
        f"per-layer sums of min_p T(p) (authors' proxy, not a bound); {PEELING} = sum over the later "
        f"layers of log Lipschitz (no power-law fit):",
        per.to_string(float_format=lambda x: f"{x:.5g}"),
    ]


def console_report(a, d: dict, table, *, top: int = 5, verbose: bool = False) -> str:
    """The text ``genbound analyze`` prints without ``--json`` (``a``: an
    :class:`~genbound.analysis.api.Analysis`, ``d``: its ``to_dict()``, ``table``: its ``matrices()``);
    ``verbose`` adds the run's device and time, the spectrum routes, the grid and the mode."""
    lines = _summary_lines(a, d) + (_verbose_lines(d) if verbose else []) + _p_opt_lines(d)
    lines += _top_lines(a, table, top, d["n_matrices"]) + _per_layer_lines(a)
    return "\n".join(lines)


def short_reason(note: str, gqa: str = "", limit: int = 110) -> str:
    """A coverage note on one short line: without the grouped-query explanation ``gqa`` (which says
    how the heads are formed, not why the bound fails), cut to ``limit`` characters.

    >>> short_reason("a; rotary position embeddings: one form per offset", gqa="a")
    'rotary position embeddings: one form per offset'
    """
    if gqa and note.startswith(gqa):
        note = note[len(gqa) :].lstrip("; ")
    return note if len(note) <= limit else note[: limit - 3].rstrip() + "..."


def _no_bound_lines(a, d: dict) -> list[str]:
    """The label of a spectra-only report and one short line per uncovered kind."""
    gqa = (a.weights.coverage or {}).get("V")
    gqa = gqa.note if gqa is not None else ""
    lines = [
        f"SPECTRA ONLY, NO BOUND: the papers' bound does not cover every block of this {d['family']} "
        f"model, so genbound gives no bound value for it; not covered:",
    ]
    lines += [f"  {kind:6s} {short_reason(note, gqa)}" for kind, note in a.reasons.items()]
    lines.append("  (each reason in full: --json 'uncovered', or the note column of --csv)")
    if a.n_samples is not None:
        lines.append(
            f"--n-samples {a.n_samples}: no bound exists for this model, so there is no gap "
            f"estimate at n = {a.n_samples} and no sample size from which one is not vacuous"
        )
    return lines


def spectra_only_report(a, d: dict, table, *, verbose: bool = False) -> str:
    """The text ``genbound analyze`` prints for a model the papers' bound does not cover: the label
    and one line per uncovered kind first, then every matrix's spectral quantities (``verbose``: with
    the device, the wall time and each matrix's spectrum route)."""
    experts = f", {d['experts']} experts" if d["experts"] else ""
    run = f"; device {d['device']}; {d['seconds']:.2f} s" if verbose else ""
    lines = _no_bound_lines(a, d) + [
        f"{d['source']}: {d['family']}, {d['layers']} layers, hidden {d['hidden']}, {d['heads']} "
        f"heads ({d['kv_heads']} key/value), d_head {d['d_head']}, d_ff {d['d_ff']}{experts}; "
        f"{d['n_matrices']} matrices{run}",
        *identity_lines(d["checkpoint"]),
        "per-matrix spectra (covered = whether the papers' bound describes the block):",
        table_text(table.drop(columns=["note"] if verbose else ["note", "route"])),
    ]
    return "\n".join(lines)
