"""The figure of ``genbound analyze --plot FILE``: one row of panels per matrix kind.

One concept: the analysis figure (which file names it can be written to, and what it draws, with the
book's style from ``genbound.plotting``). Titled with the model, its family and the first clause of
the verdict line; per kind, the left panel is the per-layer view (each matrix's ``sigma_max``, the
spectral norm the proved bound pays for, and the layer's median; the proxies' terms are not drawn:
at ``p = 0`` they count ranks and do not move with the weights) and the right panel the empirical
spectral density of the kind's matrices (log-log, the largest and the median ``sigma_max^2``
marked). matplotlib is
imported only here, and only when a figure is asked for.
"""

from __future__ import annotations

import textwrap
from pathlib import Path, PurePath

from ..errors import ParameterError, require
from ..kinds import ALL_KINDS
from .esd import named_spectra

__all__ = ["check_plot_format", "model_name", "analysis_figure", "write_plot"]


def check_plot_format(plot) -> None:
    """Refuse a ``--plot`` file name whose extension is not a format matplotlib writes (``.png``,
    ``.pdf``, ``.svg``, ...): :class:`~genbound.errors.ParameterError` listing the formats."""
    FigureCanvasBase = require(
        "matplotlib.backend_bases", "genbound analyze --plot"
    ).FigureCanvasBase

    formats = sorted(FigureCanvasBase.get_supported_filetypes())
    ext = Path(plot).suffix.lower().lstrip(".")
    if ext not in formats:
        what = (
            f"format {ext!r} is not one matplotlib writes"
            if ext
            else "has no extension to give the format"
        )
        raise ParameterError(f"--plot {plot}: {what}; use one of {', '.join(formats)}")


def model_name(source: str) -> str:
    """A short name of the model a report read: a folder's name, ``org/name`` for a Hugging Face
    cache snapshot, the module's class for a module (a folder's parent too: ``.../org-model/model``
    names its model by the parent).

    >>> model_name("/cache/models--sentence-transformers--all-MiniLM-L6-v2/snapshots/abc123")
    'sentence-transformers/all-MiniLM-L6-v2'
    >>> model_name("/work/ckpt/bert-small"), model_name("module BertModel")
    ('ckpt/bert-small', 'module BertModel')
    """
    if source.startswith("module "):
        return source
    parts = PurePath(source).parts
    if "snapshots" in parts:
        i = parts.index("snapshots")
        if i > 0 and parts[i - 1].startswith("models--"):
            return parts[i - 1][len("models--") :].replace("--", "/")
    return "/".join(p for p in parts[-2:] if p != "/") or source


def _title(a) -> str:
    w = a.weights
    first = a.verdict().split(";")[0].strip()
    head = f"{model_name(str(w.source))}: {w.family}, {w.n_layers} layers, {w.n_heads} heads"
    return head + "\n" + textwrap.fill(first, 90)


def analysis_figure(a):
    """The figure of an :class:`~genbound.analysis.api.Analysis` or a
    :class:`~genbound.analysis.api.SpectraOnly`: one row per matrix kind (in table order), the
    per-layer view on the left, the kind's ESD on the right, titled with the model, the family and the
    verdict's first clause. Returns the ``Figure``."""
    import numpy as np

    from ..plotting import ROW_HEIGHT, fit_tick_labels, new_axes, plot_esd, plot_per_layer

    table = a.matrices()
    kinds = [k for k in ALL_KINDS if (table["kind"] == k).any()]
    spectra = named_spectra(a)
    fig, axes = new_axes(2, len(kinds), height=0.8 * ROW_HEIGHT * len(kinds) + 1.0, squeeze=False)
    for row, kind in enumerate(kinds):
        left, right = axes[row]
        rows = table[table["kind"] == kind]
        plot_per_layer(rows, "sigma_max", ax=left, ylabel=r"$\sigma_{max}$ (spectral norm)")
        left.set_title(f"{kind}: per layer")
        svals = [m.svals for m in spectra if m.kind == kind]
        smax2 = np.array([s[0] ** 2 if len(s) else 0.0 for s in svals])
        marks = {
            r"largest $\sigma_{max}^2$": float(smax2.max()) if smax2.size else 0.0,
            r"median $\sigma_{max}^2$": float(np.median(smax2)) if smax2.size else 0.0,
        }
        plot_esd(svals, ax=right, marks=marks)
        right.set_title(f"{kind}: ESD of {len(svals)} matrices")
        if row == 0:
            left.legend(fontsize="small")
            right.legend(fontsize="small")
    fig.suptitle(_title(a), fontsize=10)
    fig.tight_layout()  # leaves the title its room
    fit_tick_labels(fig)
    return fig


def write_plot(a, path) -> None:
    """Write :func:`analysis_figure` of ``a`` to ``path`` (the format from its extension)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = analysis_figure(a)
    try:
        fig.savefig(path, bbox_inches="tight")
    finally:
        plt.close(fig)
