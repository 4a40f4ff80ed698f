"""Per-matrix term of the spectrum-adaptive bound, its threshold optimisation, and the reference model.

Book: :ref:`ch-sa-entropy` (the term and the entropy form), :ref:`ch-sa-deep` (the reference deep
transformer used to check the Lipschitz peeling), :ref:`ch-sa-examples` (example spectra, defined in
``genbound.example_spectra`` and re-exported here). Every constant
comes from :mod:`genbound.symbolic.sakai_imaizumi`; the tests compare both to ``1e-12``.

For one matrix with Schatten power ``M = ||W||_{S_p}^p``, scale ``S`` (the Lipschitz factor of what follows
it) and width ``N``, splitting the spectrum at a threshold ``tau`` costs
``sqrt(N M) tau**(-p/2) + S N tau`` (:func:`threshold_objective`), and the best threshold gives

``inf_tau = c_p M**(1/(p+2)) S**(p/(p+2)) N**((p+1)/(p+2))``, ``c_p = ((p+2)/p) (p/2)**(2/(p+2))``
(:func:`per_matrix_term`). The authors' code uses the same expression without ``c_p``
(:func:`log_term_grid` with ``with_cp=False``).

>>> import torch
>>> round(float(c_p(torch.tensor(2.0))), 12), float(c_p(torch.tensor(0.0)))
(2.0, 1.0)
>>> float(per_matrix_term(4.0, 10.0, 9, 0.0))  # p = 0: sqrt(rank * N), whatever the scale
6.0
>>> float(per_matrix_term(1.0, 1.0, 1, 2.0))   # c_2 * 1
2.0
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ._validate import as_tensor, broadcast_shape, check_real
from .errors import InputError, ParameterError, ShapeError
from .norms import log_schatten_power
from .spectra import DEFAULT_RANK_TOL, threshold_spectrum
from .example_spectra import (
    exponential_spectrum,
    low_rank_spectrum,
    polynomial_spectrum,  # noqa: F401
    spike_floor_spectrum,
)

__all__ = [
    "GELU_LIPSCHITZ",
    "c_p",
    "log_c_p",
    "threshold_objective",
    "optimal_threshold",
    "log_per_matrix_term",
    "per_matrix_term",
    "numerical_threshold_minimum",
    "entropy_objective",
    "entropy_log_covering",
    "dudley_entropy_integral",
    "spectral_count_minimum",
    "log_term_grid",
    "best_p",
    "p0_scale_threshold",
    "grid_rounding_bound",
    "low_rank_spectrum",
    "polynomial_spectrum",
    "exponential_spectrum",
    "spike_floor_spectrum",
    "row_project",
    "attention_head",
    "reference_layer",
    "reference_transformer",
    "head_lipschitz",
    "layer_lipschitz",
    "log_layer_lipschitz",
    "layer_alphas",
    "log_layer_alphas",
    "sensitivities",
    "gamma_derived",
    "log_dudley_factor",
    "GELU_LIPSCHITZ",
    "L_PHI",
    "ATTENTION_QK_FACTOR",
    "GAMMA_QK_FACTOR",
    "GAMMA_CONVENTIONS",
]

#: Default Lipschitz constant of GELU used by the authors' code (``sup GELU' = 1.1289...`` rounded up).
GELU_LIPSCHITZ = 1.13
#: The same constant under the name :mod:`genbound.bounds.sakai_imaizumi` uses.
L_PHI = GELU_LIPSCHITZ
#: The ``4`` in a head's Lipschitz factor ``C_V (1 + 4 C_QK)`` (softmax constant 2 x two occurrences of X).
ATTENTION_QK_FACTOR = 4.0
#: The ``2`` in ``gamma(QK) = 2 (L_phi) C_V C_in C_out`` (the softmax constant).
GAMMA_QK_FACTOR = 2.0
#: The two conventions of :func:`sensitivities`: ``"derived"`` (:prf:ref:`lem-sa-matrix-sensitivity`) and
#: ``"authors"`` (the authors' code: no ``L_phi``, ``1`` for ``M_out``; used by the proxy).
GAMMA_CONVENTIONS = ("derived", "authors")


def _t(x, name) -> torch.Tensor:
    """``as_tensor`` that keeps Python scalars 0-dimensional (so they broadcast without adding an axis)."""
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        if not math.isfinite(float(x)):
            raise ParameterError(f"{name} must be finite, got {x}")
        return torch.tensor(float(x), dtype=torch.float64)
    return as_tensor(x, name)


def _p(p, like=None) -> torch.Tensor:
    t = _t(p, "p")
    if bool(((t < 0) | (t > 2)).any()):
        raise ParameterError(
            f"Schatten index p must lie in [0, 2], got {t.flatten()[((t < 0) | (t > 2)).flatten()][0].item()}"
        )
    return t


def _pos(x, name, *, allow_zero=False) -> torch.Tensor:
    t = _t(x, name)
    bad = (t < 0) if allow_zero else (t <= 0)
    if bool(bad.any()):
        raise ParameterError(
            f"{name} must be {'nonnegative' if allow_zero else 'positive'}, "
            f"got {t.flatten()[bad.flatten()][0].item()}"
        )
    return t


def log_c_p(p) -> torch.Tensor:
    """``log c_p = log((p+2)/p) + (2/(p+2)) log(p/2)``, with the limit ``0`` at ``p = 0``.

    Written as ``log(1 + p/2) + (p/(p+2)) log(2/p)`` so that ``p -> 0`` is stable.

    >>> import torch
    >>> round(float(log_c_p(torch.tensor(1.0)).exp()), 6)  # (3/2) 2**(1/3)
    1.889882
    """
    pt = _p(p)
    safe = torch.where(pt > 0, pt, torch.ones_like(pt))
    val = torch.log1p(safe / 2) + safe / (safe + 2) * torch.log(2 / safe)
    return torch.where(pt > 0, val, torch.zeros_like(pt))


def c_p(p) -> torch.Tensor:
    """The constant ``c_p = ((p+2)/p) (p/2)**(2/(p+2))`` of :prf:ref:`lem-sa-threshold-optimum`; ``c_0 = 1``
    (range: :prf:ref:`lem-sa-cp-range`)."""
    return log_c_p(p).exp()


def threshold_objective(tau, spow, scale, N, p) -> torch.Tensor:
    """``sqrt(N M) tau**(-p/2) + S N tau`` for threshold ``tau > 0`` (all arguments broadcast).

    The first term bounds the head of the spectrum through the count of :prf:ref:`lem-spectral-counting`,
    the second the residual (:prf:ref:`lem-truncation-residual`, :prf:ref:`lem-sa-residual-width`).

    >>> float(threshold_objective(1.0, 4.0, 2.0, 1, 2.0))  # 2 * 1 + 2 * 1
    4.0
    """
    t = _pos(tau, "tau")
    m = _pos(spow, "spow", allow_zero=True)
    s = _pos(scale, "scale")
    n = _pos(N, "N")
    pt = _p(p)
    return torch.sqrt(n * m) * t ** (-pt / 2) + s * n * t


def optimal_threshold(spow, scale, N, p) -> torch.Tensor:
    """The minimiser ``tau* = (p sqrt(N M) / (2 S N))**(2/(p+2))`` (``0`` at ``p = 0``: count everything).

    >>> round(float(optimal_threshold(4.0, 1.0, 1, 2.0)), 12)  # (2 * 2 / 2)**(1/2)
    1.414213562373
    """
    m = _pos(spow, "spow")
    s = _pos(scale, "scale")
    n = _pos(N, "N")
    pt = _p(p)
    base = pt * torch.sqrt(n * m) / (2 * s * n)
    return torch.where(pt > 0, base.clamp(min=0) ** (2 / (pt + 2)), torch.zeros_like(base))


def log_per_matrix_term(log_spow, log_scale, N, p, *, with_cp: bool = True) -> torch.Tensor:
    """``log`` of :func:`per_matrix_term` from ``log M`` and ``log S`` (astronomical scales do not overflow).

    ``[log M + p log S + (p+1) log N] / (p+2)`` plus ``log c_p`` when ``with_cp``. All arguments broadcast;
    this is the only place the summand's formula is written (:func:`log_term_grid` and
    :func:`genbound.bounds.sakai_imaizumi.log_contribution` call it).
    """
    lm = (
        torch.as_tensor(log_spow, dtype=torch.float64)
        if isinstance(log_spow, torch.Tensor) or log_spow == -math.inf
        else _t(log_spow, "log_spow")
    )
    ls = _t(log_scale, "log_scale")
    n = _pos(N, "N")
    pt = _p(p)
    out = (lm + pt * ls + (pt + 1) * n.log()) / (pt + 2)
    return out + log_c_p(pt) if with_cp else out


def per_matrix_term(spow, scale, N, p, *, with_cp: bool = True) -> torch.Tensor:
    """``c_p M**(1/(p+2)) S**(p/(p+2)) N**((p+1)/(p+2))``: the infimum of :func:`threshold_objective`
    (:prf:ref:`lem-sa-count-markov`).

    ``spow`` is ``M = ||W||_{S_p}^p`` (the rank at ``p = 0``), ``scale`` is ``S > 0``, ``N`` the width.
    With ``with_cp=False`` this is the summand ``T(p)`` of the authors' code. Book:
    :prf:ref:`lem-sa-threshold-optimum`.
    """
    m = _pos(spow, "spow", allow_zero=True)
    s = _pos(scale, "scale")
    logm = torch.where(m > 0, m, torch.ones_like(m)).log().masked_fill(m == 0, -math.inf)
    return log_per_matrix_term(logm, s.log(), N, p, with_cp=with_cp).exp()


def numerical_threshold_minimum(spow, scale, N, p, *, iters: int = 200) -> torch.Tensor:
    """``min_tau`` of :func:`threshold_objective` by golden-section search on ``log tau`` (batched).

    The objective is convex in ``u = log tau`` (a sum of two exponentials of ``u``), so the search is exact
    up to its tolerance; it is the independent check of the closed form. Needs ``p > 0``.
    """
    m = _pos(spow, "spow")
    s = _pos(scale, "scale")
    n = _pos(N, "N")
    pt = _p(p)
    if bool((pt <= 0).any()):
        raise ParameterError(
            "numerical_threshold_minimum needs p > 0 (at p = 0 the infimum is the limit tau -> 0)"
        )
    m, s, n, pt = torch.broadcast_tensors(m, s, n, pt)
    t0 = optimal_threshold(m, s, n, pt).log()  # only to centre the bracket, not to find the minimum
    lo, hi = t0 - 30.0, t0 + 30.0

    def f(u):
        return torch.sqrt(n * m) * torch.exp(-pt / 2 * u) + s * n * torch.exp(u)

    g = (math.sqrt(5) - 1) / 2
    a, b = lo.clone(), hi.clone()
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iters):
        left = fc < fd
        b = torch.where(left, d, b)
        a = torch.where(left, a, c)
        c_new = b - g * (b - a)
        d_new = a + g * (b - a)
        c, d = c_new, d_new
        fc, fd = f(c), f(d)
    return torch.minimum(torch.minimum(fc, fd), f((a + b) / 2))


def entropy_objective(eps, tau, spow, scale, N, p, *, B=1.0) -> torch.Tensor:
    """Two-piece entropy with the rank part's log dropped: ``M N tau**(-p) + (S N tau B / eps)**2``."""
    e = _pos(eps, "eps")
    t = _pos(tau, "tau")
    m = _pos(spow, "spow", allow_zero=True)
    s = _pos(scale, "scale")
    n = _pos(N, "N")
    b = _pos(B, "B")
    pt = _p(p)
    return m * n * t ** (-pt) + (s * n * t * b / e) ** 2


def _log_theta(spow, scale, N, pt, B) -> torch.Tensor:
    """``log Theta_p = (log M + p log(S B) + (p + 1) log N) / (p + 2)`` (inputs checked positive)."""
    m, s, n, b = _pos(spow, "spow"), _pos(scale, "scale"), _pos(N, "N"), _pos(B, "B")
    return (m.log() + pt * (s * b).log() + (pt + 1) * n.log()) / (pt + 2)


def entropy_log_covering(eps, spow, scale, N, p, *, B=1.0) -> torch.Tensor:
    """``k_p Theta_p**2 eps**(-2p/(p+2))``: :func:`entropy_objective` minimised over ``tau`` (``k_p = c_p``).

    ``Theta_p = M**(1/(p+2)) (S B)**(p/(p+2)) N**((p+1)/(p+2))``. Book: :prf:ref:`lem-sa-entropy-schatten`.
    """
    e = _pos(eps, "eps")
    pt = _p(p)
    return (log_c_p(pt) + 2 * _log_theta(spow, scale, N, pt, B) - 2 * pt / (pt + 2) * e.log()).exp()


def log_dudley_factor(p) -> torch.Tensor:
    """``log kappa_p`` with ``kappa_p = sqrt(c_p) (p + 2) / 2``: the Dudley integral of the Schatten entropy
    up to ``D = 1`` is ``kappa_p Theta_p`` (:prf:ref:`lem-sa-entropy-schatten`, :prf:ref:`prop-sa-capacity`).

    ``kappa_0 = 1`` and ``kappa_2 = 2 sqrt(2)``.

    >>> import torch
    >>> [round(float(log_dudley_factor(torch.tensor(q)).exp()), 12) for q in (0.0, 2.0)]
    [1.0, 2.828427124746]
    """
    pt = _p(p)
    return log_c_p(pt) / 2 + torch.log((pt + 2) / 2)


def dudley_entropy_integral(D, spow, scale, N, p, *, B=1.0) -> torch.Tensor:
    """``int_0^D sqrt(entropy_log_covering(eps)) d eps = sqrt(k_p) Theta_p ((p+2)/2) D**(2/(p+2))``."""
    d = _pos(D, "D")
    pt = _p(p)
    return (
        log_dudley_factor(pt) + _log_theta(spow, scale, N, pt, B) + 2 / (pt + 2) * d.log()
    ).exp()


def spectral_count_minimum(svals, scale, N, *, rank_tol: float = DEFAULT_RANK_TOL) -> torch.Tensor:
    """``min_tau [sqrt(N r(tau)) + S N tau]`` with the exact count ``r(tau) = #{sigma_i > tau}``.

    On each interval between consecutive singular values the count is constant and the objective
    increases, so the minimum is attained at ``tau = 0`` or at a singular value: a closed form, batched
    over ``svals`` of shape ``(..., k)``. Every ``T(p)`` is an upper bound on it up to ``c_p``
    (:ref:`ch-sa-examples`).

    >>> import torch
    >>> float(spectral_count_minimum(torch.tensor([1.0, 1e-3]), 1.0, 4))  # keep one value, pay 4e-3
    2.004
    """
    s = threshold_spectrum(as_tensor(svals, "svals", min_ndim=1), rank_tol=rank_tol)
    sc = _pos(scale, "scale").to(s.device)
    n = _pos(N, "N").to(s.device)
    s = torch.sort(s, dim=-1, descending=True).values
    k = s.shape[-1]
    # tau = s_j keeps the values strictly above s_j; with ties, the count is the first index of s_j
    greater = (s.unsqueeze(-1) > s.unsqueeze(-2)).to(s.dtype).sum(-2)  # (..., k): #{sigma > s_j}
    # sqrt(N) sqrt(count), not sqrt(N count): a zero count must not give a NaN gradient in N
    cand = torch.sqrt(n).unsqueeze(-1) * torch.sqrt(greater) + (sc * n).unsqueeze(-1) * s
    rank = (s > 0).to(s.dtype).sum(-1)
    at_zero = torch.sqrt(n) * torch.sqrt(rank)
    del k
    return torch.minimum(cand.min(-1).values, at_zero)


def log_term_grid(
    svals,
    scale,
    N,
    ps,
    *,
    with_cp: bool = False,
    rank_tol: float = DEFAULT_RANK_TOL,
    log_scale: bool = False,
) -> torch.Tensor:
    """``log T(p)`` for every ``p`` of the grid ``ps`` (trailing axis), for spectra ``(..., k)``.

    ``scale`` may be given as its logarithm (``log_scale=True``), for the astronomically large scales of
    trained networks. ``with_cp=False`` is the authors' summand; ``True`` adds ``log c_p``.
    """
    s = as_tensor(svals, "svals", min_ndim=1)
    grid = as_tensor(ps, "ps", ndim=1).to(s.device)
    _p(grid.cpu())
    lm = log_schatten_power(s, grid, rank_tol=rank_tol)  # (..., P)
    ls = (_t(scale, "scale") if log_scale else _pos(scale, "scale").log()).to(s.device)
    n = _pos(N, "N").to(s.device)
    ls = ls.unsqueeze(-1) if ls.ndim else ls
    n = n.unsqueeze(-1) if n.ndim else n
    return log_per_matrix_term(lm, ls, n, grid, with_cp=with_cp)


def best_p(
    svals,
    scale,
    N,
    ps,
    *,
    with_cp: bool = False,
    log_scale: bool = False,
    rank_tol: float = DEFAULT_RANK_TOL,
):
    """``(p_opt, T(p_opt))`` over the grid ``ps``; ties go to the smallest ``p`` (as ``np.argmin``)."""
    lt = log_term_grid(svals, scale, N, ps, with_cp=with_cp, rank_tol=rank_tol, log_scale=log_scale)
    grid = as_tensor(ps, "ps", ndim=1).to(lt.device)
    idx = torch.argmin(lt, dim=-1)  # first minimum
    return grid[idx], lt.gather(-1, idx.unsqueeze(-1)).squeeze(-1).exp()


def p0_scale_threshold(svals, N, *, rank_tol: float = DEFAULT_RANK_TOL) -> torch.Tensor:
    """``sqrt(r / N) / sigma_r``: for every scale at or above it, ``p = 0`` minimises ``T`` on ``[0, 2]``.

    ``r`` is the numerical rank and ``sigma_r`` the smallest singular value above the rank threshold.
    Book: :prf:ref:`prop-sa-p0-wins`.

    >>> import torch
    >>> float(p0_scale_threshold(torch.tensor([2.0, 0.5, 0.0, 0.0]), 8))  # sqrt(2/8) / 0.5
    1.0
    """
    s = threshold_spectrum(as_tensor(svals, "svals", min_ndim=1), rank_tol=rank_tol)
    n = _pos(N, "N").to(s.device)
    r = (s > 0).to(s.dtype).sum(-1)
    if bool((r == 0).any()):
        raise InputError("p0_scale_threshold needs a nonzero matrix")
    smin = torch.where(s > 0, s, torch.full_like(s, math.inf)).min(-1).values
    return torch.sqrt(r / n) / smin


def grid_rounding_bound(
    svals, scale, N, grid_m, *, rank_tol: float = DEFAULT_RANK_TOL
) -> torch.Tensor:
    """``(6 Lambda + log k + 2 |log S| + log N) / (8 m)``: the most that rounding ``p`` to ``P_m`` can add to
    ``log T`` (``Lambda = max |log sigma_i|``, ``k`` = numerical rank, ``m = grid_m`` the grid resolution).
    Book: :prf:ref:`lem-sa-grid-rounding`."""
    s = threshold_spectrum(as_tensor(svals, "svals", min_ndim=1), rank_tol=rank_tol)
    pos = s > 0
    lam = torch.where(pos, s, torch.ones_like(s)).log().abs().max(-1).values
    k = pos.to(s.dtype).sum(-1)
    sc = _pos(scale, "scale").to(s.device)
    n = _pos(N, "N").to(s.device)
    mm = _pos(grid_m, "grid_m").to(s.device)
    return (6 * lam + k.log() + 2 * sc.log().abs() + n.log()) / (8 * mm)


# example spectra: genbound.example_spectra (re-exported above)


# --------------------------------------------------------------------------- reference deep model


def row_project(Z: torch.Tensor) -> torch.Tensor:
    """``Pi``: project every row onto the unit l2 ball, ``z / max(1, ||z||)`` (1-Lipschitz per row)."""
    return Z / torch.linalg.vector_norm(Z, dim=-1, keepdim=True).clamp(min=1.0)


def attention_head(X: torch.Tensor, qk: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """One head ``softmax_row(X W_QK X^T) X W_V`` (no ``1/sqrt(d)``, as in the reconstructed model).

    ``X`` has shape ``(..., T, N)``, ``qk`` and ``v`` shape ``(..., N, N)``; differentiable.
    """
    scores = X @ qk @ X.transpose(-1, -2)
    return torch.softmax(scores, dim=-1) @ X @ v


def reference_layer(X, qk, v, m_in, m_out) -> torch.Tensor:
    """One block of the reconstructed architecture: ``Pi(phi(Pi(sum_h head_h(X)) M_in) M_out)``, GELU.

    ``qk``, ``v``: ``(..., H, N, N)``; ``m_in``: ``(..., N, F)``; ``m_out``: ``(..., F, N)``; rows of ``X``
    should lie in the unit ball (every later layer's input does, because of ``Pi``).
    """
    heads = attention_head(X.unsqueeze(-3), qk, v).sum(-3)
    Z = row_project(heads)
    return row_project(F.gelu(Z @ m_in) @ m_out)


def reference_transformer(X, layers) -> torch.Tensor:
    """Compose :func:`reference_layer` over ``layers``, a sequence of ``(qk, v, m_in, m_out)`` tuples.

    >>> import torch
    >>> g = torch.Generator().manual_seed(0)
    >>> N = 4
    >>> lay = [(torch.randn(1, N, N, generator=g, dtype=torch.float64),) * 2
    ...        + (torch.randn(N, 8, generator=g, dtype=torch.float64), torch.randn(8, N, generator=g, dtype=torch.float64))]
    >>> X = row_project(torch.randn(3, N, generator=g, dtype=torch.float64))
    >>> out = reference_transformer(X, lay)
    >>> out.shape, bool((out.norm(dim=-1) <= 1 + 1e-12).all())
    (torch.Size([3, 4]), True)
    """
    if len(layers) == 0:
        raise ShapeError("reference_transformer needs at least one layer")
    for lay in layers:
        if len(lay) != 4:
            raise ShapeError("every layer must be a tuple (qk, v, m_in, m_out)")
        X = reference_layer(X, *lay)
    return X


def head_lipschitz(c_qk, c_v) -> torch.Tensor:
    """``C_V (1 + 4 C_QK)``: input-Lipschitz constant of one head (rows in the unit ball, max-row norm;
    :prf:ref:`lem-sa-attention-input-lipschitz`).

    The 4 (:data:`ATTENTION_QK_FACTOR`) is the softmax constant 2 times the 2 from ``X`` appearing twice
    in the scores (:func:`genbound.symbolic.sakai_imaizumi.head_lipschitz`).
    """
    return _t(c_v, "c_v") * (1 + ATTENTION_QK_FACTOR * _t(c_qk, "c_qk"))


def log_layer_lipschitz(c_qk, c_v, c_in, c_out, *, L_phi: float = GELU_LIPSCHITZ) -> torch.Tensor:
    """``log lambda`` with ``lambda = L_phi C_in C_out sum_h C_V,h (1 + 4 C_QK,h)`` (one factor per layer).

    ``c_qk``, ``c_v`` have a trailing head axis (``(..., H)``); ``c_in``, ``c_out`` the layer shape
    ``(...)``. The single implementation of the layer factor: :func:`layer_lipschitz` and
    :func:`genbound.bounds.sakai_imaizumi.log_layer_lipschitz` are this function (exponentiated).
    """
    lp = check_real(L_phi, "L_phi", lo=0.0, lo_open=True)
    return (
        math.log(lp)
        + _t(c_in, "c_in").log()
        + _t(c_out, "c_out").log()
        + head_lipschitz(c_qk, c_v).sum(-1).log()
    )


def layer_lipschitz(c_qk, c_v, c_in, c_out, *, L_phi: float = GELU_LIPSCHITZ) -> torch.Tensor:
    """``L_phi C_in C_out sum_h C_V,h (1 + 4 C_QK,h)``; ``c_qk``, ``c_v`` have a trailing head axis
    (:func:`log_layer_lipschitz`, exponentiated)."""
    return log_layer_lipschitz(c_qk, c_v, c_in, c_out, L_phi=L_phi).exp()


def log_layer_alphas(log_factors) -> torch.Tensor:
    """``log alpha_l = sum_{k > l} log lambda_k`` (``0`` for the last layer) from ``log lambda`` ``(..., L)``.

    Suffix sums excluding the layer itself; a ``-inf`` factor (a zero matrix) gives ``alpha = 0`` for the
    layers before it, never NaN.

    >>> import torch
    >>> log_layer_alphas(torch.tensor([1.0, 2.0, 3.0])).tolist()
    [5.0, 3.0, 0.0]
    """
    if isinstance(
        log_factors, torch.Tensor
    ):  # may hold -inf (a zero factor); NaN and +inf are refused
        lf = log_factors.to(torch.float64)
        if lf.ndim < 1 or bool(torch.isnan(lf).any()) or bool(torch.isposinf(lf).any()):
            raise InputError("log_factors must be a tensor (..., L) of finite values or -inf")
    else:
        lf = as_tensor(log_factors, "log_factors", min_ndim=1)
    later = torch.cat([lf[..., 1:], torch.zeros_like(lf[..., :1])], dim=-1)
    return torch.flip(torch.cumsum(torch.flip(later, dims=(-1,)), dim=-1), dims=(-1,))


def layer_alphas(factors) -> torch.Tensor:
    """``alpha_l = prod_{k > l} factors_k`` (``alpha_L = 1``) from per-layer Lipschitz factors ``(..., L)``
    (:prf:ref:`lem-sa-layer-peeling`; :func:`log_layer_alphas`, exponentiated).

    >>> import torch
    >>> [round(a, 12) for a in layer_alphas(torch.tensor([2.0, 3.0, 5.0])).tolist()]
    [15.0, 5.0, 1.0]
    """
    f = as_tensor(factors, "factors", min_ndim=1)
    if bool((f < 0).any()):
        raise ParameterError("factors must be nonnegative Lipschitz factors")
    return log_layer_alphas(f.log()).exp()


def sensitivities(
    c_v, c_in, c_out, *, L_phi: float = GELU_LIPSCHITZ, convention: str = "derived"
) -> dict[str, torch.Tensor]:
    """``gamma`` of every matrix kind of one reference layer: ``{"QK", "V", "M_in", "M_out"}``.

    ``convention="derived"`` (:prf:ref:`lem-sa-matrix-sensitivity`): ``QK``: ``2 L_phi C_V C_in C_out``;
    ``V``: ``L_phi C_in C_out``; ``M_in``: ``L_phi C_out``; ``M_out``: ``C_in`` (GELU satisfies
    ``|phi(x)| <= |x|``). ``convention="authors"`` (the authors' code, used by the proxy
    :func:`genbound.bounds.sakai_imaizumi.spectral_adaptive_bound`): the same without ``L_phi``, and ``1``
    for ``M_out``. ``c_v`` may carry a trailing head axis that ``c_in``, ``c_out`` lack (then ``QK`` and
    ``V`` have the head axis, ``M_in`` and ``M_out`` the layer shape).

    >>> g = sensitivities(torch.tensor([[3.0]]), torch.tensor([5.0]), torch.tensor([7.0]), convention="authors")
    >>> [g[k].flatten().item() for k in ("QK", "V", "M_in", "M_out")]
    [210.0, 35.0, 7.0, 1.0]
    """
    if convention not in GAMMA_CONVENTIONS:
        raise ParameterError(f"convention must be one of {GAMMA_CONVENTIONS}, got {convention!r}")
    lp = check_real(L_phi, "L_phi", lo=0.0, lo_open=True) if convention == "derived" else 1.0
    cv, ci, co = _t(c_v, "c_v"), _t(c_in, "c_in"), _t(c_out, "c_out")
    head = cv.ndim == max(ci.ndim, co.ndim) + 1 and cv.ndim > 0
    ci_h, co_h = (ci.unsqueeze(-1), co.unsqueeze(-1)) if head else (ci, co)
    qk = GAMMA_QK_FACTOR * lp * cv * ci_h * co_h
    v = torch.broadcast_to(lp * ci_h * co_h, broadcast_shape(cv.shape, (ci_h * co_h).shape))
    m_in = lp * co
    m_out = ci if convention == "derived" else torch.ones_like(co)
    if not head:  # one head: every entry has the common shape
        shape = broadcast_shape(cv.shape, ci.shape, co.shape)
        qk, v, m_in, m_out = (torch.broadcast_to(t, shape) for t in (qk, v, m_in, m_out))
    return {"QK": qk, "V": v.clone(), "M_in": m_in, "M_out": m_out}


def gamma_derived(kind: str, c_v, c_in, c_out, *, L_phi: float = GELU_LIPSCHITZ) -> torch.Tensor:
    """Sensitivity of one reference layer's output to one of its matrices (derived in :ref:`ch-sa-deep`,
    :prf:ref:`lem-sa-matrix-sensitivity`): :func:`sensitivities` with ``convention="derived"``.

    ``QK``: ``2 L_phi C_V C_in C_out``; ``V``: ``L_phi C_in C_out``; ``M_in``: ``L_phi C_out``; ``M_out``:
    ``C_in`` (GELU satisfies ``|phi(x)| <= |x|``). The authors' code drops ``L_phi`` and uses ``1`` for M_out.
    """
    table = sensitivities(c_v, c_in, c_out, L_phi=L_phi, convention="derived")
    if kind not in table:
        raise ParameterError(f"kind must be one of {sorted(table)}, got {kind!r}")
    return table[kind]
