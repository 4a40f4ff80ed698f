"""Summaries and figures of a sweep (part of :mod:`genbound.experiments.sparse_majority`)."""

from __future__ import annotations

import math
from typing import Iterable, Sequence

from ..._validate import check_positive_int
from ...errors import ParameterError
from .files import csv_columns
from .runs import RunResult
from ...bounds.radius_grid import prior, round_layer_radii, round_radii
from ...bounds.trauger_tewari import layer_radii_from_model

__all__ = [
    "to_frame",
    "summarize",
    "gap_slope",
    "per_length_means",
    "lack_of_fit",
    "REGIMES",
    "regime_label",
    "geometric_means",
    "rank_correlation",
    "capacity_floor",
    "matched_pairs",
    "radius_prior_nats",
    "plot_sweep",
]


def to_frame(results: Iterable[RunResult]):
    """Run records as a pandas DataFrame (one row per run, the CSV columns)."""
    import pandas as pd

    cols = csv_columns()
    return pd.DataFrame(
        [{c: v for c, v in r.to_dict().items() if c in cols} for r in results], columns=cols
    )


def summarize(
    df,
    columns: Sequence[str] = (
        "fitted",
        "train_acc",
        "test_acc",
        "acc_gap",
        "loss_gap",
        "l11_norm_sum",
        "l11_dist_from_init",
        "tt_bound",
        "edelman_bound",
        "tt_m_star",
        "edelman_m_star",
        "fit_step",
    ),
):
    """Mean and standard deviation over seeds of each column, per sequence length (a DataFrame with
    columns ``(name, "mean")``, ``(name, "std")`` and ``n`` runs, indexed by ``seq_len``)."""
    g = df.assign(fitted=df["fitted"].astype(float)).groupby("seq_len")
    out = g[list(columns)].agg(["mean", "std"])
    out["n"] = g.size()
    return out


def gap_slope(df, *, column: str = "acc_gap", n_boot: int = 2000, seed: int = 0) -> dict:
    """Least-squares slope of ``column`` against ``log2 T`` over the rows of ``df``, with a 95% bootstrap
    interval (rows resampled with replacement within each ``T``, so every length keeps its count).

    Returns ``{"slope", "lo", "hi", "n"}``: the change of the gap per doubling of ``T``.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"seq_len": [16, 16, 32, 32], "acc_gap": [0.1, 0.1, 0.2, 0.2]})
    >>> round(gap_slope(df)["slope"], 12)
    0.1
    """
    import numpy as np

    if len(df) < 3 or df["seq_len"].nunique() < 2:
        raise ParameterError("gap_slope needs at least 3 rows over at least 2 sequence lengths")
    x = np.log2(df["seq_len"].to_numpy(dtype=float))
    y = df[column].to_numpy(dtype=float)
    if not np.isfinite(y).all():
        raise ParameterError(f"column {column!r} has non-finite values")

    def slope(xx, yy):
        xc = xx - xx.mean()
        return float((xc * (yy - yy.mean())).sum() / (xc**2).sum())

    rng = np.random.default_rng(seed)
    groups = [np.flatnonzero(df["seq_len"].to_numpy() == t) for t in sorted(df["seq_len"].unique())]
    boots = np.empty(n_boot)
    for b in range(n_boot):
        idx = np.concatenate([rng.choice(g, size=len(g), replace=True) for g in groups])
        boots[b] = slope(x[idx], y[idx])
    lo, hi = np.quantile(boots, [0.025, 0.975])
    return {"slope": slope(x, y), "lo": float(lo), "hi": float(hi), "n": int(len(df))}


def per_length_means(df, column: str = "acc_gap", *, level: float = 0.95):
    """Per sequence length: the mean of ``column`` over the rows (seeds) with its Student-t interval
    ``mean +- t_{n-1} sd / sqrt(n)`` at ``level`` (seeds are the independent units). A DataFrame indexed
    by ``seq_len`` with columns ``mean, lo, hi, sd, n`` (``lo = hi = mean`` when ``n = 1``).

    >>> import pandas as pd
    >>> df = pd.DataFrame({"seq_len": [16, 16, 16], "acc_gap": [0.1, 0.2, 0.3]})
    >>> round(float(per_length_means(df).loc[16, "hi"]), 4)
    0.4484
    """
    import numpy as np
    import pandas as pd
    from scipy import stats

    rows = {}
    for T, g in df.groupby("seq_len"):
        y = g[column].to_numpy(dtype=float)
        n, mean = len(y), float(y.mean())
        sd = float(y.std(ddof=1)) if n > 1 else 0.0
        half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / np.sqrt(n) if n > 1 else 0.0
        rows[int(T)] = {"mean": mean, "lo": mean - half, "hi": mean + half, "sd": sd, "n": n}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("seq_len")


def lack_of_fit(df, column: str = "acc_gap") -> dict:
    """The lack-of-fit F test of the straight line ``column ~ a + b log2 T`` against one mean per
    length (the classical test with replicates): ``F = (SS_lof / (k - 2)) / (SS_pe / (n - k))`` with
    ``k`` lengths and ``n`` rows, ``SS_pe`` the spread of the rows about their length's mean and
    ``SS_lof`` the rest of the line's residual sum of squares. Returns ``{"F", "df1", "df2", "p"}``
    (``p`` from the F distribution)."""
    import numpy as np
    from scipy import stats

    x = np.log2(df["seq_len"].to_numpy(dtype=float))
    y = df[column].to_numpy(dtype=float)
    k, n = df["seq_len"].nunique(), len(y)
    if k < 3 or n <= k:
        raise ParameterError("lack_of_fit needs at least 3 lengths and more rows than lengths")
    b, a = np.polyfit(x, y, 1)
    ss_res = float(((y - (a + b * x)) ** 2).sum())
    means = df.groupby("seq_len")[column].transform("mean").to_numpy(dtype=float)
    ss_pe = float(((y - means) ** 2).sum())
    df1, df2 = k - 2, n - k
    F = ((ss_res - ss_pe) / df1) / (ss_pe / df2)
    return {"F": float(F), "df1": int(df1), "df2": int(df2), "p": float(stats.f.sf(F, df1, df2))}


#: The regime labels of :func:`regime_label`, in order of test accuracy.
REGIMES = ("chance", "below one-bit", "between", "rule")


def regime_label(test_acc: float, one_bit_acc: float, n_test: int, *, rule: float = 0.95) -> str:
    """What a fitted network learned, read off its test accuracy ``a`` with fixed cuts (chance, the
    one-relevant-bit baseline ``b``, and the conventional ``rule`` cut) and two standard errors
    ``se(p) = sqrt(p (1 - p) / n_test)``:

    * ``"chance"``: ``a <= 1/2 + 2 se(a)`` (not above chance);
    * ``"rule"``: ``a >= rule``;
    * ``"below one-bit"``: above chance and ``a < b - 2 sqrt(se(a)^2 + se(b)^2)`` (below a rule that
      reads one relevant bit; the two accuracies are on the same test set, the combined standard error
      treats them as independent);
    * ``"between"``: the rest, at or above the one-bit baseline but below ``rule``.

    ``b`` should be chosen without the test set (:func:`~genbound.experiments.sparse_majority.one_bit_baselines`).

    >>> [regime_label(a, 0.637, 10_000) for a in (0.505, 0.60, 0.64, 0.80, 0.96)]
    ['chance', 'below one-bit', 'between', 'between', 'rule']
    """
    se = lambda p: math.sqrt(max(p * (1 - p), 0.0) / n_test)  # noqa: E731
    if test_acc <= 0.5 + 2 * se(test_acc):
        return "chance"
    if test_acc >= rule:
        return "rule"
    if test_acc < one_bit_acc - 2 * math.sqrt(se(test_acc) ** 2 + se(one_bit_acc) ** 2):
        return "below one-bit"
    return "between"


def geometric_means(df, column: str, *, level: float = 0.95):
    """Per sequence length, the geometric mean of a positive ``column`` over the seeds with the
    Student-t interval of :func:`per_length_means` taken on ``log10`` and mapped back: a DataFrame
    indexed by ``seq_len`` with ``mean, lo, hi`` (original units), ``log10_mean``, ``log10_sd``, ``n``.

    >>> import pandas as pd
    >>> g = geometric_means(pd.DataFrame({"seq_len": [16, 16], "c": [10.0, 1000.0]}), "c")
    >>> round(float(g.loc[16, "mean"]), 9)
    100.0
    """
    import numpy as np

    y = df[column].to_numpy(dtype=float)
    if not (np.isfinite(y).all() and (y > 0).all()):
        raise ParameterError(f"geometric_means needs a finite, positive column; {column!r} is not")
    ci = per_length_means(df.assign(_log10=np.log10(y)), "_log10", level=level)
    return ci.assign(
        log10_mean=ci["mean"],
        log10_sd=ci["sd"],
        mean=10 ** ci["mean"],
        lo=10 ** ci["lo"],
        hi=10 ** ci["hi"],
    )[["mean", "lo", "hi", "log10_mean", "log10_sd", "n"]]


def rank_correlation(df, x: str, y: str, *, n_boot: int = 2000, seed: int = 0) -> dict:
    """Spearman's rank correlation of two columns over the rows (average ranks for ties), with a 95%
    bootstrap interval (rows resampled with replacement; the runs are independent: each has its own
    seed). Returns ``{"rho", "lo", "hi", "n"}``.

    >>> import pandas as pd
    >>> round(rank_correlation(pd.DataFrame({"a": [1, 2, 3, 4], "b": [10, 20, 30, 5]}), "a", "b")["rho"], 12)
    -0.2
    """
    import numpy as np
    from scipy import stats

    a, b = df[x].to_numpy(dtype=float), df[y].to_numpy(dtype=float)
    if len(a) < 3:
        raise ParameterError("rank_correlation needs at least 3 rows")
    rho = float(stats.spearmanr(a, b).statistic)
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot):
        i = rng.integers(0, len(a), len(a))
        if np.ptp(a[i]) > 0 and np.ptp(b[i]) > 0:
            boots.append(stats.spearmanr(a[i], b[i]).statistic)
    lo, hi = np.quantile(boots, [0.025, 0.975])
    return {"rho": rho, "lo": float(lo), "hi": float(hi), "n": int(len(a))}


def capacity_floor(df, capacity: str = "tt_capacity", gap: str = "acc_gap", *, rank: int = 1):
    """For every row ``i``, the ``rank``-th largest of ``{gap_j : capacity_j <= capacity_i}`` over the
    rows of ``df`` (one training-set size ``m``; NaN where fewer than ``rank`` rows qualify). With
    ``rank = 1`` it is the lowest value that a bound can take at row ``i`` and still hold at every row,
    if it depends on the network only through ``capacity``, does not decrease in it and is the same
    for every ``T`` at fixed ``m``. A bound at confidence ``1 - delta`` may fail on some runs (about
    ``delta`` times their number), and the maximum is the statistic most sensitive to them; with
    ``rank = k`` the floor holds if the bound fails on at most ``k - 1`` runs. A Series aligned with ``df``.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"tt_capacity": [1.0, 2.0, 3.0], "acc_gap": [0.3, 0.1, 0.2]})
    >>> capacity_floor(df).tolist(), capacity_floor(df, rank=2).tolist()
    ([0.3, 0.3, 0.3], [nan, 0.1, 0.2])
    """
    import numpy as np
    import pandas as pd

    if df["n_train"].nunique() > 1 if "n_train" in df else False:
        raise ParameterError(
            "capacity_floor compares networks trained on one m; the rows have several"
        )
    rank = check_positive_int(rank, "rank")
    c = df[capacity].to_numpy(dtype=float)
    g = df[gap].to_numpy(dtype=float)
    out = np.full_like(g, np.nan)
    for i in range(len(c)):
        below = np.sort(g[c <= c[i]])[::-1]  # ties in capacity count as "at most"
        if len(below) >= rank:
            out[i] = below[rank - 1]
    return pd.Series(out, index=df.index, name=f"{capacity}_floor")


def matched_pairs(
    df, capacity: str = "tt_capacity", gap: str = "acc_gap", *, within_log10: float = 0.1
):
    """Pairs of rows at different ``T`` whose ``capacity`` agrees within ``within_log10`` decades,
    sorted by the difference of their gaps (largest first): a DataFrame with both rows' ``seq_len``,
    ``seed``, ``capacity`` and ``gap`` and ``gap_diff`` (the larger-gap row second)."""
    import numpy as np
    import pandas as pd

    rows = []
    lc = np.log10(df[capacity].to_numpy(dtype=float))
    recs = df.reset_index(drop=True)
    for i in range(len(recs)):
        for j in range(i + 1, len(recs)):
            if recs.at[i, "seq_len"] == recs.at[j, "seq_len"] or abs(lc[i] - lc[j]) > within_log10:
                continue
            a, b = (i, j) if recs.at[i, gap] <= recs.at[j, gap] else (j, i)
            rows.append(
                {
                    "T_a": int(recs.at[a, "seq_len"]),
                    "seed_a": int(recs.at[a, "seed"]),
                    "capacity_a": float(recs.at[a, capacity]),
                    "gap_a": float(recs.at[a, gap]),
                    "T_b": int(recs.at[b, "seq_len"]),
                    "seed_b": int(recs.at[b, "seed"]),
                    "capacity_b": float(recs.at[b, capacity]),
                    "gap_b": float(recs.at[b, gap]),
                    "gap_diff": float(recs.at[b, gap] - recs.at[a, gap]),
                }
            )
    cols = [
        "T_a",
        "seed_a",
        "capacity_a",
        "gap_a",
        "T_b",
        "seed_b",
        "capacity_b",
        "gap_b",
        "gap_diff",
    ]
    out = pd.DataFrame(rows, columns=cols)
    return out.sort_values("gap_diff", ascending=False, kind="stable").reset_index(drop=True)


def radius_prior_nats(net) -> list[float]:
    """What each radius of the Trauger–Tewari bound of ``net`` (a network or its saved
    :class:`~genbound.nets.ModelNorms`) pays in confidence under the union over the grid of radii
    (:prf:ref:`thm-radius-union`): ``log(1 / pi(i)) = log(1.5 (|i| + 1)(|i| + 2))`` nats with ``i`` the
    grid index of the radius, for every radius of
    :func:`~genbound.bounds.trauger_tewari.layer_radii_from_model` and the readout's ``B_w``, in the
    order :func:`~genbound.bounds.radius_grid.round_layer_radii` visits them."""

    _, idx = round_layer_radii(layer_radii_from_model(net))
    _, i_w = round_radii([float(net.weight_norms()["w"]["l11"])])
    return [-math.log(prior(i)) for i in idx + i_w]


def plot_sweep(df, axes, *, m: int | None = None):
    """Draw the four panels of the chapter on ``axes`` (four matplotlib Axes) against ``T`` (log axis),
    from the rows of ``df`` (e.g. the fitted runs): (1) the accuracy gap at the stopping checkpoint
    (dots: runs; bars: per-length mean with its 95% interval, :func:`per_length_means`) and at the
    validation-selected checkpoint (dashed); (2) the summed entrywise l1 norm (dots, solid) and the l1
    distance from initialisation (crosses, dashed); (3) each bound's capacity and (4) its ``m*`` (log
    scale; lines: geometric means over seeds), with a dotted line at ``m`` (the sample size used) when
    given. The bounds' capped values are not drawn: where they are trivial they do not see the weights.
    Returns ``axes``."""
    import numpy as np

    def with_ci(ax, col, color, ls, lab):
        ci = per_length_means(df, col)
        ax.errorbar(
            ci.index,
            ci["mean"],
            yerr=[ci["mean"] - ci["lo"], ci["hi"] - ci["mean"]],
            color=color,
            capsize=3,
            ls=ls,
            label=lab,
        )

    ax = axes[0]
    ax.plot(df["seq_len"], df["acc_gap"], "o", ms=3, alpha=0.4, color="C1", lw=0)
    with_ci(ax, "acc_gap", "C1", "-", "stopping checkpoint")
    with_ci(ax, "val_acc_gap", "C0", "--", "validation-selected")
    ax.set_ylabel("accuracy gap (train - test)")
    means = df.groupby("seq_len")[["l11_norm_sum", "l11_dist_from_init"]].mean()
    for col, mk, ls, lab in (
        ("l11_norm_sum", "o", "-", r"$\sum_W \|W\|_{1,1}$"),
        ("l11_dist_from_init", "x", "--", r"$\sum_W \|W - W_0\|_{1,1}$"),
    ):
        axes[1].plot(df["seq_len"], df[col], mk, ms=3, alpha=0.4, color="C2", lw=0)
        axes[1].plot(means.index, means[col], ls, color="C2", label=lab)
    axes[1].set_ylabel(r"entrywise $\ell_1$")
    for ax, cols, ylabel in (
        (axes[2], ("tt_capacity", "edelman_capacity"), "capacity"),
        (axes[3], ("tt_m_star", "edelman_m_star"), "samples needed for bound $\\leq 0.5$"),
    ):
        for col, ls, name, c in (
            (cols[0], "-", "Trauger\u2013Tewari", "C3"),
            (cols[1], "--", "Edelman-type", "C4"),
        ):
            ax.plot(df["seq_len"], df[col], "o", ms=3, alpha=0.4, color=c, lw=0)
            geo = df.groupby("seq_len")[col].apply(lambda v: float(np.exp(np.log(v).mean())))
            ax.plot(geo.index, geo.to_numpy(), ls, color=c, label=name)
        ax.set_yscale("log")
        ax.set_ylabel(ylabel)
    if m is not None:
        axes[3].axhline(m, color="0.5", lw=0.8, ls=":", label=f"m used ({m})")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("sequence length $T$")
        ax.legend(fontsize=7)
    return axes
