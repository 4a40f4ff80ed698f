"""Bounds at the trained norms: the union bound over a grid of radii (:prf:ref:`thm-radius-union`).

A bound such as :func:`~genbound.bounds.trauger_tewari.trauger_tewari_bound` holds with probability
``1 - delta`` for the class of networks whose norms are at most radii ``r = (r_1, ..., r_k)`` **chosen
before the sample**. Reading the radii off the trained network is not allowed by that statement. The
standard repair (stratification, as in the margin bounds of Bartlett, Foster & Telgarsky 2017; recalled,
not checked against their text) applies the theorem once for every point of a grid of radius vectors, with confidence
``delta * pi(i_1) ... pi(i_k)``, and takes a union bound. Here the grid is ``{2^i : i in Z}`` for every
radius and ``pi(i) = (2/3) / ((|i|+1)(|i|+2))`` (:mod:`genbound.symbolic.radius_grid` derives the 2/3);
the products sum to 1 over all grid tuples, so the whole family holds together with probability
``1 - delta``. A trained network is then covered by the grid point that rounds each of its norms
**up** (less than a factor 2 each), at the confidence of that point.

>>> grid_point(3.0)
(2, 4.0)
>>> grid_point(0.25)
(-2, 0.25)
>>> float(prior(0)), float(prior(1)), float(prior(-1))
(0.3333333333333333, 0.1111111111111111, 0.1111111111111111)
>>> round(union_delta(0.05, [0, 1]), 12)
0.001851851852
"""

from __future__ import annotations

import math
from typing import Iterable

from .._validate import check_real
from ..errors import ParameterError

__all__ = [
    "GRID_BASE",
    "PRIOR_NORMALISER",
    "grid_point",
    "prior",
    "union_delta",
    "round_radii",
    "round_layer_radii",
]

#: The grid ratio; radii are rounded up to powers of 2.
GRID_BASE = 2.0
#: ``c`` in ``pi(i) = c / ((|i|+1)(|i|+2))``; equals :func:`genbound.symbolic.radius_grid.prior_normaliser`
#: (a test compares them).
PRIOR_NORMALISER = 2.0 / 3.0


def grid_point(radius: float, *, base: float = GRID_BASE) -> tuple[int, float]:
    """The grid index ``i = ceil(log_base radius)`` and grid radius ``base^i >= radius`` (``< base *
    radius``). Exact at powers of the base (no round-off can push ``2^i`` to ``2^(i+1)``)."""
    r = check_real(radius, "radius", lo=0.0, lo_open=True)
    base = check_real(base, "base", lo=1.0, lo_open=True)
    i = math.ceil(math.log(r, base))
    while base ** (i - 1) >= r:  # log round-off: step down to the smallest grid point >= r
        i -= 1
    while base**i < r:
        i += 1
    return i, float(base**i)


def prior(i: int) -> float:
    """``pi(i) = (2/3) / ((|i|+1)(|i|+2))``: the share of ``delta`` given to grid index ``i``."""
    if int(i) != i:
        raise ParameterError(f"grid index must be an integer, got {i!r}")
    a = abs(int(i))
    return PRIOR_NORMALISER / ((a + 1) * (a + 2))


def union_delta(delta: float, indices: Iterable[int]) -> float:
    """``delta * prod_j pi(i_j)``: the confidence at which the fixed-radius theorem is applied at the
    grid point with indices ``indices`` (one per radius)."""
    delta = check_real(delta, "delta", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    out = delta
    for i in indices:
        out *= prior(i)
    return out


def round_radii(
    radii: Iterable[float], *, base: float = GRID_BASE
) -> tuple[list[float], list[int]]:
    """Round every radius up to the grid: returns the grid radii and their indices (same order)."""
    pts = [grid_point(r, base=base) for r in radii]
    if not pts:
        raise ParameterError("round_radii needs at least one radius")
    return [p[1] for p in pts], [p[0] for p in pts]


def round_layer_radii(layers, *, base: float = GRID_BASE):
    """Round every radius of a sequence of radius records (frozen dataclasses whose fields are floats,
    tuples of floats, or ``None``) up to the grid; returns the rounded records and all grid indices."""
    from dataclasses import fields, replace

    out, idx = [], []
    for lay in layers:
        kw: dict[str, object] = {}
        for f in fields(lay):
            v = getattr(lay, f.name)
            if v is None:
                continue
            if isinstance(v, tuple):
                rs, i = round_radii(v, base=base)
                kw[f.name] = tuple(rs)
            else:
                (r,), i = round_radii([v], base=base)
                kw[f.name] = r
            idx += i
        out.append(replace(lay, **kw))
    return out, idx
