"""What the claim modules of Part I share: the chapter paths, exact Rademacher averages over all sign vectors,
and a two-sided relative ratio. The claims themselves live in one module per chapter: :mod:`.part1_rademacher`,
:mod:`.part1_covering`, :mod:`.part1_linear_classes`, :mod:`.part1_softmax_attention`, and the equality checks of
their published right-hand sides in :mod:`.part1_equalities`."""

from __future__ import annotations

import itertools
import math

import torch

from .. import rademacher as rad

CH_RAD = "book/part1/rademacher.md"
CH_COV = "book/part1/covering.md"
CH_LIN = "book/part1/linear_classes.md"
CH_SOFT = "book/part1/softmax_attention.md"
F64 = torch.float64
_TINY = 1e-300


def _signs(m: int) -> torch.Tensor:
    return torch.tensor(list(itertools.product((-1.0, 1.0), repeat=m)), dtype=F64)


def _rad_exact(A: torch.Tensor) -> torch.Tensor:
    """E_sigma max_k (1/m) sigma . A[..., k, :] over all sign vectors; A: (..., K, m)
    (:func:`genbound.rademacher.rademacher_finite_exact`, the published function)."""
    return rad.rademacher_finite_exact(A)


def _rel_ratio(got, want):
    """``1 + |got - want| / |want|`` (``1`` when equal, ``inf`` when only ``want`` is 0): two-sided."""
    if got == want:
        return 1.0
    if want == 0:
        return math.inf
    return 1.0 + abs(got - want) / abs(want)
