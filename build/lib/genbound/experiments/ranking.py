"""Do complexity measures rank models by their generalization gap? The statistics, as published.

Book: :ref:`ch-predict-gap`. Every function takes a table of trained models (a pandas DataFrame, one
row per model) with a ``task`` column, a seed-index column ``seed``, one column per hyperparameter axis,
the gap column and one column per measure. The definitions follow Jiang et al. (2020, "Fantastic
generalization measures and where to find them") and Dziugaite et al. (2020, "In search of
robust measures of generalization"); where the papers leave a choice open, the choice made
here is stated in the docstring (our reading, not the papers' words).

* :func:`kendall_tau` — the mean over ordered pairs of distinct models of
  ``sign(mu_i - mu_j) * sign(g_i - g_j)``: Kendall's tau with ties contributing 0 (tau-a).
* :func:`tau_per_task`, :func:`tau` — per task, and the mean of the per-task values.
* :func:`psi` — Jiang's granulated coefficient: for each axis ``a``, the mean of :func:`kendall_tau`
  over every group of models that agree on every other axis, the task and the seed index (a group needs
  at least two models; an all-tied group contributes 0, never dropped); ``psi`` is the mean over axes.
* :func:`psi_seed` — the seed view: the mean over settings of :func:`kendall_tau` across seed indices.
* :func:`holm` — Holm's step-down adjustment of a family of p-values.
* :func:`cmi` — Jiang's conditional-mutual-information score
  ``K(mu) = min_S I(V_mu; V_g | U_S) / H(V_g | U_S)`` over sets ``S`` of at most two axes, the task
  always conditioned on.
* :func:`sign_error` — Dziugaite et al.'s per-environment sign error over coupled pairs.
* :func:`cluster_bootstrap` — intervals by resampling seed indices (the independent unit).
* :func:`simpson_check` — pooled tau against tau within each level of each variable.

>>> import pandas as pd
>>> df = pd.DataFrame({"task": ["t"] * 4, "seed": [0, 0, 1, 1], "a": [1, 2, 1, 2],
...                    "gap": [0.1, 0.3, 0.2, 0.4], "mu": [1.0, 2.0, 1.5, 2.5]})
>>> kendall_tau(df["mu"], df["gap"])
1.0
>>> psi(df, "mu", axes=["a"])["psi"]
1.0
"""

from __future__ import annotations

import itertools
import math
from typing import Iterable, Sequence

import numpy as np

from ..errors import ParameterError

__all__ = [
    "kendall_tau",
    "tau_per_task",
    "tau",
    "psi",
    "psi_seed",
    "cmi",
    "sign_error",
    "gap_standard_error",
    "cluster_bootstrap",
    "simpson_check",
    "holm",
]


def _sign_matrix(x) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    return np.sign(x[:, None] - x[None, :])


def kendall_tau(mu, g) -> float:
    """Mean over ordered pairs ``i != j`` of ``sign(mu_i - mu_j) sign(g_i - g_j)`` (ties contribute 0;
    Jiang et al.'s tau). ``nan`` for fewer than two models.

    >>> kendall_tau([1, 2, 3], [1, 3, 2])
    0.3333333333333333
    >>> kendall_tau([1, 1, 1], [1, 2, 3])
    0.0
    """
    mu, g = np.asarray(mu, dtype=float), np.asarray(g, dtype=float)
    if mu.shape != g.shape or mu.ndim != 1:
        raise ParameterError(
            f"kendall_tau: mu and g must be 1-d of one length, got {mu.shape} and {g.shape}"
        )
    n = len(mu)
    if n < 2:
        return math.nan
    return float((_sign_matrix(mu) * _sign_matrix(g)).sum() / (n * (n - 1)))


def _check_columns(df, cols: Iterable[str]) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ParameterError(f"the model table has no column(s) {missing}")


def tau_per_task(df, measure: str, *, gap: str = "gap") -> dict[str, float]:
    """:func:`kendall_tau` of ``measure`` against ``gap`` over the models of each task."""
    _check_columns(df, ["task", measure, gap])
    return {str(t): kendall_tau(g[measure], g[gap]) for t, g in df.groupby("task", sort=True)}


def tau(df, measure: str, *, gap: str = "gap") -> float:
    """The mean over tasks of :func:`tau_per_task` (every task weighs the same)."""
    vals = [v for v in tau_per_task(df, measure, gap=gap).values() if math.isfinite(v)]
    return float(np.mean(vals)) if vals else math.nan


def psi(
    df, measure: str, *, axes: Sequence[str], gap: str = "gap", leave_out: str = "n_train"
) -> dict:
    """Jiang et al.'s granulated Kendall coefficient.

    For each axis ``a``: group the models by the task, the seed index and every other axis; each group
    with at least two models gives :func:`kendall_tau` of ``measure`` against ``gap`` within it (a group
    whose measure or gap is all tied gives 0 and is kept); ``psi_a`` is the mean over the groups.
    ``psi`` is the mean of ``psi_a`` over the axes that have at least one group; ``psi_without`` the
    same mean leaving out the axis ``leave_out`` (default the training-set size ``n_train``: each other
    ``psi_a`` still holds it fixed, so the training-set size is conditioned on and never varied).
    Returns ``{"psi": ..., "psi_without": ..., "per_axis": {a: psi_a}, "n_groups": {a: count}}``."""
    axes = list(axes)
    _check_columns(df, ["task", "seed", measure, gap, *axes])
    per, counts = {}, {}
    for a in axes:
        keys = ["task", "seed", *[b for b in axes if b != a]]
        taus = [
            kendall_tau(g[measure], g[gap]) for _, g in df.groupby(keys, sort=True) if len(g) >= 2
        ]
        per[a] = float(np.mean(taus)) if taus else math.nan
        counts[a] = len(taus)
    vals = [per[a] for a in axes if counts[a]]
    rest = [per[a] for a in axes if counts[a] and a != leave_out]
    return {
        "psi": float(np.mean(vals)) if vals else math.nan,
        "psi_without": float(np.mean(rest)) if rest else math.nan,
        "per_axis": per,
        "n_groups": counts,
    }


def _entropy(counts: np.ndarray) -> float:
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def _task_pairs(df, gap: str):
    """Per task (sorted): the task's rows of ``df`` and the ordered pairs
    ``(i, j)`` of distinct models with ``g_i != g_j`` (indices into the task's models), with
    ``sign(g_i - g_j)``."""
    out = []
    for _, g in df.groupby("task", sort=True):
        gg = g[gap].to_numpy(float)
        n = len(g)
        i, j = np.where(~np.eye(n, dtype=bool))
        dg = np.sign(gg[i] - gg[j])
        keep = dg != 0
        out.append((g, i[keep], j[keep], dg[keep]))
    return out


def _pair_codes(df, measure: str, gap: str, cols: Sequence[str], pairs=None):
    """Every ordered pair ``(i, j)`` of distinct models of one task with ``g_i != g_j``: arrays of
    ``sign(mu_i - mu_j)``, ``sign(g_i - g_j)`` and one integer code per pair naming the task and, per
    column of ``cols``, the pair's two values ``(a_i, a_j)`` (equal codes, equal ``U_S``). ``pairs``:
    :func:`_task_pairs` of ``df`` when already computed."""
    v_mu, v_g, codes = [], [], []
    for t_index, (g, i, j, dg) in enumerate(_task_pairs(df, gap) if pairs is None else pairs):
        mu = g[measure].to_numpy(float)
        v_mu.append(np.sign(mu[i] - mu[j]))
        v_g.append(dg)
        code = np.full(len(i), t_index, dtype=np.int64)
        for c in cols:
            _, lev = np.unique(g[c].to_numpy(), return_inverse=True)
            k = int(lev.max()) + 1
            code = (code * k + lev[i]) * k + lev[j]
        codes.append(code)
    cat = lambda parts, dt: np.concatenate(parts) if parts else np.zeros(0, dt)  # noqa: E731
    return cat(v_mu, float), cat(v_g, float), cat(codes, np.int64)


def _conditional_mi_ratio(v_mu, v_g, u) -> float:
    """``I(V_mu; V_g | U) / H(V_g | U)`` with empirical probabilities, natural logs (``nan`` when
    ``H(V_g | U) = 0``); ``u``: one non-negative integer code per pair (the codes of
    :func:`_pair_codes` are small, so cells are counted with ``bincount``, in increasing code order)."""
    n = len(v_g)
    cu = np.asarray(u, dtype=np.int64)
    mi_code = cu * 3 + (v_mu.astype(np.int64) + 1)
    gi_code = cu * 3 + (v_g.astype(np.int64) + 1)
    j_code = mi_code * 3 + (v_g.astype(np.int64) + 1)

    def plogp(codes):  # sum over cells of c/n * log(c/n)
        c = np.bincount(codes)
        c = c[c > 0].astype(float)
        return float((c / n * np.log(c / n)).sum())

    h_u, h_um, h_ug, h_umg = -plogp(cu), -plogp(mi_code), -plogp(gi_code), -plogp(j_code)
    mi = h_um + h_ug - h_umg - h_u  # I(M; G | U) = H(M,U) + H(G,U) - H(M,G,U) - H(U)
    h = h_ug - h_u  # H(G | U)
    return mi / h if h > 1e-15 else math.nan


def cmi(df, measure: str, *, axes: Sequence[str], gap: str = "gap", max_set: int = 2) -> dict:
    """Jiang et al.'s conditional mutual information score ``K(mu)``.

    Over the ordered pairs ``(i, j)`` of distinct models of one task with ``g_i != g_j`` (pairs with
    equal gaps are left out): ``V_g = sign(g_i - g_j)``, ``V_mu = sign(mu_i - mu_j)`` in ``{-1, 0, 1}``,
    and ``U_S`` the task with the pair's two values ``(a_i, a_j)`` of each axis ``a`` in ``S``.
    ``K = min over S, |S| <= max_set (the empty set included), of I(V_mu; V_g | U_S) / H(V_g | U_S)``
    (empirical probabilities, natural logs; a set ``S`` with ``H(V_g | U_S) = 0`` has no gap left to
    explain and is skipped). Returns ``{"cmi": K, "argmin": S, "per_set": {S: ratio}}``."""
    axes = list(axes)
    _check_columns(df, ["task", measure, gap, *axes])
    pairs = _task_pairs(df, gap)
    v_mu, v_g, _ = _pair_codes(df, measure, gap, [], pairs)
    if len(v_g) == 0:
        return {"cmi": math.nan, "argmin": None, "per_set": {}}
    per = {}
    for k in range(0, max_set + 1):
        for S in itertools.combinations(axes, k):
            _, _, u = _pair_codes(df, measure, gap, list(S), pairs)
            per[S] = _conditional_mi_ratio(v_mu, v_g, u)
    finite = {S: r for S, r in per.items() if math.isfinite(r)}
    if not finite:
        return {"cmi": math.nan, "argmin": None, "per_set": per}
    S = min(finite, key=finite.get)
    return {"cmi": finite[S], "argmin": S, "per_set": per}


def gap_standard_error(test_error, n_test) -> np.ndarray:
    """Standard error of a test error measured on ``n_test`` examples: ``sqrt(e (1 - e) / n_test)``."""
    e, n = np.asarray(test_error, float), np.asarray(n_test, float)
    return np.sqrt(np.clip(e * (1 - e), 0.0, None) / n)


def psi_seed(df, measure: str, *, axes: Sequence[str], gap: str = "gap") -> dict:
    """The seed view: within each setting (the task and one value of every axis of ``axes``), the
    :func:`kendall_tau` of ``measure`` against ``gap`` across its seed indices; ``psi_seed`` is the mean
    over the settings with at least two models. Nothing about the hyperparameters varies inside a
    setting, so a measure computed from them alone scores exactly 0 here: only what the trained
    weights carry can rank the seeds (our addition to Jiang et al.'s axes, after their "seed" noise
    term; not a published statistic). Returns ``{"psi_seed": ..., "n_settings": ...}``.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"task": ["t"] * 4, "seed": [0, 1, 0, 1], "a": [1, 1, 2, 2],
    ...                    "gap": [0.1, 0.3, 0.2, 0.1], "mu": [1.0, 2.0, 1.0, 2.0]})
    >>> psi_seed(df, "mu", axes=["a"])
    {'psi_seed': 0.0, 'n_settings': 2}
    """
    axes = list(axes)
    _check_columns(df, ["task", "seed", measure, gap, *axes])
    taus = [
        kendall_tau(g[measure], g[gap])
        for _, g in df.groupby(["task", *axes], sort=True)
        if len(g) >= 2
    ]
    return {"psi_seed": float(np.mean(taus)) if taus else math.nan, "n_settings": len(taus)}


def holm(pvalues: dict, *, alpha: float = 0.05) -> dict:
    """Holm's step-down adjustment of a family of p-values (Holm 1979): sorted ascending, the ``k``-th
    smallest (``k = 1..n``) is multiplied by ``n - k + 1``, adjusted values made monotone (a running
    maximum) and capped at 1. Returns ``{name: {"p": p, "p_holm": adjusted, "reject": adjusted <= alpha}}``.

    >>> r = holm({"a": 0.01, "b": 0.04, "c": 0.03})
    >>> [round(r[k]["p_holm"], 6) for k in "abc"], [r[k]["reject"] for k in "abc"]
    ([0.03, 0.06, 0.06], [True, False, False])
    """
    names = sorted(pvalues, key=lambda k: (pvalues[k], k))
    n, run, out = len(names), 0.0, {}
    for k, name in enumerate(names):
        p = float(pvalues[name])
        if not 0.0 <= p <= 1.0:
            raise ParameterError(f"p-value of {name!r} must lie in [0, 1], got {p!r}")
        run = max(run, min(1.0, (n - k) * p))
        out[name] = {"p": p, "p_holm": run, "reject": run <= alpha}
    return {k: out[k] for k in pvalues}


def sign_error(
    df,
    measure: str,
    *,
    axes: Sequence[str],
    gap: str = "gap",
    se: str | None = None,
    se_factor: float = 2.0,
) -> dict:
    """Dziugaite et al.'s sign error over environments.

    An environment is a pair of settings (values of every axis, within one task) that differ in exactly
    one axis. Over the seed indices present in both settings, each coupled pair (same seed index) is
    wrong when ``sign(dmu) != sign(dg)``; a tie in ``mu`` or in ``g`` counts 1/2. The environment's
    sign error is the share of wrong pairs. Returns the mean, the 90th percentile (numpy's default,
    linear interpolation) and the maximum over environments, and the same three restricted to coupled
    pairs with ``|dg| > se_factor * sqrt(se_i^2 + se_j^2)`` (column ``se``: each model's test-set
    standard error, e.g. :func:`gap_standard_error`; the two test errors treated as independent, which
    overstates the noise of a difference measured on one shared test set; environments left without
    such pairs drop out of the restricted figures, and their number is reported)."""
    axes = list(axes)
    _check_columns(df, ["task", "seed", measure, gap, *axes, *([se] if se else [])])
    errs, errs_big = [], []
    for _, g in df.groupby("task", sort=True):
        sett = g[axes].drop_duplicates().sort_values(axes).to_numpy()
        seeds = np.sort(g["seed"].unique())
        pos = {tuple(r): k for k, r in enumerate(sett.tolist())}
        row = np.array([pos[tuple(r)] for r in g[axes].to_numpy().tolist()])
        col = np.searchsorted(seeds, g["seed"].to_numpy())
        shape = (len(sett), len(seeds))
        M, G, E = (np.full(shape, np.nan) for _ in range(3))
        M[row, col] = g[measure].to_numpy(float)
        G[row, col] = g[gap].to_numpy(float)
        present = np.zeros(shape, bool)
        present[row, col] = True
        if se:
            E[row, col] = g[se].to_numpy(float)
        for a, b in itertools.combinations(range(len(sett)), 2):
            if int((sett[a] != sett[b]).sum()) != 1:
                continue
            both = present[a] & present[b]
            if not both.any():
                continue
            dmu = np.sign(M[a, both] - M[b, both])
            dgv = G[a, both] - G[b, both]
            dg = np.sign(dgv)
            wrong = np.where((dmu == 0) | (dg == 0), 0.5, (dmu != dg).astype(float))
            errs.append(float(wrong.mean()))
            if se:
                big = np.abs(dgv) > se_factor * np.sqrt(E[a, both] ** 2 + E[b, both] ** 2)
                if big.any():
                    errs_big.append(float(wrong[big].mean()))

    def stats(v):
        if not v:
            return {"mean": math.nan, "p90": math.nan, "max": math.nan, "n_environments": 0}
        a = np.asarray(v)
        return {
            "mean": float(a.mean()),
            "p90": float(np.percentile(a, 90)),
            "max": float(a.max()),
            "n_environments": len(v),
        }

    return {"all": stats(errs), "beyond_noise": stats(errs_big)}


def _resample_seeds(df, rng) -> "object":
    """A cluster-bootstrap replicate: seed indices drawn with replacement, each draw a new cluster
    (relabelled so that a seed drawn twice gives two separate groups)."""
    import pandas as pd

    seeds = np.array(sorted(df["seed"].unique()))
    draw = rng.choice(seeds, size=len(seeds), replace=True)
    by_seed = {s: g for s, g in df.groupby("seed")}
    parts = [by_seed[s].assign(seed=k) for k, s in enumerate(draw)]
    return pd.concat(parts, ignore_index=True)


def cluster_bootstrap(
    df, statistic, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> dict:
    """Percentile interval of ``statistic(df) -> float or dict of floats`` over ``n_boot`` replicates
    that resample the seed indices (the independent unit: models of one seed share an initialisation).
    Returns ``{"estimate": ..., "lo": ..., "hi": ...}`` (dicts of those when ``statistic`` returns a dict;
    replicates where a value is undefined are left out of that value's interval)."""
    if n_boot < 1:
        raise ParameterError(f"n_boot must be at least 1, got {n_boot}")
    if not 0 < level < 1:
        raise ParameterError(f"level must be in (0, 1), got {level}")
    rng = np.random.default_rng(seed)
    est = statistic(df)
    reps = [statistic(_resample_seeds(df, rng)) for _ in range(n_boot)]
    q = [(1 - level) / 2, (1 + level) / 2]

    def interval(vals):
        v = np.asarray([x for x in vals if math.isfinite(x)])
        return (
            (float(np.quantile(v, q[0])), float(np.quantile(v, q[1])))
            if len(v)
            else (math.nan, math.nan)
        )

    if isinstance(est, dict):
        out = {"estimate": est, "lo": {}, "hi": {}}
        for k in est:
            out["lo"][k], out["hi"][k] = interval([r[k] for r in reps])
        return out
    lo, hi = interval(reps)
    return {"estimate": est, "lo": lo, "hi": hi}


def simpson_check(df, measure: str, *, by: Sequence[str], gap: str = "gap") -> dict:
    """Pooled tau against tau within each level of each variable in ``by`` (an axis or ``"task"``).

    For an axis, the pooled value is :func:`tau` over all models and a level's value is :func:`tau` over
    the models at that level (both means over tasks). For ``"task"``, the pooled value is
    :func:`kendall_tau` over all models with the tasks mixed, a level's value the task's own tau. A
    variable is ``reversed`` when every level's tau has the sign opposite to the pooled one (an undefined
    or zero tau does not count as reversed)."""
    out = {"pooled": tau(df, measure, gap=gap), "by": {}}
    for var in by:
        _check_columns(df, [var])
        if var == "task":
            pooled = kendall_tau(df[measure], df[gap])
            levels = tau_per_task(df, measure, gap=gap)
        else:
            pooled = out["pooled"]
            levels = {str(v): tau(g, measure, gap=gap) for v, g in df.groupby(var, sort=True)}
        rev = bool(levels) and all(math.isfinite(t) and t * pooled < 0 for t in levels.values())
        out["by"][var] = {"pooled": pooled, "levels": levels, "reversed": rev}
    return out
