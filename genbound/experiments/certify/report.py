"""The tables of :ref:`ch-certificates` from certificate files: per cell medians with order-statistic
intervals, the targets (chance levels), the coverage self-test, and the recomputation check.

Every function reads the rows as written by ``genbound experiment certify`` (a list of files of one kind,
e.g. the shards of one run) and returns plain pandas objects; the chapter only formats them.
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import ParameterError
from ..runtime.paths import data_path
from . import certify_config_of, read_certificates
from .family import read_family_certificates
from ...bounds import pac_bayes as pb
from . import RECOMPUTED, recompute_bounds

__all__ = [
    "DATA",
    "FAMILY_FILES",
    "SWEEP_FILE",
    "LARGE_M_FILE",
    "FIRST_RUN",
    "SECOND_RUN",
    "SECOND_RUN_SWEEP_FILES",
    "CHANCE",
    "paired_runs",
    "load_certificates",
    "median_interval",
    "median_text",
    "cell_table",
    "coverage",
    "recompute_all",
    "recompute_files",
    "target_table",
]

#: Where the saved certificate files live (``genbound/data``; their notes: ``certify.md``).
DATA = data_path()
#: The Part V family's certificate files (the largest training sets; the smaller ones).
FAMILY_FILES = ("certify_family.csv", "certify_family_small.csv")
#: Rows of the sparse-majority sweep certified at their own training-set size (T = 16, 64, 256 and 1024,
#: seed indices 0-7).
SWEEP_FILE = "certify_sm_sweep.csv"
#: The larger-m point (sweep rows retrained and certified with 2,000 training examples).
LARGE_M_FILE = "certify_sm_m2000.csv"
#: The first run, with the posterior's initial scale fixed at ``sigma_init`` (kept; see ``certify.md``).
FIRST_RUN = DATA / "certify_first_run"
#: The second run, whose training objective learned the prior's scale (``post_prior_scale="free"``): the
#: files of the names above, and the sweep's rows in two files (kept; see ``certify.md``).
SECOND_RUN = DATA / "certify_second_run"
SECOND_RUN_SWEEP_FILES = ("certify_sm_sweep.csv", "certify_sm_sweep_more.csv")

#: Chance level, the error of a constant classifier that ignores its input, which a certificate must
#: clear to say anything (binary sparse majority; ten-class digits).
CHANCE = {"sparse-majority": 0.5, "digits": 0.9}


def load_certificates(paths, *, family: bool):
    """The rows of one or more certificate files of one kind (``family``: Part V family files; else
    sparse-majority files) as one DataFrame with a ``file`` column (family files also get the family's
    ``input_flip`` axis, 0 for every certified model); the files must record the same
    certification settings and share no key."""
    import pandas as pd

    reader = read_family_certificates if family else read_certificates
    tables = [reader(p) for p in paths]
    if not tables:
        raise ParameterError("load_certificates needs at least one file")
    cfgs = {repr(certify_config_of(t)) for t in tables}
    if len(cfgs) != 1:
        raise ParameterError("the certificate files record different certification settings")
    frames = []
    for t in tables:
        df = pd.DataFrame(t.rows)
        df["file"] = str(t.path.name)
        frames.append(df)
    df = pd.concat(frames, ignore_index=True)
    if family:
        # certificates are made for clean training inputs only (certify_family_setting refuses the
        # others), so the family's input-corruption axis is 0 for every row and the file has no column
        df["input_flip"] = 0.0
    key = list(tables[0].schema.key)
    if df.duplicated(key).any():
        raise ParameterError("a model is certified in two of the files")
    return df


def median_interval(x, level: float = 0.95) -> tuple[float, float, float]:
    """``(median, low, high)``: the sample median and the distribution-free interval for the population
    median from order statistics ``x_(j) <= median <= x_(n + 1 - j)``, with the largest ``j`` whose
    binomial coverage ``P[j <= Bin(n, 1/2) <= n - j]`` is at least ``level`` (``nan`` bounds when no
    ``j >= 1`` reaches it, which happens for ``n < 6`` at 95 %).

    >>> m, lo, hi = median_interval(range(1, 11))
    >>> m, lo, hi
    (5.5, 2.0, 9.0)
    """
    xs = np.sort(np.asarray(list(x), dtype=float))
    n = len(xs)
    if n == 0:
        raise ParameterError("median_interval needs at least one value")
    med = float(np.median(xs))
    best = 0
    for j in range(1, n // 2 + 1):
        cover = sum(math.comb(n, k) for k in range(j, n - j + 1)) / 2**n
        if cover >= level:
            best = j
    if best == 0:
        return med, math.nan, math.nan
    return med, float(xs[best - 1]), float(xs[n - best])


def median_text(x, spec: str = ".3f") -> str:
    """The median of ``x`` with its 95 % order-statistic interval (:func:`median_interval`) as text,
    each number formatted with ``spec``; the median alone when ``x`` is too short for an interval.

    >>> median_text(range(1, 11), ".1f"), median_text([0.5, -0.25], "+.2f")
    ('5.5 [2.0, 9.0]', '+0.12')
    """
    med, lo, hi = median_interval(x)
    if math.isnan(lo):
        return f"{med:{spec}}"
    return f"{med:{spec}} [{lo:{spec}}, {hi:{spec}}]"


def cell_table(df, by=("task", "n_train", "depth")):
    """Per cell of ``by``: models, the median certificate with its 95 % interval, and the medians of
    ``Q``'s test error, the deterministic model's test-set bound, the prior's hold-out bound, the KL and
    KL/n, and the share of certificates below the cell's chance level (:data:`CHANCE`)."""
    import pandas as pd

    rows = []
    for key, d in df.groupby(list(by)):
        key = key if isinstance(key, tuple) else (key,)
        med, lo, hi = median_interval(d["certificate"])
        task = dict(zip(by, key)).get("task", "sparse-majority")
        rows.append(
            {
                **dict(zip(by, key)),
                "models": len(d),
                "certificate": med,
                "cert_lo": lo,
                "cert_hi": hi,
                "q_test_error": float(d["q_test_error"].median()),
                "test_set_bound": float(d["test_set_bound"].median()),
                "prior_holdout_bound": float(d["prior_holdout_bound"].median()),
                "kl": float(d["kl"].median()),
                "kl_per_n": float(d["kl_per_n"].median()),
                "below_chance": float((d["certificate"] < CHANCE[task]).mean()),
            }
        )
    return pd.DataFrame(rows)


def coverage(df, delta_total: float) -> dict:
    """The coverage self-test: the share of models whose ``Q`` test error (measured on the test set)
    exceeds its certificate, with a one-sided 95 % Clopper-Pearson upper limit, against the
    certificate's total failure probability ``delta_total``."""

    k = int((df["q_test_error"] > df["certificate"]).sum())
    n = len(df)
    return {
        "exceed": k,
        "models": n,
        "share": k / n if n else math.nan,
        "upper": pb.binomial_test_bound(k, n, 0.05).value if n else math.nan,
        "delta": float(delta_total),
    }


def paired_runs(before, after, key, cols=("certificate", "kl", "q_test_error")):
    """The models certified in both of two runs (``before`` and ``after``, DataFrames of
    :func:`load_certificates`, matched on the columns ``key``): one row per model with each column of
    ``cols`` before and after (suffixes ``_before`` and ``_after``) and ``d_certificate`` (after minus
    before). Raises :class:`~genbound.errors.ParameterError` when they share no model.

    >>> import pandas as pd
    >>> a = pd.DataFrame({"seed": [0, 1, 2], "certificate": [0.3, 0.5, 0.7], "kl": [12.0, 12.1, 11.9],
    ...                   "q_test_error": [0.1, 0.2, 0.3]})
    >>> b = a.assign(certificate=[0.2, 0.45, 0.6], kl=[0.0, 0.1, 0.0]).iloc[1:]
    >>> paired_runs(a, b, ["seed"])["d_certificate"].round(12).tolist()
    [-0.05, -0.1]
    """
    cols = list(cols)
    j = before[list(key) + cols].merge(
        after[list(key) + cols], on=list(key), suffixes=("_before", "_after")
    )
    if j.empty:
        raise ParameterError("paired_runs: the two runs certify no model in common")
    j["d_certificate"] = j["certificate_after"] - j["certificate_before"]
    return j


def recompute_all(df, config) -> int:
    """The number of rows whose recomputed bounds (:func:`~genbound.experiments.certify.recompute_bounds`)
    differ from the stored ones in any column (0 when every row recomputes float for float)."""

    bad = 0
    for r in df.to_dict("records"):
        rc = recompute_bounds(r, config)
        if any(rc[c] != r[c] for c in RECOMPUTED):
            bad += 1
    return bad


def recompute_files(paths, *, family: bool) -> tuple[int, int]:
    """``(rows, differing)``: every row of the certificate files ``paths`` against its bounds recomputed
    from the row's counts and its own file's settings (:func:`recompute_all`)."""
    import pandas as pd

    rows = bad = 0
    for p in paths:
        t = (read_family_certificates if family else read_certificates)(p)
        rows += len(t.rows)
        bad += recompute_all(pd.DataFrame(t.rows), certify_config_of(t))
    return rows, bad


def target_table(family_df, large_m_df=None, large_target: float = 0.25):
    """The issue's targets: per task, the median certificate at the largest certified training-set size
    against chance, and (with ``large_m_df``) the median at the larger-m point of sparse majority
    against ``large_target``; each with its 95 % interval and the margin (target minus median)."""
    import pandas as pd

    rows = []
    for task, d in family_df.groupby("task"):
        m = int(d["n_train"].max())
        med, lo, hi = median_interval(d.loc[d["n_train"] == m, "certificate"])
        rows.append(
            {
                "task": task,
                "kind": "chance",
                "where": f"{task}, m = {m}",
                "models": int((d["n_train"] == m).sum()),
                "median": med,
                "lo": lo,
                "hi": hi,
                "target": CHANCE[task],
                "met": med < CHANCE[task],
            }
        )
    if large_m_df is not None and len(large_m_df):
        med, lo, hi = median_interval(large_m_df["certificate"])
        rows.append(
            {
                "task": "sparse-majority",
                "kind": "large-m",
                "where": f"sparse-majority, m = {int(large_m_df['n_train'].max())}",
                "models": len(large_m_df),
                "median": med,
                "lo": lo,
                "hi": hi,
                "target": large_target,
                "met": med <= large_target,
            }
        )
    out = pd.DataFrame(rows)
    out["margin"] = out["target"] - out["median"]
    return out
