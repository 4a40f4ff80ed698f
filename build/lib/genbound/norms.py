"""Matrix norms as pure functions of tensors: Schatten quasi-norms, spectral, Frobenius, nuclear,
``(p, q)`` group norms and the stable rank. Book: :ref:`ch-schatten` and :ref:`notation`.

Spectral quantities take **singular values** (from :mod:`genbound.spectra`), shape ``(..., k)``, so a
whole stack of matrices is handled in one call. Group norms take the **matrix** itself.

Schatten convention: for ``0 < p <= 2``, ``schatten_power(s, p) = sum_i s_i**p = ||W||_{S_p}^p``; for
``p = 0`` it is the limit ``p -> 0+``, the rank (the number of nonzero singular values). Singular values
at or below the numerical-rank threshold (:func:`genbound.spectra.rank_threshold`, relative tolerance
``rank_tol``) count as exact zeros for every ``p``; pass ``rank_tol=0`` to keep every positive value.

>>> import torch
>>> from genbound.norms import schatten_power, schatten_norm, frobenius_norm, stable_rank
>>> s = torch.tensor([3.0, 4.0, 0.0])
>>> schatten_power(s, 0).item(), schatten_power(s, 1).item(), schatten_power(s, 2).item()
(2.0, 7.0, 25.0)
>>> round(schatten_norm(s, 2).item(), 12), frobenius_norm(s).item()
(5.0, 5.0)
>>> round(stable_rank(s).item(), 4)
1.5625
"""

from __future__ import annotations

import math

import torch

from ._validate import as_tensor, check_real
from .errors import InputError, ParameterError
from .spectra import DEFAULT_RANK_TOL, threshold_spectrum

__all__ = [
    "P_MIN",
    "P_MAX",
    "schatten_power",
    "schatten_power_at",
    "log_schatten_power",
    "log_schatten_power_at",
    "schatten_norm",
    "schatten_norm_at",
    "spectral_norm",
    "frobenius_norm",
    "nuclear_norm",
    "stable_rank",
    "group_norm",
    "norm_21",
    "norm_11",
]

#: Range of Schatten indices genbound accepts (the spectrum-adaptive bound uses ``p`` in ``[0, 2]``).
P_MIN, P_MAX = 0.0, 2.0


def _svals(svals, name: str = "svals") -> torch.Tensor:
    s = as_tensor(svals, name, min_ndim=1)
    if bool((s < 0).any()):
        raise InputError(f"{name} must be nonnegative singular values; found a negative entry")
    return s


def _p_tensor(p, like: torch.Tensor) -> tuple[torch.Tensor, bool]:
    """Validate a scalar or 1-D grid of Schatten indices; return it as a tensor and whether it was scalar."""
    if isinstance(p, torch.Tensor):
        pt = p.detach().to(dtype=like.dtype, device=like.device)
    else:
        try:
            pt = torch.as_tensor(p, dtype=like.dtype, device=like.device)
        except (TypeError, ValueError, RuntimeError) as exc:
            raise ParameterError(
                f"p must be a number or a 1-D sequence of numbers, got {p!r}"
            ) from exc
    if pt.ndim > 1:
        raise ParameterError(f"p must be a scalar or a 1-D grid, got shape {tuple(pt.shape)}")
    if not bool(torch.isfinite(pt).all()) or bool(((pt < P_MIN) | (pt > P_MAX)).any()):
        bad = pt.flatten()[
            (~torch.isfinite(pt.flatten())) | (pt.flatten() < P_MIN) | (pt.flatten() > P_MAX)
        ]
        raise ParameterError(
            f"Schatten index p must lie in [{P_MIN:g}, {P_MAX:g}], got {bad[0].item()!r}"
        )
    return pt, pt.ndim == 0


def _log_spow(s: torch.Tensor, p: torch.Tensor, dim: int) -> torch.Tensor:
    """``logsumexp(p * log s)`` over the positive ``s`` along ``dim`` (``p`` broadcast to ``s``): the one
    formula of every Schatten power in genbound (``p = 0`` counts the positive values)."""
    positive = s > 0
    log_s = torch.where(positive, s, torch.ones_like(s)).log()
    terms = (p * log_s).masked_fill(~positive, -math.inf)
    return torch.logsumexp(terms, dim=dim)


def _thresholded(svals, rank_tol, size) -> torch.Tensor:
    s = _svals(svals)
    tol = check_real(rank_tol, "rank_tol", lo=0.0)
    return threshold_spectrum(s, rank_tol=tol, size=size) if tol else s


def log_schatten_power(
    svals, p, *, rank_tol: float = DEFAULT_RANK_TOL, size: int | None = None
) -> torch.Tensor:
    """``log(sum_i s_i**p)`` computed in log space, for one ``p`` or a whole grid at once.
    (Checked against numpy: :prf:ref:`prop-computed-norms`.)

    With ``s`` of shape ``(..., k)`` and ``p`` a scalar the result has shape ``(...)``; with ``p`` a 1-D
    grid of ``P`` indices it has shape ``(..., P)``. A zero matrix gives ``-inf``. The computation is
    ``logsumexp(p * log s)`` over the nonzero singular values, so it neither overflows nor underflows.
    ``size`` is ``min(rows, cols)`` of the matrices for the rank threshold (default: ``k``).

    >>> import torch
    >>> log_schatten_power(torch.tensor([1.0, 1.0]), torch.tensor([0.0, 2.0])).exp().tolist()
    [2.0, 2.0]
    """
    s = _svals(svals)
    pt, scalar = _p_tensor(p, s)
    s = _thresholded(s, rank_tol, size)
    grid = pt.reshape(-1)
    out = _log_spow(s.unsqueeze(-1), grid.view(*([1] * (s.ndim - 1)), 1, -1), dim=-2)  # (..., P)
    return out.squeeze(-1) if scalar else out


def log_schatten_power_at(
    svals, p, *, rank_tol: float = DEFAULT_RANK_TOL, size: int | None = None
) -> torch.Tensor:
    """``log(sum_i s_i**p)`` with **one index per matrix**: ``p`` has the batch shape of ``svals`` ``(..., k)``
    (or broadcasts to it); the result has shape ``(...)``. Differentiable in ``svals`` and ``p``.

    >>> import torch
    >>> log_schatten_power_at(torch.tensor([[3.0, 4.0], [1.0, 1.0]]), torch.tensor([1.0, 0.0])).exp().tolist()
    [7.0, 2.0]
    """
    s = _thresholded(svals, rank_tol, size)
    pt = p if isinstance(p, torch.Tensor) else torch.as_tensor(p, dtype=s.dtype)
    if not bool(torch.isfinite(pt).all()) or bool(((pt < P_MIN) | (pt > P_MAX)).any()):
        raise ParameterError(f"Schatten index p must lie in [{P_MIN:g}, {P_MAX:g}]")
    return _log_spow(s, pt.to(s.dtype).unsqueeze(-1), dim=-1)


def schatten_power(
    svals, p, *, rank_tol: float = DEFAULT_RANK_TOL, size: int | None = None
) -> torch.Tensor:
    """``||W||_{S_p}^p = sum_i s_i**p`` for ``p`` in ``[0, 2]`` (``p = 0``: the rank).

    ``p`` may be a scalar or a 1-D grid (then a trailing axis of the grid's length is added).

    >>> import torch
    >>> schatten_power(torch.tensor([2.0, 1.0, 0.0]), [0.0, 1.0, 2.0]).tolist()
    [2.0, 3.0, 5.0]
    >>> schatten_power(torch.tensor([1.0, 1e-17]), 0).item()  # below the rank threshold: a zero
    1.0
    >>> schatten_power(torch.tensor([1.0, 1e-17]), 0, rank_tol=0).item()  # kept
    2.0
    """
    return log_schatten_power(svals, p, rank_tol=rank_tol, size=size).exp()


def schatten_power_at(svals, p, *, rank_tol: float = DEFAULT_RANK_TOL) -> torch.Tensor:
    """``||W||_{S_p}^p`` with one index per matrix (:func:`log_schatten_power_at`, exponentiated).

    >>> import torch
    >>> schatten_power_at(torch.tensor([[2.0, 1.0], [2.0, 1.0]]), torch.tensor([0.0, 2.0])).tolist()
    [2.0, 5.0]
    """
    return log_schatten_power_at(svals, p, rank_tol=rank_tol).exp()


def schatten_norm(svals, p, *, rank_tol: float = DEFAULT_RANK_TOL) -> torch.Tensor:
    """Schatten quasi-norm ``||W||_{S_p} = (sum_i s_i**p)**(1/p)`` for ``p`` in ``(0, 2]``; rank at ``p = 0``.

    It is a norm for ``p >= 1`` and a quasi-norm for ``0 < p < 1``; it decreases in ``p``
    (:prf:ref:`lem-schatten-order`).

    >>> import torch
    >>> schatten_norm(torch.tensor([3.0, 4.0]), 1).item(), schatten_norm(torch.tensor([3.0, 4.0]), 0).item()
    (7.0, 2.0)
    """
    s = _svals(svals)
    pt, scalar = _p_tensor(p, s)
    out = _norm_from_power(
        log_schatten_power(s, pt.reshape(-1), rank_tol=rank_tol), pt.reshape(-1)
    )  # (..., P)
    return out.squeeze(-1) if scalar else out


def _norm_from_power(logp: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """``exp(log ||W||_{S_p}^p / p)`` for ``p > 0`` and the rank ``exp(log rank)`` at ``p = 0``."""
    safe = torch.where(p > 0, p, torch.ones_like(p))
    return torch.where(p > 0, (logp / safe).exp(), logp.exp())


def schatten_norm_at(svals, p, *, rank_tol: float = DEFAULT_RANK_TOL) -> torch.Tensor:
    """:func:`schatten_norm` with one index per matrix (``p`` of the batch shape, as
    :func:`log_schatten_power_at`).

    >>> import torch
    >>> schatten_norm_at(torch.tensor([[3.0, 4.0], [3.0, 4.0]]), torch.tensor([2.0, 0.0])).tolist()
    [5.0, 2.0]
    """
    logp = log_schatten_power_at(svals, p, rank_tol=rank_tol)
    pt = p if isinstance(p, torch.Tensor) else torch.as_tensor(p, dtype=logp.dtype)
    return _norm_from_power(logp, pt.to(logp.dtype))


def spectral_norm(svals) -> torch.Tensor:
    """Largest singular value ``||W||_2`` (operator norm from l2 to l2).

    >>> import torch
    >>> spectral_norm(torch.tensor([[1.0, 5.0], [2.0, 0.5]])).tolist()
    [5.0, 2.0]
    """
    return _svals(svals).max(dim=-1).values


def frobenius_norm(svals) -> torch.Tensor:
    """``||W||_F = sqrt(sum_i s_i**2)`` (equal to ``||W||_{S_2}``)."""
    return torch.linalg.vector_norm(_svals(svals), ord=2, dim=-1)


def nuclear_norm(svals) -> torch.Tensor:
    """``||W||_* = sum_i s_i`` (equal to ``||W||_{S_1}``; the chain of :prf:ref:`lem-norm-chain`)."""
    return _svals(svals).sum(dim=-1)


def stable_rank(svals, *, rank_tol: float = DEFAULT_RANK_TOL) -> torch.Tensor:
    """Stable rank ``||W||_F**2 / ||W||_2**2``; always ``<= rank`` (:prf:ref:`lem-stable-rank`).

    Like every spectral quantity with a rank in it, singular values at or below the numerical-rank
    threshold are zeros first, so a matrix of numerical rank 0 has stable rank 0.

    >>> import torch
    >>> stable_rank(torch.tensor([1.0, 1.0, 1.0])).item(), stable_rank(torch.zeros(2)).item()
    (3.0, 0.0)
    """
    s = _thresholded(svals, rank_tol, None)
    top = s.max(dim=-1).values
    fro2 = (s * s).sum(dim=-1)
    return torch.where(
        top > 0, fro2 / torch.where(top > 0, top, torch.ones_like(top)) ** 2, torch.zeros_like(top)
    )


def _check_group_exponent(v, name: str) -> float:
    if isinstance(v, str) and v.lower() in {"inf", "infinity"}:
        return math.inf
    x = float(v) if not isinstance(v, bool) and isinstance(v, (int, float)) else None
    if x is None or math.isnan(x) or x < 1:
        raise ParameterError(f"{name} must be a number >= 1 or inf, got {v!r}")
    return x


def group_norm(W, p=2, q=1) -> torch.Tensor:
    """The ``(p, q)`` group norm with the **column** convention: ``||W||_{p,q} = || (||W[:, j]||_p)_j ||_q``.

    So ``group_norm(W, 2, 1)`` is the sum of the column l2 norms, ``group_norm(W, 1, 1)`` the entrywise
    l1 norm, ``group_norm(W, 2, 2)`` the Frobenius norm. ``W`` has shape ``(..., rows, cols)``; ``p`` and
    ``q`` are numbers ``>= 1`` or ``inf``.

    >>> import torch
    >>> W = torch.tensor([[3.0, 0.0], [4.0, -1.0]])
    >>> group_norm(W, 2, 1).item(), group_norm(W, 1, 1).item(), group_norm(W, 2, float("inf")).item()
    (6.0, 8.0, 5.0)
    """
    pp = _check_group_exponent(p, "p")
    qq = _check_group_exponent(q, "q")
    M = as_tensor(W, "W", min_ndim=2)
    cols = torch.linalg.vector_norm(M, ord=pp, dim=-2)
    return torch.linalg.vector_norm(cols, ord=qq, dim=-1)


def norm_21(W) -> torch.Tensor:
    """``||W||_{2,1}``: the sum of the column l2 norms (column convention)."""
    return group_norm(W, 2, 1)


def norm_11(W) -> torch.Tensor:
    """``||W||_{1,1}``: the sum of the absolute values of all entries."""
    return group_norm(W, 1, 1)
