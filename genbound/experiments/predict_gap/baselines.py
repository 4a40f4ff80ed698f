"""Measures that know only the hyperparameters. Book: :ref:`ch-predict-gap`.

A measure of the trained weights is informative only beyond what the hyperparameters alone predict
(Jiang et al. 2020 rank against their "canonical ordering"; our baselines follow the referee's list):

* ``inv_sqrt_m``: ``1 / sqrt(m)`` (``m`` the training-set size);
* ``n_params_sqrtm``: the parameter count over ``sqrt(m)``;
* ``hp_<axis>``: each axis alone, as a least-squares line of the gap on that axis's feature
  (:func:`~genbound.experiments.predict_gap.hp_features`), **cross-fitted**: the seed indices are split in two halves (the lower and the
  upper half of the sorted indices), the line is fitted per task on the fitted models of one half and
  predicts the models of the other, and the halves are swapped, so no model's value saw its own gap;
* ``hp_oracle``: the same with every feature at once (a linear model of the log-hyperparameters).

Every baseline is constant within a setting, so its seed view
(:func:`~genbound.experiments.ranking.psi_seed`) is exactly 0. The cross-fitted columns are computed
once from the whole family; the seed bootstrap of the statistics resamples them as fixed columns (the
refit inside each replicate is left out, which flatters the baselines slightly).

>>> import pandas as pd
>>> f = hp_features(pd.DataFrame({"depth": [1, 2], "width": [12, 32], "lr": [0.01, 0.01], "batch": [0, 16],
...                               "weight_decay": [0.0, 0.0], "init_scale": [1.0, 2.0], "label_noise": [0.0, 0.1],
...                               "input_flip": [0.0, 0.05], "n_train": [64, 64]}))
>>> len(f.columns), round(float(f["batch"].iloc[0]), 4)      # full batch: the batch is the training set
(9, 4.1589)
"""

from __future__ import annotations

import math

import numpy as np

from .family import AXES

__all__ = ["HP_FIXED", "hp_features", "hp_baselines", "baseline_names", "BASELINE_NAMES"]

#: The fixed (not fitted) hyperparameter baselines.
HP_FIXED = ("inv_sqrt_m", "n_params_sqrtm")


def hp_features(df):
    """One feature per axis: the log of depth, width, learning rate, effective batch size (the
    training-set size for a full batch), initialisation scale and training-set size; weight decay and
    label noise and the input corruption as they are (they can be 0). A DataFrame with one column per axis of ``AXES``."""
    import pandas as pd

    n = df["n_train"].to_numpy(float)
    b = df["batch"].to_numpy(float)
    return pd.DataFrame(
        {
            "depth": np.log(df["depth"].to_numpy(float)),
            "width": np.log(df["width"].to_numpy(float)),
            "lr": np.log(df["lr"].to_numpy(float)),
            "batch": np.log(np.where(b > 0, np.minimum(b, n), n)),
            "weight_decay": df["weight_decay"].to_numpy(float),
            "init_scale": np.log(df["init_scale"].to_numpy(float)),
            "label_noise": df["label_noise"].to_numpy(float),
            "input_flip": df["input_flip"].to_numpy(float),
            "n_train": np.log(n),
        },
        index=df.index,
    )[list(AXES)]


def _halves(seeds) -> tuple[np.ndarray, np.ndarray]:
    s = np.sort(np.unique(np.asarray(seeds)))
    k = len(s) // 2
    return s[:k], s[k:]


def _crossfit(df, features, fit_mask) -> np.ndarray:
    """Per task, least squares of the gap on ``[1, features]`` over the rows of one half of the seed
    indices (and ``fit_mask``), predicting the rows of the other half; both directions."""
    out = np.full(len(df), np.nan)
    seeds = df["seed"].to_numpy()
    A, B = _halves(seeds)
    X = np.column_stack([np.ones(len(df)), features])
    y = df["gap"].to_numpy(float)
    task = df["task"].to_numpy()
    for t in np.unique(task):
        for train, test in ((A, B), (B, A)):
            tr = (task == t) & np.isin(seeds, train) & fit_mask
            te = (task == t) & np.isin(seeds, test)
            if tr.sum() == 0 or te.sum() == 0:
                continue
            Xt = X[tr]
            keep = np.ptp(Xt, axis=0) > 0
            keep[0] = True  # the intercept; constant features dropped
            coef, *_ = np.linalg.lstsq(Xt[:, keep], y[tr], rcond=None)
            out[te] = X[te][:, keep] @ coef
    return out


def hp_baselines(df) -> "object":
    """The baseline columns of ``df`` (the family table): ``inv_sqrt_m``, ``n_params_sqrtm``, one
    ``hp_<axis>`` per axis that varies within a task, and ``hp_oracle``; fitted on the fitted models
    only (the statistics rank those). A DataFrame aligned with ``df``."""
    import pandas as pd

    n = df["n_train"].to_numpy(float)
    out = {
        "inv_sqrt_m": 1.0 / np.sqrt(n),
        "n_params_sqrtm": df["n_params"].to_numpy(float) / np.sqrt(n),
    }
    F = hp_features(df)
    fitted = df["fitted"].to_numpy(bool)
    varying = varying_axes(df)
    for a in varying:
        out[f"hp_{a}"] = _crossfit(df, F[[a]].to_numpy(), fitted)
    out["hp_oracle"] = (
        _crossfit(df, F[varying].to_numpy(), fitted) if varying else np.full(len(df), math.nan)
    )
    return pd.DataFrame(out, index=df.index)


def varying_axes(df) -> list[str]:
    """The axes of ``AXES`` that take at least two values within some task of ``df`` (one ``hp_<axis>``
    baseline each)."""
    if not len(df):
        return []
    return [a for a in AXES if df.groupby("task")[a].nunique().max() > 1]


def baseline_names(df) -> list[str]:
    """The columns :func:`hp_baselines` gives for the **whole** table ``df`` (read from its axes, no fit):
    ``HP_FIXED``, one ``hp_<axis>`` per axis of ``varying_axes``, and ``hp_oracle``. A sub-table
    (a few rows) may vary on fewer axes than the family it came from, so the names are taken from the
    table the statistics rank, never from a sample of it.

    >>> import pandas as pd
    >>> from .family import AXES
    >>> row = {a: 1 for a in AXES}
    >>> df = pd.DataFrame([{**row, "task": "t"}, {**row, "task": "t", "width": 2}])
    >>> baseline_names(df)
    ['inv_sqrt_m', 'n_params_sqrtm', 'hp_width', 'hp_oracle']
    """
    return [*HP_FIXED, *(f"hp_{a}" for a in varying_axes(df)), "hp_oracle"]


def BASELINE_NAMES(df) -> list[str]:
    """The names :func:`hp_baselines` gives for ``df`` (:func:`baseline_names`)."""
    return baseline_names(df)
