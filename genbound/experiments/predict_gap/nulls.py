"""Null distributions of the ranking statistics. Book: :ref:`ch-predict-gap`.

A score means something only beyond what a measure that knows nothing would get. A **random measure**
gives every fitted model an independent standard normal value (numpy's ``default_rng(seed)``, one
draw per replicate); :func:`null_statistics` computes every statistic of
:func:`~genbound.experiments.predict_gap.measure_stats` for ``n_null`` such measures on the same
models, and :func:`null_percentiles` summarises them: for the statistics where larger is better
(``tau``, ``psi``, ``psi_wo``, ``psi_seed``, the conditional mutual information ``cmi``) the 95th
percentile, for the sign errors (smaller is better) the 5th. A real measure's value beyond that
percentile is beyond the null at the 5 % level (one-sided, one statistic at a time).
"""

from __future__ import annotations

import numpy as np

__all__ = ["NULL_STATS", "LOWER_IS_BETTER", "null_statistics", "null_percentiles", "beyond_null"]

#: The statistics that get a null, in table order.
NULL_STATS = ("tau", "psi", "psi_wo", "psi_seed", "cmi", "se_mean", "se_p90", "se_max")
#: Those where a smaller value is the better one.
LOWER_IS_BETTER = ("se_mean", "se_p90", "se_max")


def null_statistics(fit, *, axes, n_null: int = 200, seed: int = 0):
    """``n_null`` rows, one per random measure, with the columns ``NULL_STATS``, on the fitted models
    ``fit`` (the statistics of :func:`~genbound.experiments.predict_gap.measure_stats`)."""
    import pandas as pd

    from .statistics import measure_stats

    rng = np.random.default_rng(seed)
    rows = []
    work = fit.copy()
    for _ in range(int(n_null)):
        work["_random"] = rng.standard_normal(len(work))
        st = measure_stats(work, "_random", axes=axes, simpson=False)
        se = st["sign_error"]["all"]
        rows.append({"tau": st["tau"], "psi": st["psi"], "psi_wo": st["psi_without_n_train"],
                     "psi_seed": st["psi_seed"], "cmi": st["cmi"], "se_mean": se["mean"], "se_p90": se["p90"],
                     "se_max": se["max"]})
    return pd.DataFrame(rows, columns=list(NULL_STATS))


def null_percentiles(null) -> dict:
    """Per statistic of ``NULL_STATS``: the 95th percentile of the null (the 5th for the sign errors)."""
    return {k: float(np.nanpercentile(null[k], 5 if k in LOWER_IS_BETTER else 95)) for k in NULL_STATS}


def beyond_null(value: float, stat: str, percentiles: dict) -> bool:
    """Whether ``value`` of statistic ``stat`` lies beyond the null's percentile (strictly)."""
    cut = percentiles[stat]
    return bool(value < cut) if stat in LOWER_IS_BETTER else bool(value > cut)
