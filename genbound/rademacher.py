"""Rademacher complexity: from complexity to generalization, Dudley's entropy integral, and the
empirical Rademacher complexity of norm-bounded linear classes (book: :ref:`ch-rademacher`,
:ref:`ch-covering`).

Conventions. For a sample ``S = (z_1, ..., z_m)`` and a class ``G`` of real functions, the **empirical
Rademacher complexity** is ``R_S(G) = E_sigma sup_{g in G} (1/m) sum_i sigma_i g(z_i)`` with i.i.d.
uniform signs ``sigma_i``; ``R_m(G) = E_S R_S(G)``. Distances between functions on the sample are
``rho(f, g) = (1/m sum_i (f(z_i) - g(z_i))^2)^{1/2}``. Every constant below is derived in
:mod:`genbound.symbolic.rademacher` or :mod:`genbound.symbolic.dudley`; tests check they agree.

>>> from genbound.rademacher import generalization_gap_bound, dudley_inverse_square
>>> round(generalization_gap_bound(0.05, m=1000, delta=0.05), 6)
0.228841
>>> r = dudley_inverse_square(1.0, 0.0, m=10_000, diameter=1.0)
>>> round(r.alpha, 4), round(r.value, 4)
(0.03, 0.4576)
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass
from typing import Callable

import torch

from ._validate import as_tensor, check_positive_int, check_real
from .device import home_device, resolve_device
from .errors import ParameterError

__all__ = [
    "GAP_RADEMACHER_COEF",
    "GAP_CONFIDENCE_COEF",
    "DUDLEY_ALPHA_COEF",
    "DUDLEY_INTEGRAL_COEF",
    "INVERSE_SQUARE_ALPHA_COEF",
    "PARAMETRIC_ALPHA_DENOM",
    "MCDIARMID_EXPONENT_COEF",
    "mcdiarmid_tail",
    "generalization_gap_bound",
    "DudleyResult",
    "dudley_bound",
    "dudley_objective",
    "dudley_inverse_square",
    "inverse_square_capacity",
    "inverse_square_log_factor",
    "dudley_parametric",
    "RademacherEstimate",
    "empirical_rademacher_linear",
    "rademacher_finite_exact",
    "massart_bound",
    "l1_linear_massart_bound",
    "l2_linear_bound",
    "ramp_loss",
]

#: ``2`` in ``2 R_S + 3 b sqrt(log(2/delta)/(2m))`` (:func:`genbound.symbolic.rademacher.gap_coefficients`).
GAP_RADEMACHER_COEF = 2.0
#: ``3`` in the same bound: one McDiarmid step for the deviation, two for ``R_m -> R_S``.
GAP_CONFIDENCE_COEF = 3.0
#: ``4`` and ``12`` in Dudley's bound (derived in :func:`genbound.symbolic.dudley.dudley_constants`).
DUDLEY_ALPHA_COEF = 4.0
DUDLEY_INTEGRAL_COEF = 12.0
#: ``3`` in the minimiser ``alpha* = 3 sqrt(A) / (sqrt(m) - 3 sqrt(Lambda))`` of the inverse-square closed form
#: (:func:`genbound.symbolic.dudley.inverse_square_alpha`).
INVERSE_SQUARE_ALPHA_COEF = 3.0
#: ``9`` in the minimiser ``alpha* = C exp(-m / (9 k))`` of the parametric closed form
#: (:func:`genbound.symbolic.dudley.parametric_alpha`).
PARAMETRIC_ALPHA_DENOM = 9.0
#: ``2`` in McDiarmid's tail ``exp(-2 t^2 / sum_i c_i^2)`` (:func:`genbound.symbolic.rademacher.chernoff_exponent_coef`).
MCDIARMID_EXPONENT_COEF = 2.0


def mcdiarmid_tail(t, sum_sq):
    """McDiarmid's tail bound ``exp(-2 t^2 / sum_i c_i^2)`` on ``P(Phi - E Phi >= t)`` for a function with
    bounded differences ``c_i`` (book: :prf:ref:`lem-mcdiarmid`); ``sum_sq = sum_i c_i^2``. Tensors or floats.

    >>> round(float(mcdiarmid_tail(0.1, 0.01)), 6)   # exp(-2)
    0.135335
    """
    if isinstance(t, torch.Tensor) or isinstance(sum_sq, torch.Tensor):
        return torch.exp(-MCDIARMID_EXPONENT_COEF * torch.as_tensor(t) ** 2 / sum_sq)
    return math.exp(-MCDIARMID_EXPONENT_COEF * t * t / sum_sq)


# ---------------------------------------------------------------------------------------------------
# generalization from Rademacher complexity
# ---------------------------------------------------------------------------------------------------


def generalization_gap_bound(rademacher: float, *, m: int, delta: float, b: float = 1.0) -> float:
    """``2 R_S(G) + 3 b sqrt(log(2/delta) / (2m))`` (book: :prf:ref:`thm-rademacher-generalization`).
    (The factor 2 is :prf:ref:`lem-symmetrization`.)

    For a class ``G`` of losses with values in ``[0, b]`` and an i.i.d. sample of size ``m``: with
    probability at least ``1 - delta``, **every** ``g in G`` has ``E g <= (1/m) sum_i g(z_i) + this``,
    where ``rademacher`` is the **empirical** Rademacher complexity ``R_S(G)`` of the *loss class* on the
    sample (for an ``L``-Lipschitz loss, ``L`` times that of the predictor class suffices by Talagrand's
    contraction). Mohri, Rostamizadeh and Talwalkar (2018, Thm 3.3), scaled from ``[0, 1]`` to ``[0, b]``.

    >>> generalization_gap_bound(0.0, m=2, delta=2.0 / math.e**4, b=1.0)
    3.0
    """
    rad = check_real(rademacher, "rademacher", lo=0.0)
    m = check_positive_int(m, "m")
    delta = check_real(delta, "delta", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    b = check_real(b, "b", lo=0.0, lo_open=True)
    return GAP_RADEMACHER_COEF * rad + GAP_CONFIDENCE_COEF * b * math.sqrt(
        math.log(2.0 / delta) / (2.0 * m)
    )


# ---------------------------------------------------------------------------------------------------
# Dudley's entropy integral
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DudleyResult:
    """Value of Dudley's bound ``4 alpha + 12/sqrt(m) int_alpha^{c/2} sqrt(log N(eps)) d eps``.

    ``value``: the bound on ``R_S``; ``alpha``: the cut-off where it is attained (``0.0`` when the
    infimum is a limit ``alpha -> 0``); ``integral``: the integral at that ``alpha``; ``m`` and ``diameter``
    (``c``) as passed; ``method``: ``"numeric"``, ``"inverse-square"`` or ``"parametric"``.
    """

    value: float
    alpha: float
    integral: float
    m: int
    diameter: float
    method: str = "numeric"


def _check_dudley_args(m, diameter) -> tuple[int, float]:
    return check_positive_int(m, "m"), check_real(diameter, "diameter", lo=0.0, lo_open=True)


def _support_end(log_cover, lo: float, hi: float) -> float:
    """The largest ``eps`` in ``[lo, hi]`` with ``log N(eps) > 0`` (bisection in ``log eps``; ``log N`` is
    non-increasing), so that quadrature never straddles the point where the integrand drops to zero."""
    if float(log_cover(hi)) > 0 or hi <= lo:
        return hi
    if float(log_cover(lo)) <= 0:
        return lo
    a, b = math.log(lo), math.log(hi)
    for _ in range(80):
        mid = 0.5 * (a + b)
        if float(log_cover(math.exp(mid))) > 0:
            a = mid
        else:
            b = mid
    return math.exp(b)


def dudley_objective(
    log_cover: Callable[[float], float], alpha: float, *, m: int, diameter: float, breakpoints=()
) -> float:
    """``4 alpha + 12/sqrt(m) int_alpha^{c/2} sqrt(max(log N(eps), 0)) d eps`` at one ``alpha`` in
    ``(0, c/2]`` (``c = diameter``), by adaptive quadrature (``scipy.integrate.quad``) in ``log eps``.
    ``breakpoints``: values of ``eps`` where ``log N`` jumps or has a kink (e.g. the jumps of a ``ceil``);
    the integral is split there, so step-shaped covers are integrated exactly (one smooth piece per step).
    The point where ``log N`` reaches 0 is found automatically.

    >>> round(dudley_objective(lambda e: 0.0, 0.25, m=4, diameter=1.0), 12)
    1.0
    """
    from scipy.integrate import quad

    m, c = _check_dudley_args(m, diameter)
    alpha = check_real(alpha, "alpha", lo=0.0, hi=c / 2, lo_open=True)
    integral = 0.0
    if alpha < c / 2:
        # integrate in u = log(eps): the integrand sqrt(log N(e^u)) e^u is smooth and bounded for the
        # usual covers (constant for log N = A / eps^2)
        def integrand(u):
            e = math.exp(u)
            v = float(log_cover(e))
            if not math.isfinite(v):
                raise ParameterError(f"log_cover returned a non-finite value {v} at eps = {e:.6g}")
            return math.sqrt(max(v, 0.0)) * e

        top = _support_end(log_cover, alpha, c / 2)
        if top > alpha:
            # split at the breakpoints (jumps of step-shaped covers): each piece is then smooth
            edges = [
                math.log(alpha),
                *sorted({math.log(p) for p in breakpoints if alpha < p < top}),
                math.log(top),
            ]
            for lo, hi in zip(edges[:-1], edges[1:]):
                piece, _ = quad(integrand, lo, hi, limit=200, epsabs=1e-14, epsrel=1e-11)
                integral += piece
    return DUDLEY_ALPHA_COEF * alpha + DUDLEY_INTEGRAL_COEF / math.sqrt(m) * integral


def dudley_bound(
    log_cover: Callable[[float], float],
    *,
    m: int,
    diameter: float,
    alpha_min: float = 1e-12,
    breakpoints=(),
) -> DudleyResult:
    """``inf_{0 < alpha <= c/2} 4 alpha + 12/sqrt(m) int_alpha^{c/2} sqrt(log N(eps)) d eps`` numerically
    (book: :prf:ref:`thm-dudley`).

    ``log_cover(eps)`` is a natural-log covering number of the class in the empirical metric ``rho`` (or
    any cover that dominates it: sup-norm on the sample, uniform over the input domain), assumed
    non-increasing in ``eps``. ``diameter`` is any ``c`` such that the class lies in a ``rho``-ball of
    radius ``c`` around one fixed function (``c = sup_f rho(f, 0)``, or ``c = sup_{f,g} rho(f, g)``).
    Since ``d/d alpha = 4 - 12 sqrt(log N(alpha))/sqrt(m)`` is non-decreasing, the objective is convex in
    ``alpha``: we minimise it in ``log alpha`` on ``[alpha_min * c, c/2]`` (``scipy`` bounded Brent) and
    integrate with ``quad`` (``breakpoints``: see :func:`dudley_objective`). This form integrates only to ``c/2``; it implies the often-quoted version
    ``inf_alpha 4 alpha + 12/sqrt(m) int_alpha^c``.

    >>> r = dudley_bound(lambda e: 1.0 / e**2, m=10_000, diameter=1.0)
    >>> round(r.alpha, 4), round(r.value, 4)
    (0.03, 0.4576)
    """
    from scipy.integrate import IntegrationWarning
    from scipy.optimize import minimize_scalar

    m, c = _check_dudley_args(m, diameter)
    alpha_min = check_real(alpha_min, "alpha_min", lo=0.0, hi=0.5, lo_open=True, hi_open=True)
    if not callable(log_cover):
        raise ParameterError(
            f"log_cover must be a callable eps -> log N(eps), got {type(log_cover).__name__}"
        )
    lo, hi = math.log(alpha_min * c), math.log(c / 2)

    def obj(u):
        return dudley_objective(
            log_cover, min(math.exp(u), c / 2), m=m, diameter=c, breakpoints=breakpoints
        )

    # far from the optimum the search may visit scales where a step-shaped cover has more jumps than
    # the quadrature can resolve; those evaluations only steer the search, so their warnings are muted
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IntegrationWarning)
        res = minimize_scalar(obj, bounds=(lo, hi), method="bounded", options={"xatol": 1e-9})
        cands = [
            (float(res.fun), math.exp(float(res.x))),
            (obj(hi), c / 2),
            (obj(lo), math.exp(lo)),
        ]
    _, alpha = min(cands)
    alpha = min(alpha, c / 2)
    value = dudley_objective(log_cover, alpha, m=m, diameter=c, breakpoints=breakpoints)
    if not math.isfinite(value):
        raise ParameterError("log_cover returned a non-finite value inside (0, diameter/2]")
    integral = (value - DUDLEY_ALPHA_COEF * alpha) * math.sqrt(m) / DUDLEY_INTEGRAL_COEF
    return DudleyResult(value, alpha, integral, m, c, "numeric")


def dudley_inverse_square(A: float, Lambda: float, *, m: int, diameter: float) -> DudleyResult:
    """Closed form of Dudley's bound for ``log N(eps) <= A/eps^2 + Lambda`` (book:
    :prf:ref:`cor-dudley-inverse-square`).

    Uses ``sqrt(A/eps^2 + Lambda) <= sqrt(A)/eps + sqrt(Lambda)``; the relaxed objective
    ``4 alpha + 12/sqrt(m) (sqrt(A) log(c/(2 alpha)) + sqrt(Lambda)(c/2 - alpha))`` is convex with minimiser
    ``alpha* = 3 sqrt(A)/(sqrt(m) - 3 sqrt(Lambda))`` (sympy: :func:`genbound.symbolic.dudley.inverse_square_alpha`),
    clipped to ``(0, c/2]``. The result is an upper bound on :func:`dudley_bound` for that ``log N``.

    >>> r = dudley_inverse_square(0.0, 1.0, m=100, diameter=2.0)
    >>> r.alpha, round(r.value, 12)
    (0.0, 1.2)
    """
    m, c = _check_dudley_args(m, diameter)
    A = check_real(A, "A", lo=0.0)
    Lambda = check_real(Lambda, "Lambda", lo=0.0)
    sA, sL, sm = math.sqrt(A), math.sqrt(Lambda), math.sqrt(m)
    k4, k12 = DUDLEY_ALPHA_COEF, DUDLEY_INTEGRAL_COEF

    def objective(al):
        return k4 * al + k12 / sm * (sA * math.log(c / (2 * al)) + sL * (c / 2 - al))

    if A == 0.0:
        if k4 - k12 * sL / sm >= 0:  # objective increasing: infimum as alpha -> 0
            return DudleyResult(k12 / sm * sL * c / 2, 0.0, sL * c / 2, m, c, "inverse-square")
        return DudleyResult(k4 * c / 2, c / 2, 0.0, m, c, "inverse-square")
    k3 = INVERSE_SQUARE_ALPHA_COEF
    denom = sm - k3 * sL
    alpha = c / 2 if denom <= 0 else min(k3 * sA / denom, c / 2)
    value = objective(alpha)
    return DudleyResult(value, alpha, (value - k4 * alpha) * sm / k12, m, c, "inverse-square")


def inverse_square_capacity(A: float, Lambda: float, *, diameter: float) -> float:
    """``12 (sqrt(A) + (c/2) sqrt(Lambda))``: the ``m``-free capacity of a class with
    ``log N(eps) <= A/eps^2 + Lambda`` at diameter ``c`` (book: :prf:ref:`cor-tt-capacity`; derived in
    :func:`genbound.symbolic.dudley.capacity_derivation`). For every ``m``,
    :func:`dudley_inverse_square` is at most ``capacity * inverse_square_log_factor(A, m, c) / sqrt(m)``,
    with equality when ``Lambda = 0`` and ``3 sqrt(A)/sqrt(m) <= c/2``.

    >>> inverse_square_capacity(1.0, 4.0, diameter=1.0)
    24.0
    """
    A = check_real(A, "A", lo=0.0)
    Lambda = check_real(Lambda, "Lambda", lo=0.0)
    c = check_real(diameter, "diameter", lo=0.0, lo_open=True)
    return DUDLEY_INTEGRAL_COEF * (math.sqrt(A) + c / 2 * math.sqrt(Lambda))


def inverse_square_log_factor(A: float, *, m: int, diameter: float) -> float:
    """``max(1, 1 + log(c sqrt(m) / (6 sqrt(A))))`` (``1`` when ``A = 0``): the logarithmic factor of
    :func:`inverse_square_capacity`; the ``6`` is ``2 * 3`` of the cut-off ``alpha_0 = 3 sqrt(A)/sqrt(m)``
    reaching ``c/2``.

    >>> inverse_square_log_factor(1.0, m=36, diameter=1.0)
    1.0
    >>> round(inverse_square_log_factor(1.0, m=3600, diameter=1.0), 12) == round(1 + math.log(10), 12)
    True
    """
    A = check_real(A, "A", lo=0.0)
    m, c = _check_dudley_args(m, diameter)
    if A == 0.0:
        return 1.0
    return max(
        1.0, 1.0 + math.log(c * math.sqrt(m) / (2 * INVERSE_SQUARE_ALPHA_COEF * math.sqrt(A)))
    )


def _parametric_antiderivative(e: float, C: float) -> float:
    """``e sqrt(log(C/e)) + (C sqrt(pi)/2) erfc(sqrt(log(C/e)))`` for ``0 < e <= C``
    (:func:`genbound.symbolic.dudley.parametric_antiderivative`)."""
    ell = math.log(C / e)
    return e * math.sqrt(ell) + C * math.sqrt(math.pi) / 2 * math.erfc(math.sqrt(ell))


def dudley_parametric(k: float, C: float, *, m: int, diameter: float) -> DudleyResult:
    """Exact Dudley bound for ``log N(eps) <= k log(C/eps)`` (``0`` for ``eps >= C``); book:
    :prf:ref:`cor-dudley-parametric`.

    The optimal cut-off solves ``4 = 12 sqrt(k log(C/alpha))/sqrt(m)``: ``alpha* = C exp(-m/(9k))``
    (sympy: :func:`genbound.symbolic.dudley.parametric_alpha`), and the integral has the closed form
    ``sqrt(k) [F(u) - F(alpha)]`` with ``F`` an ``erfc`` antiderivative and ``u = min(c/2, C)``. No
    ``log m`` appears: the rate is ``O(sqrt(k log(C sqrt(m)/c)) c / sqrt(m))`` at worst.

    >>> r = dudley_parametric(1.0, 1.0, m=9, diameter=2.0)
    >>> round(r.alpha, 6), round(r.value, 6)
    (0.367879, 2.987297)
    """
    m, c = _check_dudley_args(m, diameter)
    k = check_real(k, "k", lo=0.0)
    C = check_real(C, "C", lo=0.0, lo_open=True)
    u = min(c / 2, C)
    alpha = C * math.exp(-m / (PARAMETRIC_ALPHA_DENOM * k)) if k > 0 else 0.0
    if k == 0.0:
        return DudleyResult(0.0, 0.0, 0.0, m, c, "parametric")
    if alpha >= u:
        return DudleyResult(DUDLEY_ALPHA_COEF * u, u, 0.0, m, c, "parametric")
    if alpha == 0.0:  # underflow: the integral to 0 converges
        integral = math.sqrt(k) * _parametric_antiderivative(u, C)  # F(0+) = 0
        return DudleyResult(
            DUDLEY_INTEGRAL_COEF / math.sqrt(m) * integral, 0.0, integral, m, c, "parametric"
        )
    integral = math.sqrt(k) * (
        _parametric_antiderivative(u, C) - _parametric_antiderivative(alpha, C)
    )
    value = DUDLEY_ALPHA_COEF * alpha + DUDLEY_INTEGRAL_COEF / math.sqrt(m) * integral
    return DudleyResult(value, alpha, integral, m, c, "parametric")


# ---------------------------------------------------------------------------------------------------
# empirical Rademacher complexity
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RademacherEstimate:
    """An empirical Rademacher complexity: ``value`` (a tensor, one per data set in the batch),
    ``stderr`` (Monte Carlo standard error; zeros when exact), ``n_draws`` (sign vectors used) and
    ``exact`` (all ``2^m`` sign vectors enumerated)."""

    value: torch.Tensor
    stderr: torch.Tensor
    n_draws: int
    exact: bool


_DUAL = {"l1": "linf", "l2": "l2", "linf": "l1"}


def _signs(m: int, n: int | None, generator, device, dtype) -> tuple[torch.Tensor, bool]:
    """All ``2^m`` sign vectors (when ``n is None``) or ``n`` random ones, as an ``(n, m)`` tensor."""
    if n is None:
        grid = torch.tensor(list(itertools.product((-1.0, 1.0), repeat=m)), dtype=dtype)
        return grid.to(device), True
    s = torch.randint(0, 2, (n, m), generator=generator, dtype=torch.int64).to(dtype) * 2 - 1
    return s.to(device), False


def empirical_rademacher_linear(
    X,
    *,
    radius: float = 1.0,
    norm: str = "l1",
    n_draws: int | None = 4096,
    seed: int = 0,
    device=None,
    chunk: int = 4096,
) -> RademacherEstimate:
    """``R_S({x -> <w, x> : ||w||_norm <= radius})`` on the rows of ``X`` (book: :ref:`ch-rademacher`).

    The supremum has a closed form by duality, ``sup_{||w|| <= B} (1/m) sigma^T X w = B ||X^T sigma||_* / m``
    (``*``: the dual norm, ``l1 -> linf``, ``l2 -> l2``, ``linf -> l1``), so only the expectation over
    signs is left: enumerated exactly when ``n_draws is None`` (``m <= 20``), else Monte Carlo with
    ``n_draws`` sign vectors (seeded). ``X`` has shape ``(m, d)`` or ``(batch, m, d)``; the sign vectors
    are shared across the batch and processed in chunks on ``device`` (``None``/``"auto"``: CUDA if present).

    >>> X = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    >>> empirical_rademacher_linear(X, norm="l1", n_draws=None).value.item()
    0.5
    >>> empirical_rademacher_linear(X, norm="l2", n_draws=None).value.item()  # doctest: +NUMBER
    0.7071
    """
    if norm not in _DUAL:
        raise ParameterError(f"norm must be one of {sorted(_DUAL)}, got {norm!r}")
    dev, home = resolve_device(device), home_device(device, X)
    X = as_tensor(X, "X", min_ndim=2, device=dev)
    if X.ndim > 3:
        raise ParameterError(f"X must have shape (m, d) or (batch, m, d), got {tuple(X.shape)}")
    radius = check_real(radius, "radius", lo=0.0)
    squeeze = X.ndim == 2
    Xb = X.unsqueeze(0) if squeeze else X
    m = Xb.shape[-2]
    if n_draws is None and m > 20:
        raise ParameterError(f"exact enumeration needs m <= 20 (2^m sign vectors), got m = {m}")
    if n_draws is not None:
        n_draws = check_positive_int(n_draws, "n_draws", minimum=2)
    chunk = check_positive_int(chunk, "chunk")
    gen = torch.Generator().manual_seed(int(seed))
    sig, exact = _signs(m, n_draws, gen, dev, Xb.dtype)
    dual = _DUAL[norm]
    total = torch.zeros(Xb.shape[0], dtype=Xb.dtype, device=dev)
    total_sq = torch.zeros_like(total)
    for start in range(0, sig.shape[0], chunk):
        s = sig[start : start + chunk]  # (n, m)
        v = torch.einsum("nm,bmd->bnd", s, Xb)  # (b, n, d): X^T sigma
        if dual == "linf":
            sup = v.abs().amax(-1)
        elif dual == "l2":
            sup = torch.linalg.vector_norm(v, dim=-1)
        else:
            sup = v.abs().sum(-1)
        sup = radius * sup / m
        total += sup.sum(-1)
        total_sq += (sup**2).sum(-1)
    n = sig.shape[0]
    mean = total / n
    var = (total_sq / n - mean**2).clamp(min=0) * n / max(n - 1, 1)
    stderr = torch.zeros_like(mean) if exact else (var / n).sqrt()
    if squeeze:
        mean, stderr = mean[0], stderr[0]
    return RademacherEstimate(mean.to(home), stderr.to(home), n, exact)


def rademacher_finite_exact(A) -> torch.Tensor:
    """``E_sigma max_{a in A} (1/m) sigma . a`` for a finite set ``A`` of vectors, exactly (all ``2^m`` signs).

    ``A`` has shape ``(..., N, m)`` (``N`` vectors of length ``m <= 20``); returns shape ``(...)``.
    Differentiable in ``A`` (used by the claims' adversarial searches).

    >>> rademacher_finite_exact(torch.tensor([[1.0, 1.0], [-1.0, -1.0]])).item()
    0.5
    """
    A = A if isinstance(A, torch.Tensor) and A.requires_grad else as_tensor(A, "A", min_ndim=2)
    m = A.shape[-1]
    if m > 20:
        raise ParameterError(f"exact enumeration needs m <= 20, got m = {m}")
    sig, _ = _signs(m, None, None, A.device, A.dtype)  # (2^m, m)
    vals = torch.einsum("sm,...nm->...sn", sig, A)  # (..., 2^m, N)
    return vals.amax(-1).mean(-1) / m


def massart_bound(A) -> torch.Tensor:
    """Massart's finite-class bound ``max_a ||a||_2 sqrt(2 log N) / m`` for ``A`` of shape ``(..., N, m)``
    (book: :prf:ref:`lem-massart`; constant from :func:`genbound.symbolic.rademacher.massart_bound`).

    >>> round(massart_bound(torch.tensor([[3.0, 4.0], [0.0, 0.0]])).item(), 6)
    2.943525
    """
    A = A if isinstance(A, torch.Tensor) and A.requires_grad else as_tensor(A, "A", min_ndim=2)
    N, m = A.shape[-2], A.shape[-1]
    r = torch.linalg.vector_norm(A, dim=-1).amax(-1)
    return r * math.sqrt(2.0 * math.log(N)) / m


def l1_linear_massart_bound(X, *, radius: float = 1.0) -> torch.Tensor:
    """``B max_j ||X_{:,j}||_2 sqrt(2 log(2d)) / m``: Massart's lemma for ``{x -> w.x : ||w||_1 <= B}``
    on the rows of ``X`` (``(m, d)`` or batched), whose supremum is attained at the ``2d`` vectors
    ``+-B X e_j`` (book: :prf:ref:`cor-l1-linear-rademacher`).

    >>> round(l1_linear_massart_bound(torch.eye(2)).item(), 6)
    0.832555
    """
    X = as_tensor(X, "X", min_ndim=2)
    radius = check_real(radius, "radius", lo=0.0)
    m, d = X.shape[-2], X.shape[-1]
    col = torch.linalg.vector_norm(X, dim=-2).amax(-1)
    return radius * col * math.sqrt(2.0 * math.log(2.0 * d)) / m


def l2_linear_bound(X, *, radius: float = 1.0) -> torch.Tensor:
    """``B sqrt(sum_i ||x_i||_2^2) / m`` for ``{x -> w.x : ||w||_2 <= B}`` (Jensen; book:
    :prf:ref:`cor-l2-linear-rademacher`).

    >>> l2_linear_bound(torch.eye(4)).item()
    0.5
    """
    X = as_tensor(X, "X", min_ndim=2)
    radius = check_real(radius, "radius", lo=0.0)
    m = X.shape[-2]
    return radius * torch.linalg.vector_norm(X, dim=(-2, -1)) / m


def ramp_loss(margin, gamma: float) -> torch.Tensor:
    """The ramp (margin) loss ``min(1, max(0, 1 - margin/gamma))`` of ``margin = y f(x)`` (book:
    :prf:ref:`lem-ramp-loss`). It lies between ``1[margin <= 0]`` and ``1[margin < gamma]`` and is
    ``1/gamma``-Lipschitz.

    >>> ramp_loss(torch.tensor([-1.0, 0.0, 0.5, 1.0, 2.0]), 1.0).tolist()
    [1.0, 1.0, 0.5, 0.0, 0.0]
    """
    margin = (
        margin
        if isinstance(margin, torch.Tensor) and margin.requires_grad
        else as_tensor(margin, "margin")
    )
    gamma = check_real(gamma, "gamma", lo=0.0, lo_open=True)
    return (1 - margin / gamma).clamp(0.0, 1.0)
