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

__all__ = ["DASH", "fmt", "interval", "rank_table", "noise_table", "stratified_taus", "trivial_shares",
           "plot_measures_vs_gap"]

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


def rank_table(tab, measures: Sequence[str] | None = None):
    """The rank correlations of :func:`~genbound.experiments.predict_gap.measure_table` as strings:
    ``n``, ``tau``, ``Psi`` and ``Psi`` without ``n_train``, each with its 95% interval."""
    import pandas as pd

    t = tab if measures is None else tab.loc[list(measures)]
    return pd.DataFrame({
        "n": t["n_models"].astype(int).astype(str),
        "tau [95%]": [interval(r.tau, r.tau_lo, r.tau_hi) for r in t.itertuples()],
        "Psi [95%]": [interval(r.psi, r.psi_lo, r.psi_hi) for r in t.itertuples()],
        "Psi, n fixed [95%]": [interval(r.psi_wo, r.psi_wo_lo, r.psi_wo_hi) for r in t.itertuples()],
    }, index=t.index)


def noise_table(tab, measures: Sequence[str] | None = None):
    """The other scores of :func:`~genbound.experiments.predict_gap.measure_table` as strings: ``K``
    (conditional mutual information), the sign error over environments (mean / 90th percentile / max,
    all coupled pairs and pairs beyond noise), and ``Psi - Psi(n_params)`` with its interval."""
    import pandas as pd

    t = tab if measures is None else tab.loc[list(measures)]

    def se(r, k):
        vals = [getattr(r, f"{k}_{s}") for s in ("mean", "p90", "max")]
        return DASH if not math.isfinite(vals[0]) else " / ".join(f"{v:.2f}" for v in vals)

    return pd.DataFrame({
        "K": [DASH if not math.isfinite(r.cmi) else f"{r.cmi:.3f}" for r in t.itertuples()],
        "sign error": [se(r, "se") for r in t.itertuples()],
        "beyond noise": [se(r, "se_bn") for r in t.itertuples()],
        "Psi − Psi(n_params)": [interval(r.d_psi, r.d_psi_lo, r.d_psi_hi) for r in t.itertuples()],
    }, index=t.index)


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
    return {"tt": float(fit["tt_trivial"].mean()), "edelman": float(d1["edelman_trivial"].mean()),
            "sa": float(fit["sa_trivial"].mean()), "edproxy": float(fit["edproxy_trivial"].mean()),
            "sa_all_p0": float(fit["sa_all_p0"].mean()), "n": int(len(fit)), "n_depth1": int(len(d1))}


def plot_measures_vs_gap(df, measures: Sequence[str], *, ncols: int = 2, height_per_row: float = 2.3):
    """One panel per measure: the measure (log scale when positive) against the gap, one dot per fitted
    model, colour by task and marker by depth; ``tau`` per task in the title. Returns the figure
    (tick labels fitted by ``genbound.plotting.fit_tick_labels``)."""
    from ... import plotting

    fit = fitted_models(df)
    nrows = math.ceil(len(measures) / ncols)
    fig, axes = plotting.new_axes(ncols, nrows, height=height_per_row * nrows, sharey=True, squeeze=False)
    colours = {"sparse-majority": "C0", "digits": "C1"}
    markers = {1: "o", 2: "^"}
    for ax, m in zip(axes.ravel(), measures):
        d = measure_frame(fit, m)
        for (task, depth), g in d.groupby(["task", "depth"]):
            ax.scatter(g[m], g["gap"], s=6, alpha=0.5, color=colours.get(task, "C2"), marker=markers.get(depth, "s"),
                       label=f"{task}, depth {depth}", linewidths=0)
        if len(d) and (d[m] > 0).all():
            ax.set_xscale("log")
        taus = rk.tau_per_task(d, m) if len(d) else {}
        ax.set_title(", ".join(f"{t[:6]} {fmt(v)}" for t, v in taus.items()), fontsize=7)
        ax.set_xlabel(m, fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes.ravel()[len(measures):]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("gap", fontsize=8)
    axes.ravel()[0].legend(fontsize=5, loc="best")
    fig.tight_layout()
    return plotting.fit_tick_labels(fig)
