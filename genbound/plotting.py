"""Figures for the book, in one shared style. Imports matplotlib, so ``import genbound`` does not load it.

Every plotting function takes an optional ``ax`` and returns the ``Axes`` it drew on; none calls
``plt.show()``.
"""

from __future__ import annotations

from pathlib import Path


import matplotlib.pyplot as plt
import torch

from .norms import schatten_power

__all__ = ["STYLE", "use_style", "new_axes", "plot_schatten_curve"]

#: Path of the shared matplotlib style sheet.
STYLE = Path(__file__).with_name("genbound.mplstyle")


def use_style() -> None:
    """Apply the book's matplotlib style."""
    plt.style.use(str(STYLE))


def new_axes(ncols: int = 1, **kwargs):
    """A new figure with ``ncols`` axes in the book's style; returns ``(fig, axes)``."""
    use_style()
    w, h = plt.rcParams["figure.figsize"]
    return plt.subplots(1, ncols, figsize=(w if ncols == 1 else 3.4 * ncols, h), **kwargs)


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
