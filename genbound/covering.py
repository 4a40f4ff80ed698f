"""Covering numbers of linear classes, in natural logs (book: :ref:`ch-covering`, :ref:`ch-linear-classes`).

* :func:`maurey_log_cover`: uniform (operator-norm) cover of an ``l_{1,1}`` ball of matrices acting on an
  ``l_2`` ball of inputs, by Maurey's sparsification; no sample size and no sequence length.
* :func:`sup_norm_maurey_log_cover`: a sup-norm cover on ``n`` points for ``l_1``-bounded weights and
  ``l_inf``-bounded inputs (Maurey plus Hoeffding and a union bound): the ``log n`` appears.
* :func:`zhang_log_cover`: Zhang's (2002) sup-norm cover of ``l_2``-bounded linear functionals (constants
  recalled, not verified against the paper).
* :func:`allocate_scales`: the allocation lemma behind every ``(sum_j c_j^{1/3} a_j^{2/3})^3``.
* :func:`maurey_sparsify`, :func:`maurey_expected_error`: run the sampling argument itself.

>>> from genbound.covering import maurey_log_cover, allocate_scales
>>> round(maurey_log_cover(1.0, 1.0, 0.5, 2, 3), 6)   # ceil(4) * log(12)
9.939627
>>> eps_j, value = allocate_scales([1.0, 8.0], 3.0)
>>> eps_j.tolist(), value
([1.0, 2.0], 3.0)
"""

from __future__ import annotations

import math

import torch

from ._validate import as_tensor, check_positive_int, check_real
from .errors import ParameterError, ShapeError

__all__ = [
    "ALLOCATION_COST_EXPONENT",
    "ALLOCATION_WEIGHT_EXPONENT",
    "ALLOCATION_OUTER_POWER",
    "allocate_scales",
    "allocation_value",
    "allocation_split",
    "maurey_log_cover",
    "maurey_sparsify",
    "maurey_expected_error",
    "sup_norm_maurey_log_cover",
    "zhang_log_cover",
    "euclidean_ball_log_cover",
    "ZHANG_CONSTANT",
    "SUP_NORM_HOEFFDING_COEF",
    "RANK_NET_BASE",
    "SUDAKOV_CONSTANT",
    "rank_net_log_cover",
    "rank_net_log_cover_log",
    "gaussian_max_lower_bound",
    "spectral_ball_width",
    "sudakov_log_cover",
    "sudakov_log_cover_log",
]

#: Exponents of ``(sum_j c_j^{1/3} a_j^{2/3})^3`` (:data:`genbound.symbolic.allocation.ALLOCATION_EXPONENTS`).
ALLOCATION_COST_EXPONENT = 1.0 / 3.0
ALLOCATION_WEIGHT_EXPONENT = 2.0 / 3.0
ALLOCATION_OUTER_POWER = 3.0
#: ``2`` in ``K = floor(2 B^2 a^2 log(2n) / eps^2) + 1`` (:func:`genbound.symbolic.rademacher.sup_norm_atoms`).
SUP_NORM_HOEFFDING_COEF = 2.0
#: The leading constant ``36`` of Zhang's Theorem 4, as recalled (unverified).
ZHANG_CONSTANT = 36.0
#: ``9`` in the rank-``r`` net ``(9 R / eps)^{(N + N' + 1) r}`` (Candes and Plan 2011, Lemma 3.1): three
#: factors, each covered at a third of the radius with ``3 / (eps / 3)`` points per dimension
#: (:func:`genbound.symbolic.network.rank_net_base`).
RANK_NET_BASE = 9.0
#: ``2 pi log 2`` in Sudakov's minoration ``log M(K, eps) <= 2 pi log 2 (w(K) / eps)^2``
#: (:func:`genbound.symbolic.network.sudakov_constant`).
SUDAKOV_CONSTANT = 2.0 * math.pi * math.log(2.0)


# ---------------------------------------------------------------------------------------------------
# allocation lemma
# ---------------------------------------------------------------------------------------------------


def _costs_weights(costs, weights) -> tuple[torch.Tensor, torch.Tensor]:
    c = as_tensor(costs, "costs", min_ndim=1)
    if bool((c < 0).any()):
        raise ParameterError("costs must be nonnegative")
    a = torch.ones_like(c) if weights is None else as_tensor(weights, "weights", min_ndim=1)
    if a.shape != c.shape:
        try:
            a = torch.broadcast_to(a, c.shape)
        except RuntimeError as exc:
            raise ShapeError(
                f"weights of shape {tuple(a.shape)} do not match costs {tuple(c.shape)}"
            ) from exc
    if bool((a <= 0).any()):
        raise ParameterError("weights (Lipschitz factors) must be positive")
    return c, a


def allocation_value(costs, eps, *, weights=None) -> torch.Tensor:
    """``(sum_j c_j^{1/3} a_j^{2/3})^3 / eps^2``, batched over leading dimensions of ``costs``.

    >>> allocation_value([[1.0, 8.0], [1.0, 1.0]], 1.0).tolist()
    [27.0, 8.0]
    """
    c, a = _costs_weights(costs, weights)
    eps = check_real(eps, "eps", lo=0.0, lo_open=True)
    S = (c**ALLOCATION_COST_EXPONENT * a**ALLOCATION_WEIGHT_EXPONENT).sum(-1)
    return S**ALLOCATION_OUTER_POWER / eps**2


def allocate_scales(costs, eps, *, weights=None) -> tuple[torch.Tensor, float]:
    """The allocation lemma (book: :prf:ref:`lem-allocation`).

    Minimise ``sum_j c_j / eps_j^2`` over ``eps_j > 0`` subject to ``sum_j a_j eps_j <= eps``, where
    ``c_j = costs[j]`` (e.g. ``c_j = rho_j^2 B_j^2 log(#atoms_j)`` for a cover with
    ``log N_j(eps_j) <= c_j / eps_j^2``) and ``a_j = weights[j]`` (Lipschitz factors, default 1). The
    optimum (Lagrange; :mod:`genbound.symbolic.allocation`) is

    ``eps_j = eps (c_j / a_j)^{1/3} / S``, value ``S^3 / eps^2``, with ``S = sum_j c_j^{1/3} a_j^{2/3}``.

    With ``c_j = C_j^2`` and unit weights the value is ``(sum_j C_j^{2/3})^3 / eps^2``. Returns the
    optimal ``eps_j`` (tensor) and the optimal value (float); ``costs`` must be one-dimensional
    (use :func:`allocation_value` for batches). A zero cost gets ``eps_j = 0`` (it needs no budget).

    >>> e, v = allocate_scales([1.0, 1.0], 2.0, weights=[1.0, 1.0])
    >>> e.tolist(), v
    ([1.0, 1.0], 2.0)
    """
    c, a = _costs_weights(costs, weights)
    if c.ndim != 1:
        raise ShapeError(f"costs must be one-dimensional, got shape {tuple(c.shape)}")
    eps = check_real(eps, "eps", lo=0.0, lo_open=True)
    S = (c**ALLOCATION_COST_EXPONENT * a**ALLOCATION_WEIGHT_EXPONENT).sum()
    if float(S) == 0.0:
        return torch.zeros_like(c), 0.0
    eps_j = eps * (c / a) ** ALLOCATION_COST_EXPONENT / S
    return eps_j, float(S**ALLOCATION_OUTER_POWER / eps**2)


def allocation_split(radii: dict[str, float], eps: float) -> dict[str, float]:
    """:func:`allocate_scales` with costs ``C_j^2`` and unit weights, in plain floats and keyed by name.

    ``eps_j = eps C_j^{2/3} / sum_i C_i^{2/3}``: the same closed form, without tensors, for callers that
    evaluate it thousands of times (inside Dudley's integral). When every ``C_j`` is zero any split is
    optimal and ``eps`` is split evenly.

    >>> allocation_split({"a": 1.0, "b": 8.0}, 3.0)
    {'a': 0.6, 'b': 2.4}
    """
    eps = check_real(eps, "eps", lo=0.0, lo_open=True)
    if not radii:
        raise ParameterError("radii is empty: nothing to split eps between")
    bad = [k for k, c in radii.items() if not (math.isfinite(c) and c >= 0)]
    if bad:
        raise ParameterError(
            f"radii must be finite and nonnegative; {bad[0]!r} is {radii[bad[0]]!r}"
        )
    w = {k: (c * c) ** ALLOCATION_COST_EXPONENT for k, c in radii.items()}
    tot = sum(w.values())
    if tot == 0:
        return {k: eps / len(w) for k in w}
    return {k: eps * v / tot for k, v in w.items()}


# ---------------------------------------------------------------------------------------------------
# Maurey
# ---------------------------------------------------------------------------------------------------


def maurey_log_cover(
    radius: float, input_radius: float, eps: float, d_in: int, d_out: int
) -> float:
    """``ceil(B^2 R^2 / eps^2) log(2 d_in d_out)`` (natural log; book: :prf:ref:`lem-maurey-matrix-cover`).

    Every ``W in R^{d_in x d_out}`` with ``||W||_{1,1} <= B = radius`` has, among the averages of
    ``K = ceil(B^2 R^2/eps^2)`` atoms ``+-B E_ij`` (at most ``(2 d_in d_out)^K`` matrices, all in the ball),
    one ``W_K`` with ``sup_{||x||_2 <= R} ||(W - W_K)^T x||_2 = R ||W - W_K||_op <= R ||W - W_K||_F <= eps``.
    The cover is uniform over the input ball: it does not depend on a sample, its size ``m`` or a
    sequence length. Digest of Trauger and Tewari (2024), R2 (our reconstruction).

    >>> round(maurey_log_cover(2.0, 1.0, 1.0, 1, 1), 6)   # 4 log 2
    2.772589
    """
    B = check_real(radius, "radius", lo=0.0)
    R = check_real(input_radius, "input_radius", lo=0.0)
    eps = check_real(eps, "eps", lo=0.0, lo_open=True)
    d_in = check_positive_int(d_in, "d_in")
    d_out = check_positive_int(d_out, "d_out")
    K = math.ceil((B * R / eps) ** 2)
    return K * math.log(2 * d_in * d_out)


def maurey_expected_error(W, radius: float, K: int, *, zero_atom: bool = True) -> torch.Tensor:
    """``E ||W - W_K||_F^2`` for Maurey's sampling from the ``l_{1,1}`` ball of radius ``B`` (book:
    :prf:ref:`lem-maurey`).

    With ``zero_atom`` (atoms ``+-B E_ij`` drawn with probabilities ``|W_ij|/B``, the zero matrix with the
    remaining mass): ``(B ||W||_{1,1} - ||W||_F^2)/K``. Without it (remaining mass split evenly between
    ``+B E_11`` and ``-B E_11``, so every atom has norm ``B``): ``(B^2 - ||W||_F^2)/K``. Batched over leading
    dimensions of ``W``.

    >>> maurey_expected_error(torch.tensor([[0.5, 0.0]]), 1.0, 2).item()
    0.125
    """
    W = as_tensor(W, "W", min_ndim=2)
    B = check_real(radius, "radius", lo=0.0, lo_open=True)
    K = check_positive_int(K, "K")
    l11 = W.abs().sum((-2, -1))
    if bool((l11 > B * (1 + 1e-12)).any()):
        raise ParameterError(f"||W||_{{1,1}} = {float(l11.max()):.6g} exceeds the radius {B}")
    fro2 = (W**2).sum((-2, -1))
    return ((B * l11 if zero_atom else B**2 + 0 * l11) - fro2) / K


def maurey_sparsify(
    W, radius: float, K: int, *, n_draws: int = 1, seed: int = 0, zero_atom: bool = True
) -> torch.Tensor:
    """Draw ``n_draws`` Maurey approximations ``W_K = (1/K) sum_r G_r`` of ``W`` (book: :prf:ref:`lem-maurey`).

    ``G_r`` are i.i.d. atoms ``sign(W_ij) B E_ij`` with probability ``|W_ij| / B``; the remaining mass
    ``1 - ||W||_{1,1}/B`` goes to the zero matrix (``zero_atom=True``) or is split evenly between
    ``+-B E_11``. Each ``W_K`` is an average of ``K`` atoms, hence in the ball, and ``E W_K = W``.
    Returns shape ``(n_draws, *W.shape)``; the draws are vectorised (a multinomial count per atom).

    >>> W = torch.tensor([[1.0, 0.0], [0.0, 0.0]])
    >>> maurey_sparsify(W, 1.0, 3, n_draws=2).tolist()
    [[[1.0, 0.0], [0.0, 0.0]], [[1.0, 0.0], [0.0, 0.0]]]
    """
    W = as_tensor(W, "W", ndim=2)
    B = check_real(radius, "radius", lo=0.0, lo_open=True)
    K = check_positive_int(K, "K")
    n_draws = check_positive_int(n_draws, "n_draws")
    l11 = float(W.abs().sum())
    if l11 > B * (1 + 1e-12):
        raise ParameterError(f"||W||_{{1,1}} = {l11:.6g} exceeds the radius {B}")
    flat = W.reshape(-1)
    rest = max(1.0 - l11 / B, 0.0)
    if zero_atom:
        probs = torch.cat([flat.abs() / B, flat.new_tensor([rest])])
        values = torch.cat([flat.sign() * B, flat.new_zeros(1)])
        index = torch.cat([torch.arange(flat.numel()), torch.tensor([0])])
    else:
        probs = torch.cat([flat.abs() / B, flat.new_tensor([rest / 2, rest / 2])])
        values = torch.cat([flat.sign() * B, flat.new_tensor([B, -B])])
        index = torch.cat([torch.arange(flat.numel()), torch.tensor([0, 0])])
    gen = torch.Generator().manual_seed(int(seed))
    draws = torch.multinomial(
        probs.clamp(min=0).cpu(), K * n_draws, replacement=True, generator=gen
    )
    draws = draws.reshape(n_draws, K).to(W.device)
    out = torch.zeros(n_draws, flat.numel(), dtype=W.dtype, device=W.device)
    out.scatter_add_(1, index.to(W.device)[draws], values[draws])
    return (out / K).reshape(n_draws, *W.shape)


def sup_norm_maurey_log_cover(
    weight_radius: float, input_radius: float, eps: float, n: int, d: int
) -> float:
    """``K log(2d)`` with ``K = floor(2 B^2 a^2 log(2n) / eps^2) + 1`` (natural log; book:
    :prf:ref:`lem-sup-norm-maurey`).

    A sup-norm cover, on ``n`` points with ``||x_i||_inf <= a``, of ``{x -> w.x : ||w||_1 <= B}``: each
    ``w_K . x_i`` is an average of ``K`` i.i.d. terms in ``[-aB, aB]`` with mean ``w . x_i``, so Hoeffding
    and a union bound over the ``n`` points leave a positive probability that all ``n`` errors are
    ``<= eps`` once ``2n exp(-K eps^2/(2 a^2 B^2)) < 1``. The ``log n`` is the price of the sup over points.

    >>> round(sup_norm_maurey_log_cover(1.0, 1.0, 1.0, 1, 1), 6)   # K = floor(2 log 2) + 1 = 2
    1.386294
    """
    B = check_real(weight_radius, "weight_radius", lo=0.0)
    a = check_real(input_radius, "input_radius", lo=0.0)
    eps = check_real(eps, "eps", lo=0.0, lo_open=True)
    n = check_positive_int(n, "n")
    d = check_positive_int(d, "d")
    K = math.floor(SUP_NORM_HOEFFDING_COEF * (B * a / eps) ** 2 * math.log(2 * n)) + 1
    return K * math.log(2 * d)


def zhang_log_cover(weight_radius: float, input_radius: float, eps: float, n: int) -> float:
    """``36 (ab/eps)^2 log(2 ceil(4ab/eps + 2) n + 1)`` (natural log; book: :prf:ref:`lem-zhang-cover`).

    Zhang (2002, Theorem 4, ``p = q = 2``) **as recalled, not checked against the paper**: a sup-norm
    cover on ``n`` points with ``||x_i||_2 <= a`` of ``{x -> w.x : ||w||_2 <= b}``. The theorem is stated
    in ``log_2`` on both sides; multiplying by ``log 2`` gives the same inequality in natural logs. The
    form (``1/eps^2`` times ``log n``) is reliable; the constants ``36`` and ``4``, ``2`` are not.
    genbound only checks that the bound is consistent with a provable lower bound.

    >>> round(zhang_log_cover(1.0, 1.0, 1.0, 1), 6)   # 36 log(13)
    92.338177
    """
    b = check_real(weight_radius, "weight_radius", lo=0.0)
    a = check_real(input_radius, "input_radius", lo=0.0)
    eps = check_real(eps, "eps", lo=0.0, lo_open=True)
    n = check_positive_int(n, "n")
    r = a * b / eps
    return ZHANG_CONSTANT * r**2 * math.log(2 * math.ceil(4 * r + 2) * n + 1)


def euclidean_ball_log_cover(radius: float, eps: float, d: int) -> float:
    """``d log(1 + 2 radius / eps)``: the volumetric bound on the ``eps``-covering number of a Euclidean
    ball of radius ``radius`` in ``R^d`` (a standard fact, used for a parametric class in
    :ref:`ch-covering`).

    >>> round(euclidean_ball_log_cover(1.0, 2.0, 3), 6)   # 3 log 2
    2.079442
    """
    radius = check_real(radius, "radius", lo=0.0)
    eps = check_real(eps, "eps", lo=0.0, lo_open=True)
    d = check_positive_int(d, "d")
    return d * math.log1p(2 * radius / eps)


# ---------------------------------------------------------------------------------------------------
# the two pieces of a Schatten class (book: :ref:`ch-sa-deep`, theorem P)
# ---------------------------------------------------------------------------------------------------


def rank_net_log_cover(rank, rows, cols, frob_radius, eps) -> torch.Tensor:
    """``(rows + cols + 1) rank log+(9 frob_radius / eps)``: the log-size of a Frobenius ``eps``-net of the
    ``rows x cols`` matrices of rank at most ``rank`` and Frobenius norm at most ``frob_radius``
    (book: :prf:ref:`lem-p-rank-net`; Candes and Plan 2011, Lemma 3.1, for the unit sphere; its proof covers
    the ball with the same count). ``log+`` is ``max(log, 0)``: one point (the zero matrix) covers when
    ``eps >= frob_radius``. Broadcasts over tensors.

    >>> round(float(rank_net_log_cover(1, 2, 2, 1.0, 0.9)), 6)   # 5 log 10
    11.512925
    """
    R = torch.as_tensor(frob_radius, dtype=torch.float64)
    e = torch.as_tensor(eps, dtype=torch.float64)
    return rank_net_log_cover_log(rank, rows, cols, R.log(), e.log())


def rank_net_log_cover_log(rank, rows, cols, log_frob_radius, log_eps) -> torch.Tensor:
    """:func:`rank_net_log_cover` with the radius and ``eps`` given by their logs (radii beyond float64 stay
    finite): ``(rows + cols + 1) rank max(log 9 + log_frob_radius - log_eps, 0)``, 0 at rank 0."""
    r = torch.as_tensor(rank, dtype=torch.float64)
    P = (torch.as_tensor(rows, dtype=torch.float64) + cols + 1) * r
    gap = math.log(RANK_NET_BASE) + torch.as_tensor(log_frob_radius, dtype=torch.float64) - log_eps
    val = P * gap.clamp(min=0.0)
    return torch.where(r > 0, val, torch.zeros_like(val))


def gaussian_max_lower_bound(M) -> torch.Tensor:
    """``sqrt(log M / (pi log 2))``: a lower bound on ``E max_{i <= M} g_i`` for ``M >= 2`` i.i.d. standard
    Gaussians, with equality at ``M = 2`` (recalled from Kamath's note on Gaussian maxima; checked by
    quadrature in :prf:ref:`lem-p-sudakov`).

    >>> round(float(gaussian_max_lower_bound(2)), 12) == round(1 / math.sqrt(math.pi), 12)
    True
    """
    m = torch.as_tensor(M, dtype=torch.float64)
    return (m.log() / (math.pi * math.log(2.0))).sqrt()


def spectral_ball_width(tau, vector_radius, rows, cols) -> torch.Tensor:
    """``tau B sqrt(min(rows, cols) cols)``: the Gaussian width of ``{(v_j R)_j / sqrt(k) : ||R||_2 <= tau}``
    for ``k`` row vectors ``v_j`` of norm at most ``B`` (book: :prf:ref:`lem-p-residual-cover`: nuclear and
    spectral norms are dual, ``||G||_* <= sqrt(rank G) ||G||_F`` and ``E ||G||_F <= sqrt(k) B sqrt(cols)``)."""
    t = torch.as_tensor(tau, dtype=torch.float64)
    return t * vector_radius * math.sqrt(min(int(rows), int(cols)) * int(cols))


def sudakov_log_cover(width, eps) -> torch.Tensor:
    """``2 pi log 2 (width / eps)^2``: Sudakov's minoration with an explicit constant, a bound on the log of
    the ``eps``-packing (hence proper covering) number of a set of Gaussian width ``width``
    (book: :prf:ref:`lem-p-sudakov`).

    >>> round(float(sudakov_log_cover(1.0, 1.0)), 6)   # 2 pi log 2
    4.355172
    """
    w = torch.as_tensor(width, dtype=torch.float64)
    return sudakov_log_cover_log(w.log(), torch.as_tensor(eps, dtype=torch.float64).log())


def sudakov_log_cover_log(log_width, log_eps) -> torch.Tensor:
    """:func:`sudakov_log_cover` with the width and ``eps`` given by their logs (beyond float64's range the
    value is ``inf``, never NaN): ``2 pi log 2 exp(2 (log_width - log_eps))``."""
    lw = torch.as_tensor(log_width, dtype=torch.float64)
    return SUDAKOV_CONSTANT * torch.exp(2.0 * (lw - log_eps))
