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

One concept: Part V's statistics of a family table (rank statistics, baselines, nulls, intervals).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .. import ranking as rk
from .family import AXES
from .measures import MEASURES
from .baselines import hp_baselines
from ...errors import GenboundError
from .baselines import baseline_names
from .nulls import NULL_STATS, RankingIndex, beyond_null, null_statistics, null_percentiles

__all__ = [
    "axes_of",
    "fitted_models",
    "measure_frame",
    "psi_bootstrap",
    "measure_stats",
    "measure_table",
    "paired_gap_changes",
    "summary",
    "m_dependent",
    "family_frame",
    "balanced_models",
    "bootstrap_p",
    "null_p",
    "normal_p",
    "present_baselines",
]


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


def _seed_view_terms(df, measure: str, axes: Sequence[str], seeds: np.ndarray):
    """Per setting (task and every axis): the seed-pair matrix of ``sign(dmu) sign(dg)`` (zero diagonal)
    and the presence vector of its seed indices (the terms of ``psi_seed``)."""
    out = []
    for _, g in df.groupby(["task", *axes], sort=True):
        if len(g) < 2:
            continue
        s = np.searchsorted(seeds, g["seed"].to_numpy())
        mu, gg = g[measure].to_numpy(float), g["gap"].to_numpy(float)
        P = np.zeros((len(seeds), len(seeds)))
        P[np.ix_(s, s)] = np.sign(mu[:, None] - mu[None]) * np.sign(gg[:, None] - gg[None])
        e = np.zeros(len(seeds))
        e[s] = 1.0
        out.append((P, e))
    return out


def _psi_seed_from_terms(terms, W) -> np.ndarray:
    """Per replicate (rows of the seed weights ``W``): the mean over settings of the within-setting tau
    (ordered pairs of distinct draws; the copies of a seed drawn twice are two draws that tie, as in
    :func:`~genbound.experiments.ranking.cluster_bootstrap`, so they count in the denominator at sign 0)."""
    vals = []
    for P, e in terms:
        we = W * e[None]
        num = np.einsum("bs,st,bt->b", we, P, we)
        den = we.sum(1) ** 2 - we.sum(1)
        vals.append(np.where(den > 0, num / np.where(den > 0, den, 1), np.nan))
    return _finite_mean(vals, W.shape[0])


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


def psi_bootstrap(
    fit,
    measures: Sequence[str],
    *,
    axes: Sequence[str],
    n_boot: int = 1000,
    seed: int = 0,
    seeds: Sequence[int] | None = None,
) -> dict:
    """Cluster-bootstrap replicates (seed indices resampled, see the module docstring) of ``tau``,
    ``psi`` over ``axes`` and ``psi`` without ``n_train`` for each measure, each on the fitted models
    where it is defined; every measure sees the same draws (so differences of replicates are replicates
    of differences). ``seeds``: the seed indices drawn from (default: those of ``fit``). Returns
    ``{measure: {"tau": array, "psi": array, "psi_without_n_train": array, "psi_seed": array}}`` of
    length ``n_boot``."""
    seeds = np.sort(np.asarray(fit["seed"].unique() if seeds is None else seeds))
    W = _seed_weights(seeds, n_boot, seed)
    out = {}
    for m in measures:
        d = measure_frame(fit, m)
        terms = _psi_terms(d, m, axes, seeds)
        out[m] = {
            "tau": _tau_from_terms(_tau_terms(d, m, seeds), W),
            "psi": _psi_from_terms(terms, W, list(axes)),
            "psi_without_n_train": _psi_from_terms(terms, W, _without(axes)),
            "psi_seed": _psi_seed_from_terms(_seed_view_terms(d, m, axes, seeds), W),
        }
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
    return {
        "n_models": int(len(d)),
        "tau_per_task": rk.tau_per_task(d, measure),
        "tau": rk.tau(d, measure),
        "psi": ps["psi"],
        "psi_per_axis": ps["per_axis"],
        "psi_without_n_train": ps["psi_without"],
        "psi_seed": rk.psi_seed(d, measure, axes=axes)["psi_seed"],
        "cmi": c["cmi"],
        "cmi_argmin": c["argmin"],
        "sign_error": se,
        "simpson": rk.simpson_check(d, measure, by=[*axes, "task"]) if simpson else None,
    }


def m_dependent(measure: str) -> bool:
    """Whether ``measure`` contains the training-set size ``m``: the ``/sqrt(m)`` forms and the
    hyperparameter baselines that know ``m``. The others are ``m``-free: trained norms grow with ``m``
    while the gap falls, so an ``m``-free measure is ranked only with ``m`` held fixed (``psi_wo`` and
    ``psi_seed``); its ``tau``, ``psi``, ``cmi`` and sign errors are left undefined in the tables."""
    return measure.endswith("sqrtm") or measure in ("inv_sqrt_m", "hp_n_train", "hp_oracle")


def family_frame(df):
    """The fitted models of ``df`` with the hyperparameter-only baselines
    (:func:`~genbound.experiments.predict_gap.hp_baselines`, fitted on the fitted models) as extra
    columns."""

    base = hp_baselines(df)
    return fitted_models(df.join(base))


def balanced_models(df, *, within: Sequence[str] = ("task",)):
    """The fitted models of the seed indices that fitted in **every** setting of their stratum (the
    columns ``within``, by default the task): a balanced sub-family (dropping unfitted models selects
    seeds along the axes; this subset does not, inside each stratum). Empty when no seed index fitted
    everywhere; a finer ``within`` (say the task, the label noise and the training-set size) then keeps
    the seeds balanced inside each of those strata."""
    axes = [a for a in AXES if a in df.columns]
    keep = set()
    for key, g in df.groupby(list(within), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        n_set = len(g[axes].drop_duplicates())
        ok = g.groupby("seed")["fitted"].agg(lambda v: bool(np.all(v)) and len(v) == n_set)
        keep.update((*key, s) for s in ok[ok].index)
    cols = [*within, "seed"]
    mask = [tuple(r) in keep for r in df[cols].itertuples(index=False, name=None)]
    return df[np.asarray(mask, bool)] if len(df) else df


_STAT_KEYS = ("tau", "psi", "psi_wo", "psi_seed")


def present_baselines(fit) -> list[str]:
    """Every hyperparameter-only baseline of the table ``fit``
    (``baseline_names``, read from the whole table);
    a :class:`~genbound.errors.GenboundError` naming the missing columns when ``fit`` lacks one (a
    baseline never drops out of the tables silently)."""

    names = baseline_names(fit)
    missing = [c for c in names if c not in fit.columns]
    if missing:
        raise GenboundError(
            f"the family table lacks the baseline columns {missing}: build it with family_frame"
        )
    return names


def _vs_best_baseline(tab, fit, names, baselines, reps, *, n_boot: int, seed: int) -> dict:
    """Fill ``best_<stat>`` and ``d_<stat>`` (with ``_lo``, ``_hi``) of ``tab`` for ``psi`` and
    ``psi_wo``: each measure minus the best hyperparameter-only baseline **on the measure's own models**
    (a depth-1-only measure against the baselines scored on the depth-1 models, chosen there), on the
    same seed draws. Returns the replicates of the differences, ``{(measure, stat): array}``."""
    key = {"psi": "psi", "psi_wo": "psi_without_n_train"}
    seeds = np.sort(fit["seed"].unique())
    on_set: dict = {}  # per set of models: the baselines' point values and replicates there
    out = {}
    for m in names:
        d = measure_frame(fit, m)
        k = tuple(d.index)
        if k not in on_set:
            if len(d) == len(fit):
                pts = {b: {s: tab.loc[b, s] for s in key} for b in baselines}
                on_set[k] = (pts, reps)
            else:
                ax = axes_of(d)
                r = psi_bootstrap(d, baselines, axes=ax, n_boot=n_boot, seed=seed, seeds=seeds)
                ps = {b: rk.psi(d, b, axes=ax) for b in baselines}
                pts = {
                    b: {
                        "psi": ps[b]["psi"] if m_dependent(b) else math.nan,
                        "psi_wo": ps[b]["psi_without"],
                    }
                    for b in baselines
                }
                on_set[k] = (pts, r)
        pts, r = on_set[k]
        for stat in key:
            cands = [b for b in baselines if np.isfinite(pts[b][stat])]
            best = max(cands, key=lambda b: pts[b][stat]) if cands else None
            ok = best is not None and np.isfinite(tab.loc[m, stat])
            diff = reps[m][key[stat]] - r[best][key[stat]] if ok else np.full(n_boot, np.nan)
            tab.loc[m, f"best_{stat}"] = best
            tab.loc[m, f"d_{stat}"] = tab.loc[m, stat] - pts[best][stat] if ok else math.nan
            tab.loc[m, f"d_{stat}_lo"], tab.loc[m, f"d_{stat}_hi"] = _interval(diff)
            out[(m, stat)] = diff
    return out


def measure_table(
    df,
    measures: Sequence[str] = MEASURES,
    *,
    n_boot: int = 1000,
    n_null: int = 200,
    seed: int = 0,
    fit=None,
):
    """One row per measure of ``measures`` and per hyperparameter-only baseline, over the fitted models of
    ``df`` (or the given ``fit``, a :func:`family_frame`): ``n_models``, ``m_free``
    (:func:`m_dependent`), ``tau``, ``psi``, ``psi_wo`` (the training-set size held fixed), ``psi_seed``
    (the seed view), each with a seed-bootstrap interval (``_lo``, ``_hi``); ``cmi``; the sign errors
    ``se_mean``, ``se_p90``, ``se_max`` over all environments; ``d_psi`` (``m``-dependent measures only)
    and ``d_psi_wo``: the measure minus the best hyperparameter-only baseline on that statistic, both on
    **the measure's own models** (for a depth-1-only measure, the baselines scored and chosen on the
    depth-1 models; the chosen one named in ``best_psi``, ``best_psi_wo``), with intervals from the
    same draws; for every statistic of
    ``NULL_STATS`` the flag ``beyond_<stat>`` (beyond the 95th,
    for sign errors below the 5th, percentile of ``n_null`` random measures on the same models); one
    ``psi_<axis>`` per axis. ``m``-free measures have ``tau``, ``psi``, ``cmi`` and sign errors ``nan``.
    A hyperparameter-only baseline has ``psi_seed`` 0 by definition (it is a function of the setting;
    its cross-fitted column differs between the two halves of the seed indices only through the split).
    Returns ``(table, extras)``, ``extras`` holding the bootstrap replicates (``reps``), those of the
    differences from the best baseline (``d_reps``, keyed ``(measure, stat)``), the null samples per
    model subset (``nulls``: ``"all"`` and ``"depth1"``) and their percentiles."""
    import pandas as pd

    fit = family_frame(df) if fit is None else fit
    axes = axes_of(fit)
    baselines = present_baselines(fit)
    names = list(dict.fromkeys([*measures, *baselines]))
    reps = psi_bootstrap(fit, names, axes=axes, n_boot=n_boot, seed=seed)
    subsets = {"all": fit}
    d1 = fit[fit["depth"] == 1]
    if any(len(measure_frame(fit, m)) != len(fit) for m in names):
        subsets["depth1"] = d1
    nulls = {
        k: null_statistics(v.reset_index(drop=True), axes=axes_of(v), n_null=n_null, seed=seed)
        for k, v in subsets.items()
    }
    pct = {k: null_percentiles(v) for k, v in nulls.items()}
    rows = []
    index = {}  # one RankingIndex per set of models
    for m in names:
        d = measure_frame(fit, m)
        sub = "all" if len(d) == len(fit) else "depth1"
        key = tuple(d.index)
        if key not in index:
            index[key] = RankingIndex(d.reset_index(drop=True), axes=axes_of(d))
        st = index[key].statistics(d[m].to_numpy(float))
        ps = rk.psi(d, m, axes=axes_of(d))
        row = {
            "measure": m,
            "n_models": int(len(d)),
            "m_free": not m_dependent(m),
            "null_subset": sub,
        }
        for k in ("tau", "psi", "psi_wo", "psi_seed"):
            rk_key = {"psi_wo": "psi_without_n_train"}.get(k, k)
            row[k] = st[k]
            row[f"{k}_lo"], row[f"{k}_hi"] = _interval(reps[m][rk_key])
        row.update({k: st[k] for k in ("cmi", "se_mean", "se_p90", "se_max")})
        for k in NULL_STATS:
            row[f"beyond_{k}"] = beyond_null(row[k], k, pct[sub]) if np.isfinite(row[k]) else False
        row.update({f"psi_{a}": ps["per_axis"].get(a, math.nan) for a in axes})
        if m in baselines:  # a function of the hyperparameters is constant within a setting: the
            for k in (
                "psi_seed",
                "psi_seed_lo",
                "psi_seed_hi",
            ):  # cross-fit's two halves are not, by design
                row[k] = 0.0
            row["beyond_psi_seed"] = False
        if row["m_free"]:
            for k in (
                "tau",
                "tau_lo",
                "tau_hi",
                "psi",
                "psi_lo",
                "psi_hi",
                "cmi",
                "se_mean",
                "se_p90",
                "se_max",
            ):
                row[k] = math.nan
            for k in ("tau", "psi", "cmi", "se_mean", "se_p90", "se_max"):
                row[f"beyond_{k}"] = False
        rows.append(row)
    tab = pd.DataFrame(rows).set_index("measure")
    d_reps = _vs_best_baseline(tab, fit, names, baselines, reps, n_boot=n_boot, seed=seed)
    return tab, {
        "reps": reps,
        "nulls": nulls,
        "null_percentiles": pct,
        "axes": axes,
        "baselines": baselines,
        "d_reps": d_reps,
    }


def bootstrap_p(diff) -> float:
    """The two-sided percentile-bootstrap p-value of a difference's replicates ``diff`` (``n`` finite):
    ``2 min(1 + #{diff <= 0}, 1 + #{diff >= 0}) / (n + 1)``, at most 1 (``nan`` without finite
    replicates); the ``+1`` keeps it above 0, its resolution being ``2 / (n + 1)``.

    >>> bootstrap_p(np.array([0.1, 0.2, -0.1, 0.3])), bootstrap_p(np.array([0.1, 0.2, 0.3]))
    (0.8, 0.5)
    """
    d = np.asarray(diff, float)
    d = d[np.isfinite(d)]
    if not len(d):
        return math.nan
    return float(min(1.0, 2 * (1 + min(np.sum(d <= 0), np.sum(d >= 0))) / (len(d) + 1)))


def normal_p(est: float, reps, *, two_sided: bool = True, null_mean: float = 0.0) -> float:
    """The p-value of ``est`` against a normal law with the standard deviation of the sample ``reps``
    (bootstrap replicates of a difference, or a null sample, then with its mean as ``null_mean``):
    two-sided ``2 (1 - Phi(|est - null_mean| / sd))`` or one-sided ``1 - Phi((est - null_mean) / sd)``.
    Unlike the empirical p-values (:func:`bootstrap_p`, :func:`null_p`), whose resolution is ``1 / n``,
    it can be small enough for Holm's adjustment over many tests; it assumes the statistic is close to
    normal (a mean over many pairs).

    >>> r = np.array([-1.0, 1.0]) / np.sqrt(2)          # standard deviation 1
    >>> round(normal_p(1.96, r), 3), round(normal_p(0.0, r, two_sided=False), 3)
    (0.05, 0.5)
    """
    from statistics import NormalDist

    v = np.asarray(reps, float)
    v = v[np.isfinite(v)]
    if len(v) < 2 or not math.isfinite(est):
        return math.nan
    sd = float(np.std(v, ddof=1))
    if sd == 0:
        return 1.0 if est == null_mean else 0.0
    z = (est - null_mean) / sd
    phi = NormalDist().cdf
    return float(2 * (1 - phi(abs(z)))) if two_sided else float(1 - phi(z))


def null_p(value: float, null, *, lower_is_better: bool = False) -> float:
    """The one-sided p-value of ``value`` against a null sample: ``(1 + #{null >= value}) / (1 + n)``
    (``<=`` when smaller is better).

    >>> null_p(0.5, np.array([0.1, 0.2, 0.6]))
    0.5
    """
    v = np.asarray(null, float)
    v = v[np.isfinite(v)]
    hits = np.sum(v <= value) if lower_is_better else np.sum(v >= value)
    return float((1 + hits) / (1 + len(v)))


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
            rows.append(
                {
                    "axis": a,
                    "task": task,
                    "n_pairs": n,
                    "mean": mean,
                    "se": se,
                    "mean_abs": float(np.abs(d).mean()) if n else math.nan,
                    "test_se": tse,
                    "ratio": abs(mean) / tse if n and tse > 0 else math.nan,
                }
            )
    return pd.DataFrame(rows)


def _num(x):
    return float(x) if x is not None and math.isfinite(float(x)) else None


def summary(
    df, *, csv_path=None, n_boot: int = 1000, n_null: int = 200, measures: Sequence[str] = MEASURES
) -> dict:
    """The JSON object of ``genbound experiment predict-gap --saved --json``: ``{n_models, n_fitted,
    tasks, hyperparameters, csv, baselines, null_percentiles, measures: {name: {...}}}`` with, per
    measure and per hyperparameter-only baseline, the columns of :func:`measure_table` (``tau``, ``psi``,
    ``psi_without_n_train``, ``psi_seed`` with ``_ci`` intervals, ``cmi``, ``sign_error_mean/p90/max``,
    ``m_free``, the differences from the best baseline with intervals, and the ``beyond_null`` flags);
    undefined values are ``None``."""
    tab, ex = measure_table(df, measures, n_boot=n_boot, n_null=n_null)
    fit = fitted_models(df)
    out = {
        "n_models": int(len(df)),
        "n_fitted": int(len(fit)),
        "tasks": sorted(set(df["task"])),
        "hyperparameters": ex["axes"],
        "csv": str(csv_path) if csv_path is not None else None,
        "baselines": ex["baselines"],
        "null_percentiles": {
            k: {s: _num(v) for s, v in p.items()} for k, p in ex["null_percentiles"].items()
        },
        "measures": {},
    }

    for m, r in tab.iterrows():
        out["measures"][m] = {
            "kind": "hyperparameter" if m in ex["baselines"] else "weights",
            "m_free": bool(r["m_free"]),
            "n_models": int(r["n_models"]),
            "tau": _num(r["tau"]),
            "tau_ci": [_num(r["tau_lo"]), _num(r["tau_hi"])],
            "psi": _num(r["psi"]),
            "psi_ci": [_num(r["psi_lo"]), _num(r["psi_hi"])],
            "psi_without_n_train": _num(r["psi_wo"]),
            "psi_without_n_train_ci": [_num(r["psi_wo_lo"]), _num(r["psi_wo_hi"])],
            "psi_seed": _num(r["psi_seed"]),
            "psi_seed_ci": [_num(r["psi_seed_lo"]), _num(r["psi_seed_hi"])],
            "psi_per_axis": {a: _num(r[f"psi_{a}"]) for a in ex["axes"]},
            "cmi": _num(r["cmi"]),
            "sign_error_mean": _num(r["se_mean"]),
            "sign_error_p90": _num(r["se_p90"]),
            "sign_error_max": _num(r["se_max"]),
            "vs_best_baseline": {
                st: {
                    "baseline": r[f"best_{st}"],
                    "difference": _num(r[f"d_{st}"]),
                    "ci": [_num(r[f"d_{st}_lo"]), _num(r[f"d_{st}_hi"])],
                }
                for st in ("psi", "psi_wo")
            },
            "beyond_null": {k: bool(r[f"beyond_{k}"]) for k in NULL_STATS},
            "null_subset": r["null_subset"],
        }
    return out
