"""Summaries and figures of a sweep (part of :mod:`genbound.experiments.sparse_majority`)."""

from __future__ import annotations

from typing import Iterable, Sequence

from ...errors import ParameterError
from .files import csv_columns
from .runs import RunResult

__all__ = ["to_frame", "summarize", "gap_slope", "plot_sweep"]


def to_frame(results: Iterable[RunResult]):
    """Run records as a pandas DataFrame (one row per run, the CSV columns)."""
    import pandas as pd

    cols = csv_columns()
    return pd.DataFrame([{c: v for c, v in r.to_dict().items() if c in cols} for r in results], columns=cols)


def summarize(df, columns: Sequence[str] = ("fitted", "train_acc", "test_acc", "acc_gap", "loss_gap",
                                            "l11_norm_sum", "l11_dist_from_init", "tt_bound",
                                            "edelman_bound", "tt_m_star", "edelman_m_star", "fit_step")):
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


def plot_sweep(df, axes, *, label: str = "", color=None, marker: str = "o"):
    """Draw the four panels of the chapter on ``axes`` (four matplotlib Axes) against ``T`` (log axis):
    accuracy gap; summed l1 norm (dots, solid) and l1 distance from initialisation (crosses, dashed);
    both bounds at the run's ``m``; and the sample size ``m*`` each bound would need at the same norms.
    Every run is a dot; the seed mean is a line, with a band of one standard deviation in the first two
    panels. Returns ``axes``."""
    s = summarize(df)
    T = s.index.to_numpy()

    def band(ax, col, mk, ls, lab):
        ax.plot(df["seq_len"], df[col], mk, ms=3, alpha=0.45, color=color, lw=0)
        m, sd = s[(col, "mean")].to_numpy(), s[(col, "std")].fillna(0).to_numpy()
        ax.plot(T, m, ls, color=color, label=lab)
        ax.fill_between(T, m - sd, m + sd, color=color, alpha=0.15, lw=0)

    band(axes[0], "acc_gap", marker, "-", label)
    axes[0].set_ylabel("accuracy gap (train - test)")
    band(axes[1], "l11_norm_sum", marker, "-", r"$\sum_W \|W\|_{1,1}$")
    band(axes[1], "l11_dist_from_init", "x", "--", r"$\sum_W \|W - W_0\|_{1,1}$")
    axes[1].set_ylabel("entrywise $\\ell_1$")
    for ax, (tt, ed), ylabel, logy in ((axes[2], ("tt_bound", "edelman_bound"), "bound at the run's $m$", False),
                                       (axes[3], ("tt_m_star", "edelman_m_star"),
                                        "samples needed for bound $\\leq 0.5$", True)):
        for col, ls, name in ((tt, "-", "Trauger-Tewari"), (ed, "--", "Edelman-type")):
            ax.plot(df["seq_len"], df[col], marker, ms=3, alpha=0.45, color=color, lw=0)
            ax.plot(T, s[(col, "mean")].to_numpy(), ls, color=color, label=name)
        ax.set_ylabel(ylabel)
        if logy:
            ax.set_yscale("log")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("sequence length $T$")
        ax.legend(fontsize=7)
    return axes
