"""Singular values, batched, on the chosen device, in float64 by default.

This is the *spectra* stage of genbound's data flow (weights -> spectra -> norms -> bounds). Every
function takes a matrix or a stack of matrices of shape ``(..., rows, cols)`` and returns singular values
in **descending** order, shape ``(..., min(rows, cols))``. Book: :ref:`ch-schatten` (Part III).

Low-rank products such as a head's query-key map ``W_Q^T W_K`` (rank at most ``d_head``) are never
formed densely: :func:`product_singular_values` takes the thin factors and returns the exact nonzero
singular values from a small ``r x r`` core, so no round-off "noise floor" appears.

>>> import torch
>>> from genbound.spectra import singular_values, numerical_rank
>>> W = torch.tensor([[3.0, 0.0], [0.0, 4.0]])
>>> singular_values(W)
tensor([4., 3.], dtype=torch.float64)
>>> int(numerical_rank(singular_values(torch.ones(3, 3))))
1
"""

from __future__ import annotations

import torch

from ._validate import as_tensor, check_real
from .device import resolve_device, resolve_dtype
from .errors import ShapeError

__all__ = [
    "DEFAULT_RANK_TOL",
    "singular_values",
    "product_singular_values",
    "rank_threshold",
    "numerical_rank",
    "threshold_spectrum",
]

#: Default relative tolerance of the numerical rank (see :func:`rank_threshold`).
DEFAULT_RANK_TOL = 1e-10


def singular_values(W, *, device=None, dtype=None, driver: str | None = None) -> torch.Tensor:
    """Singular values of ``W`` (shape ``(..., rows, cols)``), descending, batched in one call.

    Parameters
    ----------
    W
        A tensor, array or nested list, at least 2-D, finite.
    device
        ``None``/``"auto"`` (CUDA if available), ``"cpu"``, ``"cuda"``.
    dtype
        ``None`` (float64) or ``"float32"``.
    driver
        Optional cuSOLVER driver for CUDA (``"gesvd"``, ``"gesvdj"``, ``"gesvda"``); ignored on CPU.

    Examples
    --------
    >>> singular_values([[1.0, 0.0], [0.0, -2.0]]).tolist()
    [2.0, 1.0]
    >>> singular_values(torch.zeros(4, 2, 3)).shape
    torch.Size([4, 2])
    """
    dev = resolve_device(device)
    t = as_tensor(W, "W", min_ndim=2, device=dev, dtype=resolve_dtype(dtype))
    if t.shape[-1] == 0 or t.shape[-2] == 0:
        raise ShapeError(f"W has an empty matrix dimension (shape {tuple(t.shape)})")
    kwargs = {"driver": driver} if (driver is not None and dev.type == "cuda") else {}
    s = torch.linalg.svdvals(t, **kwargs)
    # torch documents descending order; enforce it rather than trust every backend.
    return torch.sort(s, dim=-1, descending=True).values


def product_singular_values(left, right, *, device=None, dtype=None) -> torch.Tensor:
    """Exact singular values of the product ``left @ right`` from its thin factors.

    ``left`` has shape ``(..., rows, r)`` and ``right`` shape ``(..., r, cols)`` with a small inner size
    ``r``. With thin QR factorisations ``left = Q_1 R_1`` and ``right^T = Q_2 R_2`` the product is
    ``Q_1 (R_1 R_2^T) Q_2^T``, and ``Q_1``, ``Q_2`` have orthonormal columns, so the nonzero singular
    values of the product are those of the ``r x r`` core ``R_1 R_2^T``. The result has
    ``min(rows, cols)`` entries: the ``min(r, rows, cols)`` core values followed by exact zeros. Cost
    ``O((rows + cols) r^2)`` instead of ``O(rows cols min(rows, cols))``.

    >>> import torch
    >>> g = torch.Generator().manual_seed(0)
    >>> A = torch.randn(50, 3, generator=g, dtype=torch.float64)
    >>> B = torch.randn(3, 40, generator=g, dtype=torch.float64)
    >>> s = product_singular_values(A, B)
    >>> s.shape, bool((s[3:] == 0).all())
    (torch.Size([40]), True)
    >>> bool(torch.allclose(s[:3], singular_values(A @ B)[:3], rtol=1e-12))
    True
    """
    dev = resolve_device(device)
    dt = resolve_dtype(dtype)
    L = as_tensor(left, "left", min_ndim=2, device=dev, dtype=dt)
    R = as_tensor(right, "right", min_ndim=2, device=dev, dtype=dt)
    if L.shape[-1] != R.shape[-2]:
        raise ShapeError(
            f"inner sizes differ: left has shape {tuple(L.shape)}, right has shape {tuple(R.shape)}"
        )
    rows, r, cols = L.shape[-2], L.shape[-1], R.shape[-1]
    try:
        batch = torch.broadcast_shapes(L.shape[:-2], R.shape[:-2])
    except RuntimeError as exc:
        raise ShapeError(
            f"batch shapes of left {tuple(L.shape)} and right {tuple(R.shape)} do not broadcast"
        ) from exc
    k = min(rows, cols)
    if r >= k:  # nothing to gain: the product is small or not low rank
        return singular_values(L @ R, device=dev, dtype=dt)
    R1 = torch.linalg.qr(L, mode="r").R  # (..., r, r) because rows > r
    R2 = torch.linalg.qr(R.transpose(-1, -2), mode="r").R  # (..., r, r) because cols > r
    core = R1 @ R2.transpose(-1, -2)
    s = torch.sort(torch.linalg.svdvals(core), dim=-1, descending=True).values
    out = torch.zeros(*batch, k, dtype=dt, device=dev)
    out[..., :r] = s.expand(*batch, r)
    return out


def rank_threshold(svals, *, rank_tol: float = DEFAULT_RANK_TOL, size: int | None = None) -> torch.Tensor:
    """The numerical-rank threshold ``rank_tol * min(rows, cols) * max(sigma_1, 1)``.

    ``size`` is ``min(rows, cols)`` of the matrix; by default the number of singular values given.
    Singular values at or below the threshold count as exact zeros everywhere in genbound. The
    ``max(sigma_1, 1)`` keeps the threshold absolute for matrices of small norm.

    >>> float(rank_threshold(torch.tensor([2.0, 1.0]), rank_tol=0.1))
    0.4
    """
    tol = check_real(rank_tol, "rank_tol", lo=0.0)
    s = as_tensor(svals, "svals", min_ndim=1)
    n = s.shape[-1] if size is None else int(size)
    if n < 1:
        raise ShapeError(f"size must be >= 1, got {n}")
    top = s.max(dim=-1).values.clamp(min=1.0)
    return tol * n * top


def threshold_spectrum(svals, *, rank_tol: float = DEFAULT_RANK_TOL, size: int | None = None) -> torch.Tensor:
    """Singular values with every value at or below :func:`rank_threshold` set to exactly zero.

    >>> threshold_spectrum(torch.tensor([1.0, 1e-17, 0.0])).tolist()
    [1.0, 0.0, 0.0]
    """
    s = as_tensor(svals, "svals", min_ndim=1)
    thr = rank_threshold(s, rank_tol=rank_tol, size=size).unsqueeze(-1)
    return torch.where(s > thr, s, torch.zeros_like(s))


def numerical_rank(svals, *, rank_tol: float = DEFAULT_RANK_TOL, size: int | None = None) -> torch.Tensor:
    """Number of singular values above :func:`rank_threshold` (an integer tensor of the batch shape).

    >>> numerical_rank(torch.tensor([[3.0, 1.0, 0.0], [1.0, 1e-12, 0.0]])).tolist()
    [2, 1]
    """
    s = as_tensor(svals, "svals", min_ndim=1)
    thr = rank_threshold(s, rank_tol=rank_tol, size=size).unsqueeze(-1)
    return (s > thr).sum(dim=-1)
