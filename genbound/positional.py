"""The authors' sinusoidal positional encoding of the sparse-majority input, and the bounds on its rows'
norms that hold at every position: the ``T``-uniform input radius (:prf:ref:`lem-sm-uniform-radius`) and
the supremum over all positions of ``||PE_x||`` (:prf:ref:`prop-sm-encoding-sup`).

One concept: the positional encoding and its norm. It sits on the ground floor because the Part II claims
check these statements and the sparse-majority experiment (:mod:`genbound.experiments.sparse_majority`,
which re-exports every name) uses them.

The encoding :func:`sinusoidal_encoding` has frequencies
``omega_i = 10000^(-i/d)``, so ``omega_(i + d/4) = omega_i / 10``: the ``d`` coordinates form ``d/4``
chains ``i0, i0 + d/4, i0 + d/2, i0 + 3d/4`` whose angles at a position ``x`` are ``t, 10 t, 100 t,
1000 t`` with ``t = x omega_(i0 + 3d/4)``. For ``d`` divisible by 8 a chain's coordinates are all sines
(``i0`` even) or all cosines (``i0`` odd), so

``||PE_x||^2 = sum_(i0 even) F(t_i0) + sum_(i0 odd) (4 - F(t_i0))``, ``F(t) = sum_(a<4) sin^2(10^a t)``,

and since the chain phases are equidistributed over the integer positions (the ``10^(-4 i0 / d)`` are
linearly independent over the rationals and ``pi`` is transcendental), the supremum over positions is
``sqrt((d/8) (4 + S))`` with ``S = sup_t F(t)`` (``F >= 0`` has infimum 0 at ``t = 0``).

>>> round(chain_sum_sup(), 6)
3.935581
>>> round(encoding_supremum(64), 4)
7.9677
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ._validate import check_positive_int
from .device import resolve_dtype
from .errors import ParameterError

__all__ = [
    "D_MODEL",
    "sinusoidal_encoding",
    "encoding_rows",
    "uniform_input_radius",
    "CHAIN_RATIO",
    "CHAIN_LENGTH",
    "chain_sum",
    "chain_sum_sup",
    "encoding_norm_sq_by_chains",
    "supremum_from_chain_sup",
    "encoding_supremum",
]

#: The width ``d`` of the authors' script, the encoding's default.
D_MODEL = 64


def sinusoidal_encoding(n_positions: int, d: int, *, dtype=torch.float64) -> torch.Tensor:
    """The authors' positional encoding: ``PE[j, i] = sin(j / 10000^(i/d))`` for even ``i``, ``cos`` for odd.

    The exponent is ``i / d`` (not the usual ``2 floor(i/2) / d``), as in the original script.

    >>> pe = sinusoidal_encoding(3, 4)
    >>> pe.shape, pe[0].tolist()
    (torch.Size([3, 4]), [0.0, 1.0, 0.0, 1.0])
    """
    n_positions = check_positive_int(n_positions, "n_positions")
    return encoding_rows(torch.arange(n_positions), d, dtype=dtype)


def encoding_rows(positions: torch.Tensor, d: int, *, dtype=torch.float64) -> torch.Tensor:
    """Rows ``PE_j`` of :func:`sinusoidal_encoding` for arbitrary positions ``j`` (any integers, or reals),
    shape ``(len(positions), d)``, without forming the rows before them.

    >>> bool((encoding_rows(torch.tensor([2]), 4) == sinusoidal_encoding(3, 4)[2:]).all())
    True
    """
    d = check_positive_int(d, "d")
    j = torch.as_tensor(positions).to(torch.float64).reshape(-1, 1)
    i = torch.arange(d, dtype=torch.float64)[None, :]
    angle = j / 10000.0 ** (i / d)
    return torch.where(i % 2 == 0, torch.sin(angle), torch.cos(angle)).to(resolve_dtype(dtype))


def uniform_input_radius(d: int = D_MODEL) -> float:
    """``B_X = 1 + sqrt(d)``: a bound on the l2 norm of every input row at **every** sequence length.

    Each row is ``e + PE_j`` with a token embedding ``e`` of unit l1 norm (so ``||e||_2 <= 1``) and an
    encoding row whose ``d`` coordinates are sines or cosines (so ``||PE_j||_2 <= sqrt(d)`` for every
    position ``j``, however large); the triangle inequality gives ``1 + sqrt(d)``
    (:prf:ref:`lem-sm-uniform-radius`). Unlike :meth:`~genbound.experiments.sparse_majority.SparseMajorityTask.input_radius` it does not depend
    on ``T`` or on the seed, so a bound evaluated with it is the same function of the weights at every ``T``.

    >>> uniform_input_radius(64)
    9.0
    """
    return 1.0 + math.sqrt(check_positive_int(d, "d"))


#: Ratio of two frequencies ``d/4`` apart, ``10000^(1/4)``.
CHAIN_RATIO = 10.0
#: Coordinates per chain (``i0, i0 + d/4, i0 + d/2, i0 + 3d/4``).
CHAIN_LENGTH = 4


def chain_sum(t):
    """``F(t) = sum_(a < 4) sin^2(CHAIN_RATIO^a t)``, the squared norm of one chain of sine
    coordinates whose slowest angle is ``t`` (numpy, elementwise).

    >>> float(chain_sum(0.0)), round(float(chain_sum(math.pi / 2)), 12)
    (0.0, 1.0)
    """
    t = np.asarray(t, dtype=float)
    return sum(np.sin(CHAIN_RATIO**a * t) ** 2 for a in range(CHAIN_LENGTH))


def chain_sum_sup(*, step: float | None = None) -> float:
    """``S = sup_t F(t)`` (``chain_sum``): a grid over one period with step ``step`` (default
    ``1e-6``), then a bounded Brent search around the 32 best grid points.

    ``F`` has period ``pi`` and ``F(pi - t) = F(t)``, so the grid covers ``[0, pi/2]``; with ``F'' <=
    2 sum_a 100^a`` the grid's maximum is within ``(2 sum_a 100^a) step^2 / 8`` of ``S`` before the search
    (``2.5e-7`` at the default step)."""
    from scipy.optimize import minimize_scalar

    h = 1e-6 if step is None else float(step)
    if not h > 0:
        raise ParameterError(f"step must be positive, got {step!r}")
    t = np.arange(0.0, math.pi / 2 + h, h)
    F = chain_sum(t)
    best = float(F.max())
    for k in np.argsort(F)[-32:]:
        r = minimize_scalar(
            lambda x: -float(chain_sum(x)),
            bounds=(t[k] - h, t[k] + h),
            method="bounded",
            options={"xatol": 1e-14},
        )
        best = max(best, -float(r.fun))
    return best


def encoding_norm_sq_by_chains(positions, d: int = 64):
    """``||PE_x||^2`` at real positions ``x`` computed through the chains (module docstring): ``d/8``
    sine chains contribute ``F(t)``, ``d/8`` cosine chains ``4 - F(t)``, with ``t = x omega_(i0 + 3d/4)``.
    Equal to the squared row norm of :func:`encoding_rows` (a claim
    checks it). Requires ``d`` divisible by 8."""
    d = _check_d(d)
    x = np.asarray(positions, dtype=float).reshape(-1, 1)
    k = d // CHAIN_LENGTH
    i0 = np.arange(k)[None, :]
    slowest = 10000.0 ** (-i0 / d) / CHAIN_RATIO ** (CHAIN_LENGTH - 1)
    F = chain_sum(x * slowest)
    return np.where(i0 % 2 == 0, F, CHAIN_LENGTH - F).sum(1)


def supremum_from_chain_sup(S: float, d: int = 64) -> float:
    """``sqrt((d/8) (4 + S))``: the supremum of ``||PE_x||_2`` from ``S = sup F`` (``d/8`` sine chains at
    ``S``, ``d/8`` cosine chains at ``4 - inf F = 4``).

    >>> supremum_from_chain_sup(4.0, 64)
    8.0
    """
    d = _check_d(d)
    return math.sqrt(d / 8 * (CHAIN_LENGTH + S))


def encoding_supremum(d: int = 64) -> float:
    """``sup_x ||PE_x||_2`` over all positions (:prf:ref:`prop-sm-encoding-sup`): 7.9677 for ``d = 64``,
    against the ``sqrt(d) = 8`` of the uniform radius lemma."""
    return supremum_from_chain_sup(chain_sum_sup(), d)


def _check_d(d) -> int:
    d = check_positive_int(d, "d")
    if d % 8:
        raise ParameterError(
            f"d = {d} must be divisible by 8 (d/4 chains of four, half of them sines)"
        )
    return d
