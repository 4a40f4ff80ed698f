"""The registered tests of Part V and the answers they give. Book: :ref:`ch-predict-gap`.

Every comparison of two measures is made on **matched models**: the fitted models on which both are
defined (:func:`matched_difference`; a depth-1-only capacity makes it the depth-1 models), with the
same draws of seed indices for both, so a difference never mixes a mean over one set of models with a
mean over another. The best measure of the weights in question (1) is the one whose matched margin over
the best hyperparameter-only baseline (the ``d_<stat>`` columns of
:func:`~genbound.experiments.predict_gap.measure_table`, the baseline chosen on the measure's own
models) is largest, not the one with the largest raw ``Psi``: a raw ``Psi`` over the depth-1 models is
not comparable with one over every model.

The seed view (question 2) is tested against the **seed-permutation null**
(:func:`~genbound.experiments.predict_gap.seed_permutation_null`), which keeps the correlation of a
seed index's values across settings that the random-measure null ignores; :func:`seed_view` reports
both nulls and each measure minus the number of steps to fit (``fit_step``, a measure that reads no
weights), on the same draws.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .. import ranking as rk
from .confounds import seed_permutation_null
from .measures import MEASURES
from .statistics import (
    _interval,
    _psi_from_terms,
    _psi_terms,
    _seed_weights,
    axes_of,
    measure_frame,
    normal_p,
    psi_bootstrap,
)

__all__ = [
    "PLAIN_NORMS",
    "VERDICT_BOUNDS",
    "STEPS",
    "matched_difference",
    "norm_comparisons",
    "seed_view",
    "verdict_tests",
]

#: The plain norms every bound is compared with in the verdict (the Lipschitz skeleton the bounds share).
PLAIN_NORMS = ("log_spec_prod", "log_fro_prod")
#: The bound capacities of the verdict (m-free forms: compared with the training-set size fixed).
VERDICT_BOUNDS = ("tt_cap", "edelman_cap", "sa_cap", "edproxy_cap")
#: The column that needs no weights in the seed view: the number of steps a model took to fit.
STEPS = "fit_step"

_KEY = {"psi": "psi", "psi_wo": "psi_without_n_train", "psi_seed": "psi_seed"}


def matched_difference(
    fit, a: str, b: str, stat: str, *, n_boot: int = 1000, seed: int = 0, axis: str | None = None
) -> dict:
    """``stat`` (``psi``, ``psi_wo`` or ``psi_seed``) of measure ``a`` minus that of ``b`` on the fitted
    models of ``fit`` where **both** are finite, with the replicates of the difference on the same draws
    of the seed indices of ``fit`` (:func:`~genbound.experiments.predict_gap.psi_bootstrap`). With
    ``axis``, ``stat`` is ignored and the difference is that of ``psi_axis`` (the groups that differ in
    that axis only). Returns ``{"estimate", "lo", "hi", "reps", "n_models", "value_a", "value_b"}``."""
    ok = np.isfinite(fit[a].to_numpy(float)) & np.isfinite(fit[b].to_numpy(float))
    d = fit[ok]
    axes = axes_of(d)
    seeds = np.sort(fit["seed"].unique())
    if axis is not None:
        W = _seed_weights(seeds, n_boot, seed)
        r = {m: _psi_from_terms(_psi_terms(d, m, axes, seeds), W, [axis]) for m in (a, b)}
        va, vb = (rk.psi(d, m, axes=axes)["per_axis"][axis] for m in (a, b))
        diff = r[a] - r[b]
    else:
        reps = psi_bootstrap(d, [a, b], axes=axes, n_boot=n_boot, seed=seed, seeds=seeds)
        if stat == "psi_seed":
            va, vb = (rk.psi_seed(d, m, axes=axes)["psi_seed"] for m in (a, b))
        else:
            col = "psi" if stat == "psi" else "psi_without"
            va, vb = (rk.psi(d, m, axes=axes)[col] for m in (a, b))
        diff = reps[a][_KEY[stat]] - reps[b][_KEY[stat]]
    lo, hi = _interval(diff)
    return {
        "estimate": va - vb,
        "lo": lo,
        "hi": hi,
        "reps": diff,
        "n_models": int(len(d)),
        "value_a": va,
        "value_b": vb,
    }


def _seed_measures(measures: Sequence[str], baselines: Sequence[str]) -> list[str]:
    """The measures of the weights tested in the seed view (the ``/sqrt(m)`` forms are left out: within
    a setting they equal their ``m``-free forms)."""
    return [m for m in measures if m not in baselines and not m.endswith("_sqrtm")]


def seed_view(
    fit,
    tab,
    extras,
    *,
    measures: Sequence[str] = MEASURES,
    n_perm: int = 200,
    n_boot: int = 1000,
    seed: int = 0,
):
    """Per measure of the weights of question (2), and for ``STEPS``: ``psi_seed`` with its interval
    (``lo``, ``hi``); against the random-measure null (``iid_q95``, the one-sided ``p_iid`` of
    :func:`~genbound.experiments.predict_gap.normal_p` against the null's mean and standard deviation,
    on the measure's models); against the seed-permutation null of ``n_perm`` relabellings
    (``perm_mean``, ``perm_sd``, ``perm_q95``, ``p_perm`` the same way); and the measure minus
    ``STEPS`` (``d_steps`` with ``d_steps_lo``, ``d_steps_hi``, :func:`matched_difference`). A
    DataFrame indexed by measure."""
    import pandas as pd

    names = [*_seed_measures(measures, extras["baselines"]), STEPS]
    rows = {}
    for m in names:
        d = measure_frame(fit, m)
        axes = axes_of(d)
        if m in tab.index:
            v, lo, hi = (float(tab.loc[m, c]) for c in ("psi_seed", "psi_seed_lo", "psi_seed_hi"))
            sub = tab.loc[m, "null_subset"]
        else:
            v = rk.psi_seed(d, m, axes=axes)["psi_seed"]
            r = psi_bootstrap(
                d, [m], axes=axes, n_boot=n_boot, seed=seed, seeds=fit["seed"].unique()
            )
            lo, hi = _interval(r[m]["psi_seed"])
            sub = "all" if len(d) == len(fit) else "depth1"
        iid = extras["nulls"][sub]["psi_seed"].to_numpy(float)
        perm = seed_permutation_null(d, m, axes=axes, n_perm=n_perm, seed=seed)
        row = {"n_models": int(len(d)), "psi_seed": v, "lo": lo, "hi": hi}
        row["iid_q95"] = float(np.quantile(iid, 0.95))
        row["p_iid"] = normal_p(v, iid, two_sided=False, null_mean=float(np.mean(iid)))
        row["perm_mean"], row["perm_sd"] = float(np.mean(perm)), float(np.std(perm, ddof=1))
        row["perm_q95"] = float(np.quantile(perm, 0.95))
        row["p_perm"] = normal_p(v, perm, two_sided=False, null_mean=row["perm_mean"])
        if m != STEPS:
            md = matched_difference(fit, m, STEPS, "psi_seed", n_boot=n_boot, seed=seed)
            row.update(d_steps=md["estimate"], d_steps_lo=md["lo"], d_steps_hi=md["hi"])
        rows[m] = row
    return pd.DataFrame(rows).T.astype(float)


def verdict_tests(
    fit,
    tab,
    extras,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    measures: Sequence[str] = MEASURES,
    seed_null: str = "permutation",
    seeds_view=None,
    n_perm: int = 200,
):
    """The tests the chapter's verdict rests on, with Holm's adjustment over all of them
    (:func:`~genbound.experiments.ranking.holm`):

    1. ``oracle``: the best measure of the weights minus the best hyperparameter-only baseline, in
       ``Psi`` with the training-set size fixed (all measures) and in ``Psi`` (the ``m``-dependent
       ones), on the measure's own models; the best is the measure with the largest such matched
       margin (``d_<stat>`` of :func:`~genbound.experiments.predict_gap.measure_table`);
    2. ``seed``: for every measure of the weights, ``psi_seed`` against a null (one-sided): the
       seed-permutation null (``seed_null="permutation"``, the default) or the random-measure null
       (``"iid"``, the test registered first), both from :func:`seed_view` (``seeds_view``: one
       already computed);
    3. ``norms``: each bound capacity of ``VERDICT_BOUNDS`` minus each plain norm of ``PLAIN_NORMS``, in
       ``Psi`` with the training-set size fixed and in ``psi_seed``;
    4. ``index``: the adaptive spectrum-adaptive proxy minus its two fixed-index sums, in the same two
       statistics.

    Differences (tests 1, 3, 4) are on matched models (:func:`matched_difference`) and get the
    two-sided :func:`~genbound.experiments.predict_gap.normal_p` of the estimate against the standard
    deviation of its replicates. Returns a DataFrame: ``question``, ``test``, ``estimate``, ``lo``,
    ``hi``, ``p``, ``p_holm``, ``reject`` (at 0.05)."""
    import pandas as pd

    if seed_null not in ("permutation", "iid"):
        raise ValueError(f"seed_null must be 'permutation' or 'iid', not {seed_null!r}")
    base = extras["baselines"]
    rows = []

    def add(question, test, est, lo, hi, p):
        rows.append(
            {"question": question, "test": test, "estimate": est, "lo": lo, "hi": hi, "p": p}
        )

    weights = [m for m in measures if m not in base]
    for stat in ("psi_wo", "psi"):
        cand = [m for m in weights if np.isfinite(tab.loc[m, f"d_{stat}"])]
        if cand:
            m = max(cand, key=lambda k: tab.loc[k, f"d_{stat}"])
            r = tab.loc[m]
            p = normal_p(r[f"d_{stat}"], extras["d_reps"][(m, stat)])
            b = r[f"best_{stat}"]
            add(
                "oracle",
                f"{m} - {b} ({stat})",
                r[f"d_{stat}"],
                r[f"d_{stat}_lo"],
                r[f"d_{stat}_hi"],
                p,
            )
    sv = (
        seed_view(fit, tab, extras, measures=measures, n_perm=n_perm, n_boot=n_boot, seed=seed)
        if seeds_view is None
        else seeds_view
    )
    for m in _seed_measures(weights, base):
        r = sv.loc[m]
        add(
            "seed",
            f"{m} psi_seed vs null",
            r["psi_seed"],
            r["lo"],
            r["hi"],
            r[f"p_{'perm' if seed_null == 'permutation' else 'iid'}"],
        )
    pairs = [(b, n) for b in VERDICT_BOUNDS for n in PLAIN_NORMS]
    pairs += [("spectral_adaptive", f) for f in ("spectral_p0", "spectral_pmax")]
    for a, b in pairs:
        q = "index" if a == "spectral_adaptive" else "norms"
        for stat in ("psi_wo", "psi_seed"):
            md = matched_difference(fit, a, b, stat, n_boot=n_boot, seed=seed)
            add(
                q,
                f"{a} - {b} ({stat})",
                md["estimate"],
                md["lo"],
                md["hi"],
                normal_p(md["estimate"], md["reps"]),
            )
    out = pd.DataFrame(rows)
    adj = rk.holm(dict(zip(out["test"], out["p"])))
    out["p_holm"] = [adj[t]["p_holm"] for t in out["test"]]
    out["reject"] = [adj[t]["reject"] for t in out["test"]]
    return out


def norm_comparisons(
    fit, pairs, *, stats=("psi_wo", "psi_seed"), n_boot: int = 1000, seed: int = 0, per_axis=False
):
    """:func:`matched_difference` for each pair ``(a, b)`` and statistic, with its two-sided
    :func:`~genbound.experiments.predict_gap.normal_p` (unadjusted: these are exploratory) and, with
    ``per_axis``, one row per axis of ``psi_wo`` too (``stat`` ``psi_<axis>``, the difference of
    ``psi_a`` on the matched models). A DataFrame: ``a``, ``b``, ``stat``, ``n_models``, ``estimate``,
    ``lo``, ``hi``, ``p``."""
    import pandas as pd

    rows = []
    for a, b in pairs:
        todo = [(st, None) for st in stats]
        if per_axis:
            ok = np.isfinite(fit[a].to_numpy(float)) & np.isfinite(fit[b].to_numpy(float))
            todo += [(f"psi_{x}", x) for x in axes_of(fit[ok]) if x != "n_train"]
        for st, ax in todo:
            md = matched_difference(fit, a, b, st, n_boot=n_boot, seed=seed, axis=ax)
            rows.append(
                {
                    "a": a,
                    "b": b,
                    "stat": st,
                    "n_models": md["n_models"],
                    "estimate": md["estimate"],
                    "lo": md["lo"],
                    "hi": md["hi"],
                    "p": normal_p(md["estimate"], md["reps"]),
                }
            )
    return pd.DataFrame(rows)
