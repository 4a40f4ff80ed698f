"""Singular values, batched, on the chosen device, in float64 by default.

This is the *spectra* stage of genbound's data flow (weights -> spectra -> norms -> bounds). Every
function takes a matrix or a stack of matrices of shape ``(..., rows, cols)`` and returns singular values
in **descending** order, shape ``(..., min(rows, cols))``. Book: :ref:`ch-schatten` (Part III).

Low-rank products such as a head's query-key map ``W_Q W_K^T`` (row-vector maps, rank at most ``d_head``) are never
formed densely: :func:`product_singular_values` takes the thin factors and returns the exact nonzero
singular values from a small ``r x r`` core, so no round-off "noise floor" appears.

Full-rank rectangular matrices (the feed-forward matrices) go through
:func:`certified_singular_values`: the square roots of the Gram matrix's eigenvalues where an a
posteriori error bound certifies every singular value to a relative accuracy ``rtol``, and a
Householder QR followed by the SVD of the triangle where it does not (see that function for the bound).

The numerical rank (:func:`rank_threshold`) never counts values at the round-off level of the
spectrum's own dtype: float32 spectra use float32's machine epsilon.

>>> import torch
>>> from genbound.spectra import singular_values, numerical_rank
>>> W = torch.tensor([[3.0, 0.0], [0.0, 4.0]])
>>> singular_values(W)
tensor([4., 3.], dtype=torch.float64)
>>> int(numerical_rank(singular_values(torch.ones(3, 3))))
1
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ._validate import as_tensor, broadcast_shape, check_positive_int, check_real
from .device import home_device, resolve_device, resolve_dtype
from .errors import InputError, ParameterError, ShapeError

__all__ = [
    "DEFAULT_RANK_TOL",
    "DEFAULT_CERT_RTOL",
    "singular_values",
    "product_singular_values",
    "effective_rank_tol",
    "rank_threshold",
    "numerical_rank",
    "threshold_spectrum",
    "CertifiedSpectrum",
    "certified_singular_values",
    "gram_matrix",
    "gram_error_bound",
    "gram_certificate",
]

#: Default relative tolerance of the numerical rank (see :func:`rank_threshold`).
DEFAULT_RANK_TOL = 1e-10


def singular_values(W, *, device=None, dtype=None, driver: str | None = None) -> torch.Tensor:
    """Singular values of ``W`` (shape ``(..., rows, cols)``), descending, batched in one call.
    (Checked against numpy: :prf:ref:`prop-computed-spectra`.)

    Parameters
    ----------
    W
        A tensor, array or nested list, at least 2-D, finite.
    device
        Where the SVD runs: ``None``/``"auto"`` (CUDA if available; the result comes back on
        ``W``'s device, the CPU for arrays and lists), ``"cpu"``, ``"cuda"`` (the result stays there).
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
    dev, home = resolve_device(device), home_device(device, W)
    t = as_tensor(W, "W", min_ndim=2, device=dev, dtype=resolve_dtype(dtype))
    if t.shape[-1] == 0 or t.shape[-2] == 0:
        raise ShapeError(f"W has an empty matrix dimension (shape {tuple(t.shape)})")
    kwargs = {"driver": driver} if (driver is not None and dev.type == "cuda") else {}
    s = torch.linalg.svdvals(t, **kwargs)
    # torch documents descending order; enforce it rather than trust every backend.
    return torch.sort(s, dim=-1, descending=True).values.to(home)


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
    dev, home = resolve_device(device), home_device(device, left, right)
    dt = resolve_dtype(dtype)
    L = as_tensor(left, "left", min_ndim=2, device=dev, dtype=dt)
    R = as_tensor(right, "right", min_ndim=2, device=dev, dtype=dt)
    if L.shape[-1] != R.shape[-2]:
        raise ShapeError(
            f"inner sizes differ: left has shape {tuple(L.shape)}, right has shape {tuple(R.shape)}"
        )
    rows, r, cols = L.shape[-2], L.shape[-1], R.shape[-1]
    try:
        batch = broadcast_shape(L.shape[:-2], R.shape[:-2])
    except RuntimeError as exc:
        raise ShapeError(
            f"batch shapes of left {tuple(L.shape)} and right {tuple(R.shape)} do not broadcast"
        ) from exc
    k = min(rows, cols)
    if r >= k:  # nothing to gain: the product is small or not low rank
        return singular_values(L @ R, device=dev, dtype=dt).to(home)
    R1 = torch.linalg.qr(L, mode="r").R  # (..., r, r) because rows > r
    R2 = torch.linalg.qr(R.transpose(-1, -2), mode="r").R  # (..., r, r) because cols > r
    core = R1 @ R2.transpose(-1, -2)
    s = torch.sort(torch.linalg.svdvals(core), dim=-1, descending=True).values
    out = torch.zeros(*batch, k, dtype=dt, device=dev)
    out[..., :r] = s.expand(*batch, r)
    return out.to(home)


def effective_rank_tol(rank_tol: float, dtype: torch.dtype) -> float:
    """The relative tolerance actually used for a spectrum of ``dtype``: ``max(rank_tol, eps(dtype))``.

    A singular value below ``eps * min(rows, cols) * sigma_1`` is at the round-off level of an SVD in
    that precision (numpy's ``matrix_rank`` uses this tolerance), so a smaller ``rank_tol`` would count
    round-off as rank. ``rank_tol = 0`` is kept as it is: it means "no threshold", only exact zeros
    are dropped (used to display the round-off floor itself).

    >>> effective_rank_tol(1e-10, torch.float64), effective_rank_tol(1e-10, torch.float32)
    (1e-10, 1.1920928955078125e-07)
    >>> effective_rank_tol(0.0, torch.float32)
    0.0
    """
    tol = check_real(rank_tol, "rank_tol", lo=0.0)
    if tol == 0.0:
        return 0.0
    eps = torch.finfo(dtype).eps if dtype.is_floating_point else 0.0
    return max(tol, float(eps))


def rank_threshold(
    svals, *, rank_tol: float = DEFAULT_RANK_TOL, size: int | None = None
) -> torch.Tensor:
    """The numerical-rank threshold ``tol * min(rows, cols) * max(sigma_1, 1)``, ``tol = max(rank_tol, eps)``.

    ``size`` is ``min(rows, cols)`` of the matrix; by default the number of singular values given.
    Singular values at or below the threshold count as exact zeros everywhere in genbound. The
    ``max(sigma_1, 1)`` keeps the threshold absolute for matrices of small norm. ``eps`` is the machine
    epsilon of the spectrum's dtype (:func:`effective_rank_tol`): float32 spectra carry float32
    round-off, which must not count as rank.

    >>> float(rank_threshold(torch.tensor([2.0, 1.0]), rank_tol=0.1))
    0.4
    >>> s = torch.tensor([1.0, 1e-8])                      # float32: 1e-8 is below float32 round-off
    >>> int(numerical_rank(s)), int(numerical_rank(s.double()))
    (1, 2)
    """
    dtype = svals.dtype if isinstance(svals, torch.Tensor) else torch.float64
    tol = effective_rank_tol(rank_tol, dtype)
    s = as_tensor(svals, "svals", min_ndim=1)
    n = s.shape[-1] if size is None else int(size)
    if n < 1:
        raise ShapeError(f"size must be >= 1, got {n}")
    top = s.max(dim=-1).values.clamp(min=1.0)
    return tol * n * top


def threshold_spectrum(
    svals, *, rank_tol: float = DEFAULT_RANK_TOL, size: int | None = None
) -> torch.Tensor:
    """Singular values with every value at or below :func:`rank_threshold` set to exactly zero.

    >>> threshold_spectrum(torch.tensor([1.0, 1e-17, 0.0])).tolist()
    [1.0, 0.0, 0.0]
    """
    thr = rank_threshold(svals, rank_tol=rank_tol, size=size).unsqueeze(-1)
    s = as_tensor(svals, "svals", min_ndim=1)
    return torch.where(s > thr, s, torch.zeros_like(s))


def numerical_rank(
    svals, *, rank_tol: float = DEFAULT_RANK_TOL, size: int | None = None
) -> torch.Tensor:
    """Number of singular values above :func:`rank_threshold` (an integer tensor of the batch shape).

    >>> numerical_rank(torch.tensor([[3.0, 1.0, 0.0], [1.0, 1e-12, 0.0]])).tolist()
    [2, 1]
    """
    thr = rank_threshold(svals, rank_tol=rank_tol, size=size).unsqueeze(-1)
    s = as_tensor(svals, "svals", min_ndim=1)
    return (s > thr).sum(dim=-1)


# --------------------------------------------------------------------------------------------------
# certified singular values of a full-rank rectangular matrix


#: Default relative accuracy the Gram route must certify for every singular value.
DEFAULT_CERT_RTOL = 1e-10
#: Rows per chunk when the Gram matrix is accumulated (see :func:`gram_error_bound`).
GRAM_CHUNK = 256
#: ``c`` in the eigensolver's backward error ``c * n * eps * ||G||_2`` (LAPACK's own estimate is ``eps * ||G||``;
#: measured against 50-digit eigenvalues: at most about ``4 eps ||G||`` for ``n <= 60``, see the tests).
EIGH_BACKWARD_FACTOR = 2.0

#: Route names recorded with every certified spectrum.
ROUTES = ("gram", "qr-svd", "svd")


@dataclass(frozen=True)
class CertifiedSpectrum:
    """Singular values of one matrix with the route that produced them.

    ``route`` is ``"gram"`` (eigenvalues of the Gram matrix, certified: every value has relative
    error at most ``rel_err_bound``), ``"qr-svd"`` (Householder QR of the tall orientation, then the
    SVD of the triangle: backward stable, as accurate as a full SVD) or ``"svd"`` (a square matrix,
    SVD directly). ``rel_err_bound`` is the certified bound for ``"gram"``; for the other routes it
    is the bound the Gram route would have had (``inf`` where it could not certify), which says why
    the fallback was taken.
    """

    svals: torch.Tensor
    route: str
    rel_err_bound: float
    rtol: float


def gram_matrix(A: torch.Tensor, *, chunk: int = GRAM_CHUNK) -> torch.Tensor:
    """``A^T A`` accumulated over row chunks: ``G = fl(...fl(fl(P_1) + P_2)... + P_C)``, ``P_c = A_c^T A_c``.

    Each chunk product is formed on its own (a fresh buffer, so the BLAS cannot fold earlier partial
    sums into it) and then added to ``G``: every entry of ``G`` is then a sum in which each product
    ``a_ki a_kj`` goes through at most ``chunk + ceil(m / chunk)`` roundings, whatever order the BLAS
    sums a chunk in (:func:`gram_error_bound`). Symmetry halves the work: with the columns split in two
    blocks, only the blocks on and below the diagonal are multiplied (three quarters of the products),
    and the block above is the transpose of the block below.

    >>> A = torch.arange(12.0, dtype=torch.float64).reshape(4, 3)
    >>> torch.equal(gram_matrix(A, chunk=3), A.T @ A)
    True
    """
    m, n = A.shape
    if n < 64:
        blocks = [(slice(0, n), slice(0, n))]
    else:
        lo, hi = slice(0, n // 2), slice(n // 2, n)
        blocks = [(lo, lo), (hi, lo), (hi, hi)]
    G = torch.zeros(n, n, dtype=A.dtype, device=A.device)
    bufs = [
        torch.empty(r.stop - r.start, c.stop - c.start, dtype=A.dtype, device=A.device)
        for r, c in blocks
    ]
    for i in range(0, m, chunk):
        blk = A[i : i + chunk]
        for (r, c), P in zip(blocks, bufs):
            torch.mm(blk[:, r].T, blk[:, c], out=P)
            G[r, c].add_(P)
    if len(blocks) > 1:
        lo, hi = blocks[1][1], blocks[1][0]
        G[lo, hi] = G[hi, lo].T
    return G


def gram_error_bound(A: torch.Tensor, *, chunk: int = GRAM_CHUNK) -> float:
    """An upper bound on ``||fl(A^T A) - A^T A||_2`` for :func:`gram_matrix` (float64).

    Every entry is a sum of ``m`` products, each rounded once and then through at most ``k - 1``
    additions, ``k = min(chunk, m) + ceil(m / chunk)``, so (Higham, *Accuracy and Stability of
    Numerical Algorithms*, 2nd ed., Lemma 3.1 and eq. 3.5) ``|E| <= gamma_k |A|^T |A|`` entrywise,
    ``gamma_k = k u / (1 - k u)``, ``u = 2^-53``. For a nonnegative symmetric matrix the spectral norm
    is at most the largest row sum, and ``|E| <= Y`` entrywise implies ``||E||_2 <= ||Y||_2``, so
    ``||E||_2 <= gamma_k max_i (|A|^T |A| 1)_i``. The row sums are computed chunk by chunk (no copy
    of ``A``) in float64 from nonnegative terms, and inflated by ``1 + 2 (m + n) u`` to cover their
    own rounding.

    >>> A = torch.ones(4, 2, dtype=torch.float64)
    >>> gram_error_bound(A, chunk=2) > 0
    True
    """
    m, n = A.shape
    u = 2.0**-53
    k = min(chunk, m) + -(-m // chunk)
    gamma = k * u / (1.0 - k * u)
    w = torch.zeros(n, dtype=A.dtype, device=A.device)
    for i in range(0, m, chunk):
        blk = A[i : i + chunk].abs()
        w.add_(blk.T @ blk.sum(dim=1))
    return gamma * float(w.max()) * (1.0 + 2.0 * (m + n) * u)


def gram_certificate(lam: torch.Tensor, delta: float) -> float:
    """The certified relative error of ``sqrt(lam_i)`` as singular values, given ``|lam_i - sigma_i^2| <= delta``.

    Weyl's inequality gives ``sigma_i^2`` in ``[lam_i - delta, lam_i + delta]``; for the smallest
    ``lam_i`` (where the bound is largest) the relative error of ``sqrt(lam_i)`` is at most
    ``1 / sqrt(1 - delta / lam_i) - 1`` (about ``delta / (2 sigma_i^2)``), plus ``2 u`` for the
    rounding of the square root. ``inf`` when ``lam_i <= delta`` (nothing is certified).

    >>> round(gram_certificate(torch.tensor([4.0, 1.0], dtype=torch.float64), 1e-6) / 5e-7, 6)
    1.0
    """
    lo = float(lam.min())
    if not lo > delta:
        return math.inf
    t = delta / lo
    return 1.0 / math.sqrt(1.0 - t) - 1.0 + 2.0 * 2.0**-53


def certified_singular_values(
    M,
    *,
    rtol: float = DEFAULT_CERT_RTOL,
    route: str = "auto",
    chunk: int = GRAM_CHUNK,
    driver: str | None = None,
) -> CertifiedSpectrum:
    """All singular values of a float64 matrix, each to relative accuracy ``rtol`` (descending).

    The route (``route="auto"``):

    1. **Gram.** With ``A`` the tall orientation of ``M`` (``m x n``, ``m >= n``), form
       ``G = fl(A^T A)`` (:func:`gram_matrix`) and its eigenvalues ``lam_i`` (``eigvalsh``); return
       ``sqrt(lam_i)`` when the certificate below holds. Cost about ``m n^2`` (matrix products) plus
       ``4 n^3 / 3`` (tridiagonalisation), about half of route 2.
    2. **QR + SVD** otherwise: Householder QR ``A = Q R``, then ``svdvals(R)`` (backward stable: as
       accurate as a full SVD, small singular values included).

    **The certificate.** ``sigma_i(M)^2 = lambda_i(A^T A)``. The computed ``lam_i`` are the exact
    eigenvalues of ``A^T A + E_G + E_eig``, where

    * ``E_G`` is the rounding of the Gram matrix, ``||E_G||_2 <= delta_G`` (:func:`gram_error_bound`:
      ``gamma_k max_i (|A|^T |A| 1)_i``, rigorous in IEEE arithmetic whatever order the BLAS sums in);
    * ``E_eig`` is the eigensolver's backward error: Householder tridiagonalisation followed by the
      implicit QL/QR iteration is backward stable, ``||E_eig||_2 <= p(n) eps ||G||_2`` with ``p(n)`` a
      modestly growing function of ``n`` (Golub & Van Loan, *Matrix Computations*, 4th ed., 8.3; the
      LAPACK Users' Guide, 4.7, uses ``p(n) = 1`` in its error estimate). We take
      ``p(n) = c n`` with ``c = EIGH_BACKWARD_FACTOR = 2``, ``2 n`` times LAPACK's own estimate:
      ``delta_eig = c n eps max|lam| / (1 - c n eps)``. This constant is the one assumption that is not
      a proof; measured against 50-digit eigenvalues the error is at most about ``4 eps ||G||`` for
      ``n`` up to 60 (``tests/core/test_certified_spectra.py``), against ``2 n eps ||G|| >= 48 eps ||G||``.

    Weyl's inequality for symmetric matrices, ``|lambda_i(X + E) - lambda_i(X)| <= ||E||_2``, then
    gives ``|lam_i - sigma_i^2| <= delta = delta_G + delta_eig`` for every ``i``, so
    ``sigma_i^2 >= lam_i - delta`` and ``|sqrt(lam_i) - sigma_i| / sigma_i <= 1 / sqrt(1 - delta/lam_i) - 1
    ~ delta / (2 sigma_i^2)`` (:func:`gram_certificate`). The bound is largest for the smallest
    ``sigma_i``: about ``(gamma_k ||A||^2_{|.|} + n eps sigma_1^2) / (2 sigma_n^2)``, i.e. of order
    ``n eps kappa^2``. The route is taken only when this is at most ``rtol``; an ill-conditioned
    matrix (graded spectra, ``kappa^2 n eps > rtol``) falls back to route 2.

    ``route="gram"`` or ``"qr-svd"`` forces a route (``"gram"`` still reports its bound, which may
    exceed ``rtol``). A square matrix with ``route="auto"`` still tries the Gram route first; its
    fallback is a plain SVD (route ``"svd"``). ``driver`` picks the cuSOLVER SVD driver of the
    fallback on CUDA (ignored on the CPU).

    >>> g = torch.Generator().manual_seed(0)
    >>> A = torch.randn(60, 20, generator=g, dtype=torch.float64)
    >>> c = certified_singular_values(A)
    >>> c.route, c.rel_err_bound <= 1e-10
    ('gram', True)
    >>> bool(((c.svals - torch.linalg.svdvals(A)).abs() / c.svals).max() <= c.rel_err_bound)
    True
    >>> graded = A @ torch.diag(torch.logspace(0, -8, 20, dtype=torch.float64))
    >>> certified_singular_values(graded).route
    'qr-svd'
    """
    tol = check_real(rtol, "rtol", lo=0.0, lo_open=True)
    if route not in ("auto", "gram", "qr-svd"):
        raise ParameterError(f"route must be 'auto', 'gram' or 'qr-svd', got {route!r}")
    chunk = check_positive_int(chunk, "chunk")
    if not isinstance(M, torch.Tensor) or M.ndim != 2:
        M = as_tensor(M, "M", ndim=2)
    if M.dtype != torch.float64:
        raise InputError(f"M must be float64 for a certified spectrum, got {M.dtype}")
    if M.shape[0] == 0 or M.shape[1] == 0:
        raise ShapeError(f"M has an empty dimension (shape {tuple(M.shape)})")
    A = M if M.shape[0] >= M.shape[1] else M.transpose(0, 1)
    n = A.shape[1]
    bound = math.inf
    if route in ("auto", "gram"):
        G = gram_matrix(A, chunk=chunk)
        lam = torch.linalg.eigvalsh(G)  # ascending
        del G
        eps = torch.finfo(torch.float64).eps
        c = EIGH_BACKWARD_FACTOR * n * eps
        top = float(lam.abs().max())
        delta = gram_error_bound(A, chunk=chunk) + c * top / (1.0 - c)
        bound = gram_certificate(lam, delta)
        if route == "gram" or bound <= tol:
            s = lam.clamp(min=0.0).sqrt().flip(0)
            return CertifiedSpectrum(svals=s, route="gram", rel_err_bound=bound, rtol=tol)
    kw = {"driver": driver} if (driver is not None and A.is_cuda) else {}
    if A.shape[0] == A.shape[1]:
        s = torch.linalg.svdvals(A, **kw)
        name = "svd"
    else:
        s = torch.linalg.svdvals(torch.linalg.qr(A, mode="r").R, **kw)
        name = "qr-svd"
    return CertifiedSpectrum(
        svals=torch.sort(s, descending=True).values, route=name, rel_err_bound=bound, rtol=tol
    )
