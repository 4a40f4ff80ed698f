"""The statistics of Part V on a family table. Book: :ref:`ch-predict-gap`.

Every statistic is one of :mod:`genbound.experiments.ranking` (definitions there and in the chapter),
computed over the **fitted** models on which the measure is defined (the Edelman-type capacities: the
depth-1 models). The axes are the columns of ``AXES`` that take
at least two values among the fitted models (:func:`~genbound.experiments.predict_gap.axes_of`).

Intervals are a cluster bootstrap over seed indices
(:func:`~genbound.experiments.predict_gap.psi_bootstrap`): a replicate draws the seed indices with
replacement (numpy's ``default_rng(seed).choice``, as :func:`~genbound.experiments.ranking.cluster_bootstrap`
does) and treats each draw as a new cluster.
Because every group of :func:`~genbound.experiments.ranking.psi` lies inside one seed index and
:func:`~genbound.experiments.ranking.kendall_tau` is a sum over pairs, a replicate's ``psi`` and ``tau``
are exact weighted sums of per-seed (and per-seed-pair) terms, with weights the number of times each
seed index was drawn; :func:`~genbound.experiments.predict_gap.psi_bootstrap` evaluates them that way
(a test checks equality with ``cluster_bootstrap`` on the resampled tables).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .. import ranking as rk
from .family import AXES
from .measures import MEASURES

__all__ = ["axes_of", "fitted_models", "measure_frame", "psi_bootstrap", "measure_stats", "measure_table",
           "paired_gap_changes", "summary", "REFERENCE"]

#: The measure every other is compared with (Jiang et al.'s weakest baseline).
REFERENCE = "n_params"


def fitted_models(df):
    """The rows of ``df`` that reached the stopping criterion."""
    return df[df["fitted"].astype(bool)]


def axes_of(df) -> list[str]:
    """The columns of ``AXES`` with at least two distinct values in ``df``."""
    return [a for a in AXES if a in df.columns and df[a].nunique() >= 2]


def measure_frame(fit, measure: str):
    """The fitted models on which ``measure`` is defined (finite)."""
    return fit[np.isfinite(fit[measure].to_numpy(float))]


def _without(axes: Sequence[str], name: str = "n_train") -> list[str]:
    return [a for a in axes if a != name]


def _seed_weights(seeds: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """``(n_boot, len(seeds))``: how often each seed index is drawn in each replicate."""
    rng = np.random.default_rng(seed)
    W = np.zeros((n_boot, len(seeds)))
    for b in range(n_boot):
        draw = rng.choice(seeds, size=len(seeds), replace=True)
        W[b] = np.bincount(np.searchsorted(seeds, draw), minlength=len(seeds))
    return W


def _psi_terms(df, measure: str, axes: Sequence[str], seeds: np.ndarray):
    """Per axis: per seed index the sum of the groups' taus and their number (``psi``'s groups)."""
    out = {}
    for a in axes:
        keys = ["task", "seed", *[b for b in axes if b != a]]
        S, N = np.zeros(len(seeds)), np.zeros(len(seeds))
        for k, g in df.groupby(keys, sort=True):
            if len(g) >= 2:
                i = int(np.searchsorted(seeds, k[1]))
                S[i] += rk.kendall_tau(g[measure], g["gap"])
                N[i] += 1
        out[a] = (S, N)
    return out


def _tau_terms(df, measure: str, seeds: np.ndarray):
    """Per task: the seed-pair matrix of ``sum sign(dmu) sign(dg)`` and the models per seed."""
    out = []
    for _, g in df.groupby("task", sort=True):
        mu, gg = g[measure].to_numpy(float), g["gap"].to_numpy(float)
        s = np.searchsorted(seeds, g["seed"].to_numpy())
        P = np.sign(mu[:, None] - mu[None]) * np.sign(gg[:, None] - gg[None])
        onehot = (s[:, None] == np.arange(len(seeds))[None]).astype(float)
        out.append((onehot.T @ P @ onehot, onehot.sum(0)))
    return out


def _psi_from_terms(terms, W, axes) -> np.ndarray:
    vals = []
    for a in axes:
        S, N = terms[a]
        num, den = W @ S, W @ N
        with np.errstate(invalid="ignore", divide="ignore"):
            vals.append(np.where(den > 0, num / np.where(den > 0, den, 1), np.nan))
    return _finite_mean(vals, W.shape[0])


def _finite_mean(vals, n: int) -> np.ndarray:
    """Per replicate, the mean of the finite entries of ``vals`` (a list of arrays; ``nan`` if none)."""
    if not vals:
        return np.full(n, np.nan)
    V = np.vstack(vals)
    ok = np.isfinite(V)
    cnt = ok.sum(0)
    return np.where(cnt > 0, np.where(ok, V, 0.0).sum(0) / np.maximum(cnt, 1), np.nan)


def _tau_from_terms(terms, W) -> np.ndarray:
    vals = []
    for M, n in terms:
        N = W @ n
        num = np.einsum("bs,st,bt->b", W, M, W)
        vals.append(np.where(N >= 2, num / np.maximum(N * (N - 1), 1), np.nan))
    return _finite_mean(vals, W.shape[0])


def psi_bootstrap(fit, measures: Sequence[str], *, axes: Sequence[str], n_boot: int = 1000, seed: int = 0,
                  seeds: Sequence[int] | None = None) -> dict:
    """Cluster-bootstrap replicates (seed indices resampled, see the module docstring) of ``tau``,
    ``psi`` over ``axes`` and ``psi`` without ``n_train`` for each measure, each on the fitted models
    where it is defined; every measure sees the same draws (so differences of replicates are replicates
    of differences). ``seeds``: the seed indices drawn from (default: those of ``fit``). Returns
    ``{measure: {"tau": array, "psi": array, "psi_without_n_train": array}}`` of length ``n_boot``."""
    seeds = np.sort(np.asarray(fit["seed"].unique() if seeds is None else seeds))
    W = _seed_weights(seeds, n_boot, seed)
    out = {}
    for m in measures:
        d = measure_frame(fit, m)
        terms = _psi_terms(d, m, axes, seeds)
        out[m] = {"tau": _tau_from_terms(_tau_terms(d, m, seeds), W),
                  "psi": _psi_from_terms(terms, W, list(axes)),
                  "psi_without_n_train": _psi_from_terms(terms, W, _without(axes))}
    return out


def _interval(v, level: float = 0.95) -> list[float]:
    v = np.asarray(v, float)
    v = v[np.isfinite(v)]
    if not len(v):
        return [math.nan, math.nan]
    return [float(np.quantile(v, (1 - level) / 2)), float(np.quantile(v, (1 + level) / 2))]


def measure_stats(fit, measure: str, *, axes: Sequence[str], simpson: bool = True) -> dict:
    """The point statistics of one measure on the fitted models where it is defined: ``tau_per_task``,
    ``tau``, ``psi``, ``psi_per_axis``, ``psi_without_n_train``, ``psi_seed`` (the seed view,
    :func:`~genbound.experiments.ranking.psi_seed`), ``cmi`` (and its ``cmi_argmin``), ``sign_error``
    (all environments and beyond noise), ``simpson`` (``None`` with ``simpson=False``) and ``n_models``."""
    d = measure_frame(fit, measure)
    ps = rk.psi(d, measure, axes=axes, leave_out="n_train")
    c = rk.cmi(d, measure, axes=axes)
    se = rk.sign_error(d, measure, axes=axes, se="test_se")
    return {"n_models": int(len(d)), "tau_per_task": rk.tau_per_task(d, measure), "tau": rk.tau(d, measure),
            "psi": ps["psi"], "psi_per_axis": ps["per_axis"], "psi_without_n_train": ps["psi_without"],
            "psi_seed": rk.psi_seed(d, measure, axes=axes)["psi_seed"],
            "cmi": c["cmi"], "cmi_argmin": c["argmin"], "sign_error": se,
            "simpson": rk.simpson_check(d, measure, by=[*axes, "task"]) if simpson else None}


def measure_table(df, measures: Sequence[str] = MEASURES, *, n_boot: int = 1000, seed: int = 0):
    """One row per measure over the fitted models of ``df``: ``n_models``, ``tau`` (+ ``tau_lo``,
    ``tau_hi``), ``psi`` (+ interval), ``psi_wo`` (without ``n_train``, + interval), ``d_psi`` and
    ``d_psi_wo`` (the measure's minus ``REFERENCE``'s, on the models where the measure is defined,
    + intervals), ``cmi``, ``se_mean``, ``se_p90``, ``se_max`` (sign error over all environments) and
    ``se_bn_*`` (beyond noise), one ``psi_<axis>`` per axis and one ``tau_<task>`` per task. Returns
    ``(table, replicates)`` (the bootstrap replicates of :func:`psi_bootstrap`)."""
    import pandas as pd

    fit = fitted_models(df)
    axes = axes_of(fit)
    reps = psi_bootstrap(fit, list(dict.fromkeys([*measures, REFERENCE])), axes=axes, n_boot=n_boot, seed=seed)
    rows = []
    ref_all = measure_stats(fit, REFERENCE, axes=axes)
    for m in measures:
        st = measure_stats(fit, m, axes=axes)
        d = measure_frame(fit, m)
        if len(d) != len(fit):        # the reference on the measure's own models (same draws)
            ref = measure_stats(d, REFERENCE, axes=axes)
            ref_reps = psi_bootstrap(d, [REFERENCE], axes=axes, n_boot=n_boot, seed=seed,
                                     seeds=fit["seed"].unique())[REFERENCE]
        else:
            ref, ref_reps = ref_all, reps[REFERENCE]
        r = reps[m]
        row = {"measure": m, "n_models": st["n_models"], "tau": st["tau"], "psi": st["psi"],
               "psi_wo": st["psi_without_n_train"], "cmi": st["cmi"],
               "d_psi": st["psi"] - ref["psi"], "d_psi_wo": st["psi_without_n_train"] - ref["psi_without_n_train"]}
        row["tau_lo"], row["tau_hi"] = _interval(r["tau"])
        row["psi_lo"], row["psi_hi"] = _interval(r["psi"])
        row["psi_wo_lo"], row["psi_wo_hi"] = _interval(r["psi_without_n_train"])
        row["d_psi_lo"], row["d_psi_hi"] = _interval(r["psi"] - ref_reps["psi"])
        row["d_psi_wo_lo"], row["d_psi_wo_hi"] = _interval(r["psi_without_n_train"] - ref_reps["psi_without_n_train"])
        for k, v in (("se", st["sign_error"]["all"]), ("se_bn", st["sign_error"]["beyond_noise"])):
            row.update({f"{k}_mean": v["mean"], f"{k}_p90": v["p90"], f"{k}_max": v["max"]})
        row.update({f"psi_{a}": st["psi_per_axis"].get(a, math.nan) for a in axes})
        row.update({f"tau_{t}": v for t, v in st["tau_per_task"].items()})
        row["simpson_reversed"] = ", ".join(v for v, s in st["simpson"]["by"].items() if s["reversed"])
        rows.append(row)
    return pd.DataFrame(rows).set_index("measure"), reps


def paired_gap_changes(df, axes: Sequence[str] | None = None):
    """Per axis (and task): the change in gap between coupled fitted models (same task, seed index and
    every other axis) at consecutive levels of the axis (higher minus lower level), pooled over level
    pairs: ``n_pairs``, ``mean``, ``se`` (standard deviation / sqrt(n)), ``mean_abs``, ``test_se`` (the
    mean test-set standard error of the models involved) and ``ratio = |mean| / test_se``."""
    import pandas as pd

    fit = fitted_models(df)
    axes = axes_of(fit) if axes is None else list(axes)
    rows = []
    for a in axes:
        others = ["task", "seed", *[b for b in axes if b != a]]
        for task in [*sorted(fit["task"].unique()), "all"]:
            sub = fit if task == "all" else fit[fit["task"] == task]
            d, s = [], []
            for _, g in sub.groupby(others, sort=True):
                g = g.sort_values(a)
                gv, ev = g["gap"].to_numpy(float), g["test_se"].to_numpy(float)
                d.extend(np.diff(gv))
                s.extend(0.5 * (ev[1:] + ev[:-1]))
            d = np.asarray(d)
            n = len(d)
            mean = float(d.mean()) if n else math.nan
            se = float(d.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
            tse = float(np.mean(s)) if n else math.nan
            rows.append({"axis": a, "task": task, "n_pairs": n, "mean": mean, "se": se,
                         "mean_abs": float(np.abs(d).mean()) if n else math.nan, "test_se": tse,
                         "ratio": abs(mean) / tse if n and tse > 0 else math.nan})
    return pd.DataFrame(rows)


def _num(x):
    return float(x) if x is not None and math.isfinite(float(x)) else None


def summary(df, *, csv_path=None, n_boot: int = 1000, measures: Sequence[str] = MEASURES) -> dict:
    """The JSON object of ``genbound experiment predict-gap --saved --json``: ``{n_models, n_fitted,
    tasks, hyperparameters, csv, measures: {name: {tau, tau_per_task, tau_ci, psi, psi_ci,
    psi_without_n_train, psi_per_axis, cmi, sign_error_mean, sign_error_p90, sign_error_max}}}``
    (undefined values are ``None``; the sign errors are over all environments)."""
    fit = fitted_models(df)
    axes = axes_of(fit)
    reps = psi_bootstrap(fit, measures, axes=axes, n_boot=n_boot)
    out = {"n_models": int(len(df)), "n_fitted": int(len(fit)), "tasks": sorted(set(df["task"])),
           "hyperparameters": axes, "csv": str(csv_path) if csv_path is not None else None, "measures": {}}
    for m in measures:
        st = measure_stats(fit, m, axes=axes)
        se = st["sign_error"]["all"]
        out["measures"][m] = {
            "tau": _num(st["tau"]), "tau_per_task": {t: _num(v) for t, v in st["tau_per_task"].items()},
            "tau_ci": [_num(v) for v in _interval(reps[m]["tau"])], "psi": _num(st["psi"]),
            "psi_ci": [_num(v) for v in _interval(reps[m]["psi"])],
            "psi_without_n_train": _num(st["psi_without_n_train"]),
            "psi_per_axis": {a: _num(v) for a, v in st["psi_per_axis"].items()}, "cmi": _num(st["cmi"]),
            "sign_error_mean": _num(se["mean"]), "sign_error_p90": _num(se["p90"]), "sign_error_max": _num(se["max"])}
    return out
