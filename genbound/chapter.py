"""What the book's chapters share: the helpers every chapter's setup cell used to define for itself.

A chapter (a MyST notebook under ``book/``) checks the claims it states, glues numbers and figures into its
prose with MyST-NB's ``glue`` and draws its figures with ``genbound.plotting``. Its setup cell opens
with the same two lines in every chapter (``tests/book/test_chapter_style.py`` holds them to it)::

    from genbound.chapter import glue, glue_figure, glue_many
    from genbound.chapter import show_claim as show, single_thread

* :func:`show_claim` checks one claim (:func:`genbound.claims.check`, cached per label), glues its one-line
  summary as ``{label}-summary`` and its worst ratio as ``{label}-ratio`` (``{:.4f}``; ``ratio_digits``
  changes the digits, ``None`` glues no ratio), and stops the chapter if the claim fails;
* :func:`glue` is MyST-NB's ``glue`` with ``display=False`` as its default (a chapter glues a value to
  quote it in prose, not to show it where it is computed), imported when first called (so this module,
  like the rest of genbound, imports without the book's toolchain); :func:`glue_many` glues a mapping;
* :func:`glue_figure` glues a figure for a MyST-NB ``glue:figure`` directive and closes it, so that
  the cell that draws it shows nothing;
* :func:`single_thread` runs torch on one thread (the book's experiments take many small steps, for which
  one thread is fastest on a shared machine).

The book uses the package, never the reverse: nothing in genbound imports this module.

>>> from genbound.chapter import show_claim
>>> r = show_claim("lem-spectral-counting", glue_fn=lambda name, value: print(name, value))
lem-spectral-counting-summary worst ratio 1.0000 over 2,000 random and 2,400 adversarial trials; symbolic check passed
lem-spectral-counting-ratio 1.0000
>>> r.passed
True
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

__all__ = ["glue", "glue_many", "glue_figure", "show_claim", "single_thread"]


def glue(name: str, value: Any, display: bool = False) -> None:
    """MyST-NB's ``glue(name, value, display)``: ``value`` under ``name`` for MyST-NB's ``glue`` roles
    and directives, recorded and not shown in the cell's output unless ``display=True``."""
    from myst_nb import glue as _glue

    _glue(name, value, display=display)


def glue_many(values: Mapping[str, Any], *, prefix: str = "") -> None:
    """:func:`glue` every ``name -> value`` of ``values``, each name with ``prefix`` before it.

    >>> seen = []
    >>> import genbound.chapter as gc
    >>> real, gc.glue = gc.glue, lambda name, value: seen.append((name, value))
    >>> try:
    ...     gc.glue_many({"m": 100, "delta": 0.05}, prefix="sm-")
    ... finally:
    ...     gc.glue = real
    >>> seen
    [('sm-m', 100), ('sm-delta', 0.05)]
    """
    for name, value in values.items():
        glue(f"{prefix}{name}", value)


def glue_figure(name: str, fig) -> None:
    """Glue the matplotlib figure ``fig`` as ``name`` (not shown where it is drawn) and close it."""
    import matplotlib.pyplot as plt

    glue(name, fig)
    plt.close(fig)


def show_claim(label: str, *, ratio_digits: int | None = 4, glue_fn: Callable | None = None):
    """Check the claim ``label`` and glue ``{label}-summary`` (``ClaimResult.summary()``)
    and, unless ``ratio_digits`` is ``None``, ``{label}-ratio`` (the worst ratio to ``ratio_digits``
    decimals); raise ``AssertionError`` if the claim fails, so that its chapter fails to build.
    ``glue_fn`` replaces :func:`glue` (for use outside a notebook). Returns the
    ``ClaimResult``."""
    from . import claims

    put = glue if glue_fn is None else glue_fn
    r = claims.check(label)
    assert r.passed, r
    put(f"{label}-summary", r.summary())
    if ratio_digits is not None:
        put(f"{label}-ratio", f"{r.worst_ratio:.{int(ratio_digits)}f}")
    return r


def single_thread() -> None:
    """``torch.set_num_threads(1)``: small steps run fastest on one thread when other work shares the CPUs."""
    import torch

    torch.set_num_threads(1)
