"""What the chapter shows of the statistics: tables of strings that fit the column, shares, figures.
Book: :ref:`ch-predict-gap`.

>>> fmt(0.1234), fmt(float("nan")), interval(0.1, -0.05, 0.25)
('+0.12', '—', '+0.10 [−0.05, +0.25]')
"""

from __future__ import annotations

import math
from typing import Sequence

from .. import ranking as rk
from .statistics import fitted_models, measure_frame

__all__ = [
    "DASH",
    "fmt",
    "fmt_p",
    "interval",
    "rank_table",
    "noise_table",
    "null_table",
    "stratified_taus",
    "trivial_shares",
    "plot_measures_vs_gap",
    "plot_psi_heatmap",
    "verdict_table",
]

#: What an undefined entry shows.
DASH = "—"


def fmt(x, digits: int = 2) -> str:
    """``x`` with a sign and ``digits`` decimals (a true minus sign), or ``DASH`` when undefined."""
    if x is None or not math.isfinite(float(x)):
        return DASH
    s = f"{float(x):+.{digits}f}"
    return s.replace("-", "\u2212")


def interval(est, lo, hi, digits: int = 2) -> str:
    """``est [lo, hi]`` formatted by :func:`fmt` (``DASH`` when ``est`` is undefined)."""
    if est is None or not math.isfinite(float(est)):
        return DASH
    return f"{fmt(est, digits)} [{fmt(lo, digits)}, {fmt(hi, digits)}]"


def _mark(est, lo, hi, beyond: bool, digits: int = 2) -> str:
    """:func:`interval`, followed by ``*`` when the estimate is beyond the null's percentile."""
    txt = interval(est, lo, hi, digits)
    return txt + " *" if beyond and txt != DASH else txt


def rank_table(tab, measures: Sequence[str] | None = None):
    """The rank correlations of :func:`~genbound.experiments.predict_gap.measure_table` as strings:
    ``n``, ``Psi`` (``m``-dependent measures only), ``Psi`` with the training-set size fixed and
    ``psi_seed``, each with its 95% interval and ``*`` when beyond the null's 95th percentile."""
    import pandas as pd

    t = tab if measures is None else tab.loc[list(measures)]
    return pd.DataFrame(
        {
            "n": t["n_models"].astype(int).astype(str),
            "Psi [95%]": [_mark(r.psi, r.psi_lo, r.psi_hi, r.beyond_psi) for r in t.itertuples()],
            "Psi, n fixed [95%]": [
                _mark(r.psi_wo, r.psi_wo_lo, r.psi_wo_hi, r.beyond_psi_wo) for r in t.itertuples()
            ],
            "psi_seed [95%]": [
                _mark(r.psi_seed, r.psi_seed_lo, r.psi_seed_hi, r.beyond_psi_seed)
                for r in t.itertuples()
            ],
        },
        index=t.index,
    )


def noise_table(tab, measures: Sequence[str] | None = None):
    """The other scores of :func:`~genbound.experiments.predict_gap.measure_table` as strings: ``K``
    (conditional mutual information; ``m``-dependent measures only, ``*`` beyond the null) and the
    difference from the best hyperparameter-only baseline in ``Psi`` with the training-set size fixed,
    with its interval. (The sign error over environments stays in the table's columns but is not
    shown: the family's environments hold too few coupled pairs for it, as the chapter says.)"""
    import pandas as pd

    t = tab if measures is None else tab.loc[list(measures)]
    return pd.DataFrame(
        {
            "K": [
                DASH
                if not math.isfinite(r.cmi)
                else f"{r.cmi:.3f}" + (" *" if r.beyond_cmi else "")
                for r in t.itertuples()
            ],
            "vs best baseline, n fixed": [
                interval(r.d_psi_wo, r.d_psi_wo_lo, r.d_psi_wo_hi) for r in t.itertuples()
            ],
        },
        index=t.index,
    )


def null_table(percentiles: dict):
    """The null's percentiles (95th; 5th for the sign errors) per model subset, as strings."""
    import pandas as pd

    return pd.DataFrame(
        {
            k: {
                s: (
                    f"{v:.3f}"
                    if s in ("cmi",)
                    else f"{v:+.3f}"
                    if not s.startswith("se")
                    else f"{v:.3f}"
                )
                for s, v in p.items()
            }
            for k, p in percentiles.items()
        }
    )


def stratified_taus(df, measures: Sequence[str], by: str):
    """Per measure, ``tau`` (mean over tasks) pooled and within each level of ``by`` over the fitted
    models where the measure is defined, and whether the sign reverses in every level
    (:func:`~genbound.experiments.ranking.simpson_check`). A DataFrame of floats (``reversed`` bool)."""
    import pandas as pd

    fit = fitted_models(df)
    rows = {}
    for m in measures:
        d = measure_frame(fit, m)
        s = rk.simpson_check(d, m, by=[by])["by"][by]
        row = {"pooled": s["pooled"], **{f"{by}={k}": v for k, v in s["levels"].items()}}
        row["reversed"] = s["reversed"]
        rows[m] = row
    return pd.DataFrame(rows).T


def trivial_shares(df) -> dict:
    """Over the fitted models: the share whose certified bound (Trauger-Tewari, Edelman-type on depth
    1) is the trivial cap, the share whose proxy estimate ``capacity / sqrt(m)`` is at least 1
    (spectrum-adaptive, Edelman proxy), and the share whose spectrum-adaptive choice is ``p = 0``
    for every matrix (``sa_all_p0``). Values in ``[0, 1]``; ``n`` counts the models of each share."""
    fit = fitted_models(df)
    d1 = fit[fit["depth"] == 1]
    return {
        "tt": float(fit["tt_trivial"].mean()),
        "edelman": float(d1["edelman_trivial"].mean()),
        "sa": float(fit["sa_trivial"].mean()),
        "edproxy": float(fit["edproxy_trivial"].mean()),
        "sa_all_p0": float(fit["sa_all_p0"].mean()),
        "n": int(len(fit)),
        "n_depth1": int(len(d1)),
    }


def plot_measures_vs_gap(df, measures: Sequence[str], *, height_per_row: float = 1.9):
    """One row of panels per measure and one column per task and training-set size ``m``: the measure
    (linear axis: several measures are already logs) against the gap, one dot per fitted model, colour
    by label noise, marker by depth, marker size by width; the panel's ``m`` and ``tau`` in its title
    (within one training-set size, so a ``1/sqrt(m)`` factor cannot help). Returns the figure (tick
    labels fitted by ``genbound.plotting.fit_tick_labels``)."""
    from matplotlib.ticker import MaxNLocator

    from ... import plotting

    fit = fitted_models(df)
    cols = [
        (t, n)
        for t in sorted(fit["task"].unique())
        for n in sorted(fit.loc[fit["task"] == t, "n_train"].unique())
    ]
    fig, axes = plotting.new_axes(
        len(cols), len(measures), height=height_per_row * len(measures), sharey=False, squeeze=False
    )
    noise = sorted(fit["label_noise"].unique()) if "label_noise" in fit else [0.0]
    colours = {q: f"C{k}" for k, q in enumerate(noise)}
    markers = {1: "o", 2: "^"}
    widths = sorted(fit["width"].unique())
    size = {w: 3.0 * (k + 1) for k, w in enumerate(widths)}
    for i, m in enumerate(measures):
        d = measure_frame(fit, m)
        for j, (task, n) in enumerate(cols):
            ax = axes[i, j]
            sub = d[(d["task"] == task) & (d["n_train"] == n)]
            for (q, depth, w), g in sub.groupby(["label_noise", "depth", "width"]):
                ax.scatter(
                    g[m],
                    g["gap"],
                    s=size[w],
                    alpha=0.5,
                    color=colours.get(q, "C9"),
                    marker=markers.get(depth, "s"),
                    label=f"noise {q:g}, depth {depth}, width {w}",
                    linewidths=0,
                )
            tau_v = rk.kendall_tau(sub[m], sub["gap"]) if len(sub) >= 2 else math.nan
            ax.set_title(f"{task[:6]} m={n}\ntau {fmt(tau_v)}", fontsize=6)
            ax.tick_params(which="both", labelsize=6)
            ax.xaxis.set_major_locator(
                MaxNLocator(3)
            )  # a linear axis over a wide range: few, short labels
            ax.ticklabel_format(axis="x", style="sci", scilimits=(-2, 3))
            if j == 0:
                ax.set_ylabel(f"gap\n{m}", fontsize=6)
    axes[0, 0].legend(fontsize=3, loc="best")
    fig.tight_layout()
    plotting.fit_tick_labels(fig)
    fig.tight_layout()  # again: the labels fit_tick_labels kept set the spacing
    return fig


#: Short axis names for narrow panels.
_SHORT = {"label_noise": "noise", "input_flip": "flip", "n_train": "m", "init_scale": "init"}


def plot_psi_heatmap(tables: dict, measures: Sequence[str], axes: Sequence[str]):
    """One panel per entry of ``tables`` (a label, say a task or "pooled", to a
    :func:`~genbound.experiments.predict_gap.measure_table`): ``psi_a`` of each measure (rows) on each
    axis (columns), coloured on ``[-1, 1]`` (red negative, blue positive), the value written in each
    cell (no colour bar: the numbers are the scale); an undefined cell is grey and shows ``DASH``. Returns the figure (tick labels fitted by
    ``genbound.plotting.fit_tick_labels``)."""
    import numpy as np

    from ... import plotting

    fig, panels = plotting.new_axes(
        len(tables), 1, height=0.28 * len(measures) + 1.2, squeeze=False
    )
    for k, (label, tab) in enumerate(tables.items()):
        ax = panels[0, k]
        V = np.array([[float(tab.loc[m, f"psi_{a}"]) for a in axes] for m in measures], dtype=float)
        img = ax.imshow(np.ma.masked_invalid(V), cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
        img.cmap.set_bad("0.85")
        for i in range(len(measures)):
            for j in range(len(axes)):
                dark = np.isfinite(V[i, j]) and abs(V[i, j]) > 0.6
                ax.text(
                    j,
                    i,
                    fmt(V[i, j]),
                    ha="center",
                    va="center",
                    fontsize=5,
                    color="white" if dark else "black",
                )
        ax.set_xticks(range(len(axes)))
        ax.set_xticklabels([_SHORT.get(a, a) for a in axes], fontsize=6)
        ax.set_yticks(range(len(measures)))
        if k == 0:
            ax.set_yticklabels(list(measures))
        else:
            ax.tick_params(labelleft=False)
        ax.tick_params(labelsize=6)
        ax.grid(False)
        ax.set_title(str(label), fontsize=7)
    fig.tight_layout()
    plotting.fit_tick_labels(fig)
    fig.tight_layout()
    return fig


def fmt_p(p) -> str:
    """A p-value for prose and tables: ``< 1e-6`` below 1e-6, one significant digit below 0.001,
    else two (``DASH`` when undefined).

    >>> fmt_p(4.97e-11), fmt_p(0.0), fmt_p(0.00034), fmt_p(0.0551), fmt_p(1.0)
    ('< 1e-6', '< 1e-6', '0.0003', '0.055', '1')
    """
    if p is None or not math.isfinite(float(p)):
        return DASH
    p = float(p)
    if p < 1e-6:
        return "< 1e-6"
    return f"{p:.1g}" if p < 1e-3 else f"{p:.2g}"


def _verdict_key(question: str, test: str) -> str:
    """The row of a registered test in :func:`verdict_table`: the test itself, except the oracle rows,
    whose measures are chosen per table (keyed by the statistic, the chosen names in the cell)."""
    if question == "oracle":
        return f"best of the weights - best baseline ({test.rsplit('(', 1)[1]}"
    return test


def verdict_table(tests: dict):
    """The registered tests of :func:`~genbound.experiments.predict_gap.verdict_tests` side by side:
    ``tests`` maps a label (a task, "pooled") to that table; one row per test, one column per label,
    each cell ``estimate [95%]`` and ``p`` adjusted by Holm within that label's table, ``(r)`` where
    the adjusted ``p`` is at most 0.05; the oracle rows name the chosen measures. A DataFrame of
    strings indexed by ``(question, test)``."""
    import pandas as pd

    cols = {}
    for label, t in tests.items():
        cells = {}
        for r in t.itertuples():
            txt = f"{interval(r.estimate, r.lo, r.hi)}, p {fmt_p(r.p_holm)}" + (
                " (r)" if r.reject else ""
            )
            if r.question == "oracle":
                txt = f"{r.test.split(' (')[0]}: {txt}"
            cells[(r.question, _verdict_key(r.question, r.test))] = txt
        cols[label] = cells
    out = pd.DataFrame(cols)
    out.index = pd.MultiIndex.from_tuples(out.index, names=["question", "test"])
    return out.fillna(DASH)
