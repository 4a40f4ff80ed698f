"""Figures for the book, in one shared style. Imports matplotlib, so ``import genbound`` does not load it.

Every plotting function takes an optional ``ax`` and returns the ``Axes`` it drew on; none calls
``plt.show()``.
"""

from __future__ import annotations

from pathlib import Path


import matplotlib.pyplot as plt
import torch

from .norms import schatten_power

__all__ = ["STYLE", "use_style", "new_axes", "plot_schatten_curve", "plot_contributions"]

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


def plot_contributions(report, *, ax=None):
    """Each matrix's ``min_p T(p)`` (a :class:`~genbound.bounds.sakai_imaizumi.SpectralBoundReport`'s
    ``contribution``) against its layer, one marker per kind (``QK`` = a head's ``W_Q^T W_K``, ``V`` = a
    head's ``W_V W_O``, ``M_in``, ``M_out``), on a log scale. Returns the ``Axes``."""
    if ax is None:
        _, ax = new_axes()
    t = report.table
    labels = {"QK": r"QK ($W_Q^\top W_K$)", "V": r"V ($W_V W_O$)", "M_in": r"$M_{in}$", "M_out": r"$M_{out}$"}
    for kind, marker in (("QK", "o"), ("V", "s"), ("M_in", "^"), ("M_out", "v")):
        sel = t[t["kind"] == kind]
        ax.scatter(sel["layer"], sel["contribution"], marker=marker, s=14, label=labels[kind], alpha=0.7)
    ax.set_xlabel("layer")
    ax.set_ylabel(r"$\min_p T(p)$")
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
    ax.legend(fontsize="small")
    return ax
