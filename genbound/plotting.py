"""Figures for the book, in one shared style. Imports matplotlib, so ``import genbound`` does not load it.

Every figure of the book is drawn at the width of the page column (:data:`COLUMN_WIDTH` inches, the
style sheet's ``figure.figsize``), so that the page shows it at about its drawn size and its 10-point
labels stay legible: :func:`new_axes` lays out one or more panels in that width (``nrows x ncols``),
and :func:`fit_tick_labels` removes tick labels that would overlap (minor labels of a log axis
spanning less than a decade first, then every other major label) before the figure is shown.
:func:`tick_label_problems` lists overlapping tick labels, tick labels outside the figure and
overlapping panels; the tests run it on every plotting function of genbound.

Every plotting function takes an optional ``ax`` and returns the ``Axes`` it drew on; none calls
``plt.show()``.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import torch
from matplotlib.ticker import NullFormatter

from .norms import schatten_power

__all__ = [
    "STYLE",
    "COLUMN_WIDTH",
    "use_style",
    "new_axes",
    "fit_tick_labels",
    "tick_label_problems",
    "plot_schatten_curve",
    "plot_contributions",
    "plot_per_layer",
    "plot_esd",
]

#: Path of the shared matplotlib style sheet.
STYLE = Path(__file__).with_name("genbound.mplstyle")
#: Width of every book figure in inches: the page column (688 px in a 1280 px window) at ~110 px per inch.
COLUMN_WIDTH = 6.4
#: Height of one row of panels in inches (one-row figures: the style sheet's 3.8 for a single panel).
ROW_HEIGHT = 3.0


def use_style() -> None:
    """Apply the book's matplotlib style."""
    plt.style.use(str(STYLE))


def new_axes(ncols: int = 1, nrows: int = 1, *, height: float | None = None, **kwargs):
    """A new figure in the book's style, :data:`COLUMN_WIDTH` wide, with ``nrows x ncols`` axes; returns
    ``(fig, axes)`` as :func:`matplotlib.pyplot.subplots` does (keywords go to it).
    ``height`` (inches) defaults to the style's height for one panel, :data:`ROW_HEIGHT` per row otherwise.

    >>> fig, axes = new_axes(2, 2)
    >>> fig.get_size_inches().tolist(), axes.shape
    ([6.4, 6.0], (2, 2))
    >>> plt.close(fig)
    """
    use_style()
    if height is None:
        height = plt.rcParams["figure.figsize"][1] if ncols * nrows == 1 else ROW_HEIGHT * nrows
    return plt.subplots(nrows, ncols, figsize=(COLUMN_WIDTH, height), **kwargs)


def _label_boxes(fig, axis):
    """``(text, window extent, font size)`` of the visible, non-empty tick labels of one
    ``XAxis``/``YAxis`` (major and minor)."""
    r = fig.canvas.get_renderer()
    out = []
    for tick in axis.get_major_ticks() + axis.get_minor_ticks():
        for lab in (tick.label1, tick.label2):
            if (
                lab.get_visible()
                and lab.get_text().strip()
                and axis.get_view_interval()[0] is not None
            ):
                loc = tick.get_loc()
                lo, hi = sorted(axis.get_view_interval())
                if loc is None or not (lo - 1e-12 * abs(lo) <= loc <= hi + 1e-12 * abs(hi)):
                    continue  # ticks outside the view are not drawn
                out.append((lab.get_text(), lab.get_window_extent(r), lab.get_fontsize()))
    return out


def _overlaps(a, b, pad: float = 0.5) -> bool:
    return a.x0 < b.x1 - pad and b.x0 < a.x1 - pad and a.y0 < b.y1 - pad and b.y0 < a.y1 - pad


def tick_label_problems(fig) -> list[str]:
    """What a reader would see garbled in ``fig``: tick labels of one axis that overlap one another,
    tick labels of one axis in mixed font sizes (a log axis's minor labels keep the default size unless
    set), tick labels (and axis labels and titles) outside the figure, and axes whose boxes overlap. Draws the
    figure; returns one line per problem (empty: none).

    >>> fig, ax = new_axes()
    >>> _ = ax.plot([1, 2], [3, 4])
    >>> tick_label_problems(fig)
    []
    >>> ax.set_xticks([1, 1.001], ["a long label", "another long label"])  # doctest: +ELLIPSIS
    [...]
    >>> tick_label_problems(fig)[0].startswith("axes 0, x: tick labels overlap")
    True
    >>> plt.close(fig)
    """
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    W, H = fig.bbox.width, fig.bbox.height
    problems = []
    axes = [a for a in fig.axes if a.get_visible() and a.axison]
    for i, ax in enumerate(axes):
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            labels = _label_boxes(fig, axis)
            sizes = sorted({size for _, _, size in labels})
            if len(sizes) > 1:
                problems.append(
                    f"axes {i}, {name}: tick labels of mixed sizes {sizes} "
                    f"(tick_params(which='both', ...) sets the minor labels too)"
                )
            boxes = [(text, bb) for text, bb, _ in labels]
            for j in range(len(boxes)):
                for k in range(j + 1, len(boxes)):
                    if _overlaps(boxes[j][1], boxes[k][1]):
                        problems.append(
                            f"axes {i}, {name}: tick labels overlap: {boxes[j][0]!r} and {boxes[k][0]!r}"
                        )
            for text, bb in boxes:
                if bb.x0 < -0.5 or bb.y0 < -0.5 or bb.x1 > W + 0.5 or bb.y1 > H + 0.5:
                    problems.append(f"axes {i}, {name}: tick label {text!r} outside the figure")
        for t in (ax.xaxis.label, ax.yaxis.label, ax.title):
            if t.get_visible() and t.get_text():
                bb = t.get_window_extent(r)
                if bb.x0 < -0.5 or bb.y0 < -0.5 or bb.x1 > W + 0.5 or bb.y1 > H + 0.5:
                    problems.append(f"axes {i}: label {t.get_text()!r} outside the figure")
    for i in range(len(axes)):
        for j in range(i + 1, len(axes)):
            a = axes[i].get_tightbbox(r)
            b = axes[j].get_tightbbox(r)
            if a is not None and b is not None and _overlaps(a, b, pad=1.0):
                problems.append(f"axes {i} and {j} overlap (labels of one run into the other)")
    return problems


def _axis_overlaps(fig, axis) -> bool:
    boxes = [b for _, b, _ in _label_boxes(fig, axis)]
    return any(
        _overlaps(boxes[j], boxes[k]) for j in range(len(boxes)) for k in range(j + 1, len(boxes))
    )


def fit_tick_labels(fig, *, max_rounds: int = 4):
    """Remove tick labels that would overlap, axis by axis: first the minor labels (matplotlib labels
    minor ticks of a log axis that spans less than a decade, e.g. ``2.6x10^-1``, ``3x10^-1``, ...), then
    every other major label, until none overlap. Returns ``fig``."""
    fig.canvas.draw()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if not _axis_overlaps(fig, axis):
                continue
            axis.set_minor_formatter(NullFormatter())
            fig.canvas.draw()
            for _ in range(max_rounds):
                if not _axis_overlaps(fig, axis):
                    break
                locs = [t for t in axis.get_majorticklocs()]
                lo, hi = sorted(axis.get_view_interval())
                shown = [v for v in locs if lo <= v <= hi]
                if len(shown) <= 2:
                    break
                keep = shown[::2]
                labels = [axis.get_major_formatter()(v, i) for i, v in enumerate(keep)]
                axis.set_ticks(keep, labels)
                fig.canvas.draw()
    return fig


def plot_schatten_curve(svals, *, ps=None, ax=None, label=None, normalize=True, **line_kw):
    """Plot ``p -> ||W||_{S_p}^p`` (divided by its value at ``p = 0``, the rank, when ``normalize``).

    Returns the ``Axes``.
    """
    if ax is None:
        _, ax = new_axes()
    ps = torch.linspace(0, 2, 81, dtype=torch.float64) if ps is None else torch.as_tensor(ps)
    vals = schatten_power(svals, ps)
    if normalize:
        vals = vals / vals[..., :1]
    ax.plot(ps.numpy(), vals.numpy(), label=label, **line_kw)
    ax.set_xlabel("Schatten index $p$")
    ax.set_ylabel(r"$\|W\|_{S_p}^p$" + (" / rank" if normalize else ""))
    return ax


def plot_contributions(report, *, ax=None):
    """Each matrix's ``min_p T(p)`` (a :class:`~genbound.bounds.sakai_imaizumi.SpectralBoundReport`'s
    ``contribution``) against its layer, one marker per kind (``QK`` = a head's ``W_Q W_K^T``, ``V`` = a
    head's ``W_V W_O``, ``M_in``, ``M_out``), on a log scale. Returns the ``Axes``."""
    if ax is None:
        _, ax = new_axes()
    t = report.table
    labels = {
        "QK": r"QK ($W_Q W_K^\top$)",
        "V": r"V ($W_V W_O$)",
        "M_in": r"$M_{in}$",
        "M_out": r"$M_{out}$",
    }
    for kind, marker in (("QK", "o"), ("V", "s"), ("M_in", "^"), ("M_out", "v")):
        sel = t[t["kind"] == kind]
        ax.scatter(
            sel["layer"], sel["contribution"], marker=marker, s=14, label=labels[kind], alpha=0.7
        )
    ax.set_xlabel("layer")
    ax.set_ylabel(r"$\min_p T(p)$")
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
    ax.legend(fontsize="small")
    return ax


def plot_per_layer(table, column: str, *, ax=None, ylabel: str | None = None, label=None):
    """One matrix kind's ``column`` (``contribution``, ``sigma_max``, ...) against its layer: one
    marker per matrix (per head, per expert), and the layer's median as a line, on a log scale where
    every value is positive and they span a decade or more. ``table`` holds the kind's rows (columns ``layer`` and ``column``).
    Returns the ``Axes``."""
    import numpy as np

    if ax is None:
        _, ax = new_axes()
    x = table["layer"].to_numpy(dtype=float)
    y = table[column].to_numpy(dtype=float)
    ax.scatter(x, y, s=10, alpha=0.6, label=label)
    layers = np.unique(x)
    if len(layers):
        med = [float(np.median(y[x == v])) for v in layers]
        ax.plot(layers, med, color="0.25", linewidth=1.0, label="layer median")
    if len(y) and np.all(y > 0) and y.max() >= 10 * y.min():  # a decade or more: log
        ax.set_yscale("log")
    ax.set_xlabel("layer")
    ax.set_ylabel(ylabel or column)
    ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
    return ax


def plot_esd(svals, *, ax=None, bins: int = 40, marks: dict | None = None, label=None):
    """The empirical spectral density of a set of matrices on log-log axes: a histogram (a density,
    log-spaced bins) of the nonzero eigenvalues ``lambda = sigma^2`` of ``W^T W`` pooled over the
    arrays of singular values ``svals``, as WeightWatcher draws it, with vertical lines at ``marks``
    (label -> eigenvalue), for example the largest ``sigma_max^2``. Returns the ``Axes``."""
    import numpy as np

    if ax is None:
        _, ax = new_axes()
    lam = np.concatenate([np.asarray(s, dtype=float).ravel() ** 2 for s in svals] or [np.zeros(0)])
    lam = lam[np.isfinite(lam) & (lam > 0)]
    if lam.size:
        lo, hi = lam.min(), lam.max()
        edges = (
            np.geomspace(lo, hi * (1 + 1e-9), bins + 1) if hi > lo else np.array([lo / 2, lo * 2])
        )
        dens, edges = np.histogram(lam, bins=edges, density=True)
        ax.stairs(np.where(dens > 0, dens, np.nan), edges, fill=True, alpha=0.5, label=label)
        ax.set_xscale("log")
        if np.any(dens > 0):
            ax.set_yscale("log")
    styles = iter(["--", ":", "-."])
    for name, value in (marks or {}).items():
        if np.isfinite(value) and value > 0:
            ax.axvline(value, color="0.2", linestyle=next(styles, "--"), linewidth=1.0, label=name)
    ax.set_xlabel(r"eigenvalue $\lambda = \sigma^2$")
    ax.set_ylabel("density")
    return ax
