"""Every bound the sparse-majority experiment reports (part of :mod:`genbound.experiments.sparse_majority`):
the functions of :mod:`genbound.experiments.bound_measures` (the neutral module both experiments use),
and the recomputation of a saved run's bound columns from its saved norms."""

from __future__ import annotations

from ..bound_measures import (
    M_STAR_TARGET,
    bound_fields,
    bound_results,
    bounds_for,
    capacity_fields,
    sample_size_needed,
    spectral_measures,
)
from ...nets import ModelNorms

__all__ = [
    "M_STAR_TARGET",
    "saved_norms",
    "row_bound_fields",
    "bound_results",
    "bounds_for",
    "bound_fields",
    "sample_size_needed",
    "spectral_measures",
    "capacity_fields",
]


def saved_norms(row: dict):
    """The :class:`~genbound.nets.ModelNorms` of a saved run (its ``norms_json`` column)."""

    return ModelNorms.from_json(row["norms_json"])


def row_bound_fields(row: dict, config) -> dict:
    """Every bound column of a saved run recomputed from its saved norms alone (no weights, no
    training): :func:`bound_fields` of :func:`saved_norms` with the run's ``m``, ``T`` and input radius
    and the configuration's ``delta``, margin and ``m*`` target: the same code that produced the
    columns from the trained network."""
    return bound_fields(
        saved_norms(row),
        m=int(row["n_train"]),
        seq_len=int(row["seq_len"]),
        delta=config.delta,
        B_X=float(row["input_radius"]),
        margin=config.margin,
        m_star_target=M_STAR_TARGET if config.m_star else None,
    )
