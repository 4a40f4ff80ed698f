"""Synthetic singular-value spectra of ``N x N`` matrices (low rank, polynomial and exponential decay, a spike
over a floor): the examples of :ref:`ch-sa-examples`, float64 and descending.

Re-exported by :mod:`genbound.schatten_entropy` (``se.low_rank_spectrum`` keeps working), which held them
before; they are inputs to its terms, not part of them.
"""

from __future__ import annotations

import torch

from ._validate import check_real
from .errors import ParameterError

__all__ = [
    "low_rank_spectrum",
    "polynomial_spectrum",
    "exponential_spectrum",
    "spike_floor_spectrum",
]


def _n(N):
    if isinstance(N, bool) or not isinstance(N, int) or N < 1:
        raise ParameterError(f"N must be a positive integer, got {N!r}")
    return torch.arange(1, N + 1, dtype=torch.float64)


def low_rank_spectrum(N: int, r: int, sigma: float = 1.0) -> torch.Tensor:
    """``r`` singular values equal to ``sigma``, then ``N - r`` zeros.

    >>> low_rank_spectrum(4, 2).tolist()
    [1.0, 1.0, 0.0, 0.0]
    """
    i = _n(N)
    if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r <= N:
        raise ParameterError(f"r must be an integer in [0, N], got {r!r}")
    sig = check_real(sigma, "sigma", lo=0, lo_open=True)
    return torch.where(
        i <= r, torch.full_like(i, sig), torch.zeros_like(i)
    )  # float64, not torch's default


def polynomial_spectrum(N: int, beta: float, sigma1: float = 1.0) -> torch.Tensor:
    """``sigma_i = sigma1 * i**(-beta)``, ``i = 1..N``.

    >>> polynomial_spectrum(3, 1.0).tolist()
    [1.0, 0.5, 0.3333333333333333]
    """
    return check_real(sigma1, "sigma1", lo=0, lo_open=True) * _n(N) ** (
        -check_real(beta, "beta", lo=0)
    )


def exponential_spectrum(N: int, c: float, sigma1: float = 1.0) -> torch.Tensor:
    """``sigma_i = sigma1 * exp(-c (i - 1))``."""
    return check_real(sigma1, "sigma1", lo=0, lo_open=True) * torch.exp(
        -check_real(c, "c", lo=0) * (_n(N) - 1)
    )


def spike_floor_spectrum(N: int, r: int, eta: float, sigma: float = 1.0) -> torch.Tensor:
    """``r`` values ``sigma`` on a floor of ``N - r`` values ``eta``.

    >>> spike_floor_spectrum(3, 1, 0.01).tolist()
    [1.0, 0.01, 0.01]
    """
    i = _n(N)
    if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r <= N:
        raise ParameterError(f"r must be an integer in [0, N], got {r!r}")
    sig, floor = check_real(sigma, "sigma", lo=0, lo_open=True), check_real(eta, "eta", lo=0)
    return torch.where(
        i <= r, torch.full_like(i, sig), torch.full_like(i, floor)
    )  # float64 throughout
