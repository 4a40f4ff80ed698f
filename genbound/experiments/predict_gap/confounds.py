"""What could explain a ranking besides the trained weights: the exploratory checks of Part V (issue 39),
outside the registered Holm family. Book: :ref:`ch-predict-gap`.

* **The input radius.** A width pair differs in the model **and** in the input radius ``B_X`` the
  bounds read (:func:`~genbound.experiments.predict_gap.task_shape`). :func:`radius_fixed_capacities`
  re-evaluates the two capacities that read ``B_X`` (Trauger-Tewari, Edelman-type) from the saved norms
  with ``B_X`` held at one value per task (the radius at the task's smallest width), through the same
  bound functions the family used (a test checks that at the row's own radius they return the saved
  columns exactly). The proxies of Part III do not read ``B_X``.
* **Plain norms of the same maps.** ``log_spec_prod`` and ``log_fro_prod`` are taken over the factor
  matrices without biases (``W_Q, W_K, W_V, W_O, W_C, w``); the bounds read the merged maps with
  biases (``QK``, ``V``, ``C``, ``w`` of :meth:`~genbound.nets.ReferenceTransformer.weight_norms`).
  :func:`merged_norm_products` gives the two log-products over the merged maps, from ``norms_json``.
* **The seed view's null.** The random-measure null draws a value per model independently; a real
  measure's values of one seed index are correlated across settings (the seed fixes the initialisation,
  the data and the test set). :func:`seed_permutation_null` keeps that: it relabels the seed indices
  of the measure by one random permutation per task, the same in every setting, and recomputes
  ``psi_seed``.
"""

from __future__ import annotations

import json
import math
from typing import Sequence

import numpy as np

from .. import ranking as rk

__all__ = [
    "radius_fixed_capacities",
    "merged_norm_products",
    "seed_permutation_null",
    "paired_differences",
    "RADIUS_FIXED",
    "MERGED_NORMS",
]

#: The capacities re-evaluated with the input radius held fixed (column -> saved column).
RADIUS_FIXED = {"tt_cap_bx": "tt_cap", "edelman_cap_bx": "edelman_cap"}
#: The plain norm products over the merged maps (column -> the factor-matrix column it stands beside).
MERGED_NORMS = {"log_spec_prod_merged": "log_spec_prod", "log_fro_prod_merged": "log_fro_prod"}


def _fixed_radius(df) -> dict:
    """Per task: the input radius at the task's smallest width."""
    from .family import task_shape

    return {
        t: task_shape(str(t), int(df.loc[df["task"] == t, "width"].min()))[1]
        for t in df["task"].unique()
    }


def radius_fixed_capacities(df, config, *, B_X: dict | None = None):
    """The columns of ``RADIUS_FIXED`` for every row of ``df`` (a saved family table with
    ``norms_json``): the ``capacity`` of the Trauger-Tewari and of the Edelman-type bound (depth 1
    only, else ``nan``) at the row's saved norms, its ``m``, the configuration's ``delta`` and margin,
    with the input radius ``B_X[task]`` (default: the task's radius at its smallest width) instead of
    the row's own. A DataFrame aligned with ``df``."""
    import pandas as pd

    from ...bounds.edelman import edelman_bound_from_model
    from ...bounds.trauger_tewari import trauger_tewari_bound_from_model
    from ...nets import ModelNorms
    from .family import task_shape

    radius = _fixed_radius(df) if B_X is None else B_X
    tt, ed = [], []
    for r in df[["task", "width", "n_train", "norms_json"]].itertuples(index=False):
        norms = ModelNorms.from_json(r.norms_json)
        T, _ = task_shape(str(r.task), int(r.width))
        kw = dict(m=int(r.n_train), delta=config.delta, B_X=radius[r.task], margin=config.margin)
        tt.append(trauger_tewari_bound_from_model(norms, radius_grid=False, **kw).capacity)
        if norms.n_layers == 1:
            ed.append(edelman_bound_from_model(norms, T=T + 1, radius_grid=False, **kw).capacity)
        else:
            ed.append(math.nan)
    return pd.DataFrame({"tt_cap_bx": tt, "edelman_cap_bx": ed}, index=df.index, dtype=float)


def _log_products(norms: dict, kind: str) -> float:
    """The sum of ``log`` of the ``kind`` norm over the merged maps ``QK``, ``V`` (per layer and head),
    ``C`` (per layer) and ``w`` of a saved ``norms`` dict."""
    total = 0.0
    for g in ("QK", "V", "C", "w"):
        if g in norms:
            total += float(np.log(np.asarray(norms[g][kind], float)).sum())
    return total


def merged_norm_products(df):
    """The columns of ``MERGED_NORMS`` for every row of ``df``: the log of the product of the spectral
    (``op``) and of the Frobenius norms of the merged maps the bounds read (``norms_json``).
    A DataFrame aligned with ``df``.

    >>> import pandas as pd
    >>> n = {"norms": {"QK": {"op": [[2.0]], "fro": [[3.0]]}, "V": {"op": [[1.0]], "fro": [[1.0]]},
    ...                "w": {"op": 4.0, "fro": 5.0}}}
    >>> merged_norm_products(pd.DataFrame({"norms_json": [json.dumps(n)]})).round(4).values.tolist()
    [[2.0794, 2.7081]]
    """
    import pandas as pd

    rows = [json.loads(s)["norms"] for s in df["norms_json"]]
    return pd.DataFrame(
        {
            "log_spec_prod_merged": [_log_products(n, "op") for n in rows],
            "log_fro_prod_merged": [_log_products(n, "fro") for n in rows],
        },
        index=df.index,
    )


def seed_permutation_null(
    fit, measure: str, *, axes: Sequence[str], n_perm: int = 200, seed: int = 0
) -> np.ndarray:
    """``n_perm`` values of ``psi_seed`` (:func:`~genbound.experiments.ranking.psi_seed`) of ``measure``
    after relabelling its seed indices: per replicate and task one random permutation ``pi`` of the
    task's seed indices (numpy's ``default_rng(seed)``), and the model of seed ``s`` in a setting
    gets the measure of the model of seed ``pi(s)`` in the **same** setting (a model whose ``pi(s)``
    did not fit there is left out of that replicate). The gaps stay; what a seed index does to the
    measure in every setting moves with it, so the null keeps the measure's correlation across
    settings that the random-measure null ignores."""
    rng = np.random.default_rng(seed)
    d = fit[np.isfinite(fit[measure].to_numpy(float))]
    keys = ["task", *axes]
    value = {(*k, s): v for *k, s, v in d[[*keys, "seed", measure]].itertuples(index=False)}
    base = d[[*keys, "seed", "gap"]].reset_index(drop=True)
    tasks = sorted(base["task"].unique())
    seeds = {t: np.sort(base.loc[base["task"] == t, "seed"].unique()) for t in tasks}
    out = np.empty(int(n_perm))
    for b in range(int(n_perm)):
        perm = {t: dict(zip(seeds[t], rng.permutation(seeds[t]))) for t in tasks}
        new = [
            value.get((*r[:-2], perm[r[0]][r[-2]]), math.nan)
            for r in base.itertuples(index=False, name=None)
        ]
        g = base.assign(_mu=new)
        g = g[np.isfinite(g["_mu"].to_numpy(float))]
        out[b] = rk.psi_seed(g, "_mu", axes=list(axes))["psi_seed"]
    return out


def paired_differences(
    fit,
    pairs: Sequence[tuple[str, str]],
    *,
    stats: Sequence[str] = ("psi_wo", "psi_seed"),
    n_boot: int = 1000,
    seed: int = 0,
):
    """For each pair ``(a, b)`` of measures and each statistic of ``stats`` (``psi``, ``psi_wo``,
    ``psi_seed``): ``a``, ``b`` and ``a - b`` with a 95% seed-bootstrap interval of the difference, on
    **the same models**: those of ``fit`` where both are defined (an Edelman-type column makes it the
    depth-1 models, whose axes lack depth), the same draws of seed indices for both
    (:func:`~genbound.experiments.predict_gap.psi_bootstrap`, seed indices of ``fit``). Columns
    ``a``, ``b``, ``stat``, ``n_models``, ``value_a``, ``value_b``, ``diff``, ``lo``, ``hi``."""
    import pandas as pd

    from .statistics import _interval, axes_of, psi_bootstrap

    key = {"psi": "psi", "psi_wo": "psi_without_n_train", "psi_seed": "psi_seed"}
    seeds = np.sort(fit["seed"].unique())
    rows = []
    for a, b in pairs:
        ok = np.isfinite(fit[a].to_numpy(float)) & np.isfinite(fit[b].to_numpy(float))
        d = fit[ok]
        axes = axes_of(d)
        reps = psi_bootstrap(d, [a, b], axes=axes, n_boot=n_boot, seed=seed, seeds=seeds)
        pa, pb = (rk.psi(d, m, axes=axes) for m in (a, b))
        sa, sb = (rk.psi_seed(d, m, axes=axes)["psi_seed"] for m in (a, b))
        point = {
            "psi": (pa["psi"], pb["psi"]),
            "psi_wo": (pa["psi_without"], pb["psi_without"]),
            "psi_seed": (sa, sb),
        }
        for st in stats:
            va, vb = point[st]
            lo, hi = _interval(reps[a][key[st]] - reps[b][key[st]])
            rows.append(
                {
                    "a": a,
                    "b": b,
                    "stat": st,
                    "n_models": int(len(d)),
                    "value_a": va,
                    "value_b": vb,
                    "diff": va - vb,
                    "lo": lo,
                    "hi": hi,
                }
            )
    return pd.DataFrame(rows)
