"""What a results row reports of the Part II bounds of a network (:prf:ref:`prop-sm-row-bounds`): the certified
value through the union over the grid of radii (:prf:ref:`thm-radius-union`), the trivial flag, the m-free
capacity at the network's own norms and the sample size needed.

The assembly lives here, beside the bounds it assembles, so that a claim can check it against an
independent recomputation (the claims stand below the experiments); the experiments
(:mod:`genbound.experiments.bound_measures`) call it and add nothing to it.

>>> from genbound.nets import ReferenceTransformer
>>> row = bound_fields(ReferenceTransformer(4, seed=0), m=1000, seq_len=9, delta=0.05, B_X=1.0)
>>> sorted(row)[:3], row["tt_bound"] > 0
(['edelman_bound', 'edelman_capacity', 'edelman_trivial'], True)
"""

from __future__ import annotations

import math
from typing import Any, Callable

from .edelman import edelman_bound_from_model
from .trauger_tewari import trauger_tewari_bound_from_model

__all__ = ["bound_results", "bound_fields"]


def bound_results(
    net,
    *,
    m: int,
    seq_len: int,
    delta: float,
    B_X: float,
    margin: float = 1.0,
    radius_grid: bool = True,
):
    """The two Part II bound results of ``net`` (a ``ReferenceTransformer`` or its saved
    :class:`~genbound.nets.ModelNorms`), as :mod:`genbound.bounds` returns them:
    :func:`~genbound.bounds.trauger_tewari.trauger_tewari_bound_from_model` and
    :func:`~genbound.bounds.edelman.edelman_bound_from_model` (the latter for ``seq_len + 1`` rows,
    the ``[CLS]`` row included), with ``m`` training sequences, input radius ``B_X``, confidence
    ``delta``, ramp ``margin`` and, with ``radius_grid`` (default), the union over a grid of radii of
    :prf:ref:`thm-radius-union` (valid at norms read off a trained network)."""

    tt = trauger_tewari_bound_from_model(
        net, m=m, delta=delta, B_X=B_X, margin=margin, radius_grid=radius_grid
    )
    ed = edelman_bound_from_model(
        net, m=m, T=seq_len + 1, delta=delta, B_X=B_X, margin=margin, radius_grid=radius_grid
    )
    return tt, ed


def bound_fields(
    net,
    *,
    m: int,
    seq_len: int,
    delta: float,
    B_X: float,
    margin: float = 1.0,
    radius_grid: bool = True,
    m_star_target: float | None = None,
) -> dict:
    """What each Part II bound says at ``m``, flat for a results row: ``{tt,edelman}_bound`` (the
    certified value, with the union over the grid of radii when ``radius_grid``), ``_trivial`` (that
    value is the trivial cap), ``_capacity`` and, with ``m_star_target``, ``_m_star`` (``samples_needed``
    of the certified bound, exact).

    ``_capacity`` is the m-free complexity **at the network's own norms** (the ``capacity`` of the
    result without the radius grid): the grid rounds every radius up to a power of 2, so networks with
    different norms would share the capacity of one grid point; the capacity is free of ``delta``, so
    the grid's prior does not enter it, and the rounding changes it by less than a factor 2 per radius.
    The Edelman-type bound is stated for one layer: for a deeper ``net`` its fields are ``nan``."""
    kw: dict[str, Any] = dict(m=m, delta=delta, B_X=B_X, margin=margin)
    theorems: tuple[tuple[str, Callable[..., Any], dict[str, Any]], ...] = (
        ("tt", trauger_tewari_bound_from_model, {}),
        ("edelman", edelman_bound_from_model, {"T": seq_len + 1}),
    )
    out: dict = {}
    for name, theorem, extra in theorems:
        if name == "edelman" and net.n_layers != 1:  # the Edelman-type bound is for one layer
            keys = ("bound", "trivial", "capacity") + (
                ("m_star",) if m_star_target is not None else ()
            )
            out.update({f"{name}_{k}": math.nan for k in keys})
            continue
        r = theorem(net, radius_grid=radius_grid, **kw, **extra)
        r_own = r if not radius_grid else theorem(net, radius_grid=False, **kw, **extra)
        out[f"{name}_bound"], out[f"{name}_trivial"], out[f"{name}_capacity"] = (
            r.value,
            r.trivial,
            r_own.capacity,
        )
        if m_star_target is not None:
            out[f"{name}_m_star"] = float(r.samples_needed(m_star_target))
    return out
