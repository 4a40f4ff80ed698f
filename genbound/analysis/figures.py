"""The figure of ``genbound analyze --plot FILE``: each matrix's contribution to the spectrum-adaptive proxy.

One concept: the analysis figure (which file names it can be written to, and writing it with the
book's style, ``genbound.plotting.plot_contributions``). matplotlib is imported only here, and only
when a figure is asked for.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ParameterError, require

__all__ = ["check_plot_format", "write_plot"]


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


def write_plot(report, path) -> None:
    """Write ``genbound.plotting.plot_contributions`` of ``report`` to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..plotting import plot_contributions

    ax = plot_contributions(report)
    ax.figure.savefig(path, bbox_inches="tight")
    plt.close(ax.figure)
