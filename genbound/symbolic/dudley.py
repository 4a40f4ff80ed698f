"""Sympy derivations for Dudley's entropy integral (:ref:`ch-covering`).

The bound (:prf:ref:`thm-dudley`) is ``D(alpha) = 4 alpha + 12/sqrt(m) int_alpha^{c/2} sqrt(log N(eps)) d eps``
for ``0 < alpha <= c/2``. Two closed forms:

* **inverse square**, ``log N(eps) <= A/eps^2 + Lambda``: with ``sqrt(A/eps^2 + Lambda) <= sqrt(A)/eps +
  sqrt(Lambda)`` the objective becomes :func:`inverse_square_objective`, which is convex in ``alpha``
  with minimiser :func:`inverse_square_alpha` ``= 3 sqrt(A) / (sqrt(m) - 3 sqrt(Lambda))``;
* **parametric**, ``log N(eps) <= k log(C/eps)``: the integrand has the antiderivative
  :func:`parametric_antiderivative` (an ``erfc``), and the minimiser is ``alpha = C exp(-m/(9k))``.

>>> from genbound.symbolic import dudley as sd
>>> sd.inverse_square_alpha()
-3*sqrt(A)/(3*sqrt(Lambda) - sqrt(m))
>>> sd.parametric_alpha()
C*exp(-m/(9*k))
>>> sd.verify_parametric_antiderivative(), sd.verify_dudley_telescoping()
(True, True)
>>> sd.dudley_constants()
(4, 12)
"""

from __future__ import annotations

import sympy as sp
from . import rademacher as srad

__all__ = [
    "alpha",
    "eps",
    "m",
    "c",
    "A",
    "Lam",
    "k",
    "C",
    "DUDLEY_ALPHA_COEF",
    "DUDLEY_INTEGRAL_COEF",
    "dudley_constants",
    "dudley_per_scale",
    "inverse_square_alpha_coef",
    "parametric_alpha_denominator",
    "inverse_square_objective",
    "inverse_square_alpha",
    "inverse_square_value",
    "parametric_antiderivative",
    "parametric_alpha",
    "parametric_objective",
    "verify_parametric_antiderivative",
    "verify_dudley_telescoping",
    "verify_inverse_square_convex",
    "verify_sqrt_split",
    "log_m_rate",
    "capacity_derivation",
    "verify_capacity_bound",
]

alpha, eps, m, c, A, Lam, k, C = sp.symbols("alpha epsilon m c A Lambda k C", positive=True)


def dudley_per_scale() -> sp.Expr:
    """The per-scale coefficient ``6`` of the chaining sum ``R_S <= eps_N + sum_j 6 eps_j sqrt(log N_j / m)``:
    a link ``f_j - f_{j-1}`` has ``rho <= eps_j + eps_{j-1} = 3 eps_j`` (triangle inequality at ``eps_j = c 2^-j``)
    and Massart's lemma (:func:`genbound.symbolic.rademacher.massart_bound`) over at most ``N_j^2`` links gives
    ``3 eps_j sqrt(2 log N_j^2 / m) = 6 eps_j sqrt(log N_j / m)``.

    >>> dudley_per_scale()
    6
    """

    j = sp.Symbol("j", integer=True, nonnegative=True)
    e = lambda i: c * sp.Integer(2) ** (-i)  # noqa: E731
    L = sp.Symbol("L", positive=True)  # log N_j
    link = sp.simplify((e(j) + e(j - 1)) / e(j))  # = 3
    massart = srad.massart_bound().subs({srad.r: link * e(j), srad.N: sp.exp(2 * L)})
    return sp.simplify(massart / (e(j) * sp.sqrt(L)))  # = 6: link * sqrt(2 * 2)


def dudley_constants() -> tuple[sp.Expr, sp.Expr]:
    """Derive the constants ``(4, 12)`` of :prf:ref:`thm-dudley` from the chaining proof.

    Scales ``eps_j = c 2^{-j}``. A link ``f_j - f_{j-1}`` has ``rho <= eps_j + eps_{j-1}``, which sympy
    rewrites as ``3 eps_j``; Massart's lemma (:func:`genbound.symbolic.rademacher.massart_bound`, itself
    a sympy minimisation) over at most ``N_j^2`` links gives ``link sqrt(2 log N_j^2) / sqrt(m)``; the
    integral coefficient is the ``K`` that solves ``(that coefficient) eps_j = K (eps_j - eps_{j+1})``
    (a Riemann sum of the non-increasing ``sqrt(log N)``). The remainder ``eps_N`` is bounded by
    maximising ``eps_N = 2 eps_{N+1}`` over ``eps_{N+1}`` in ``(alpha, 2 alpha]``: ``4 alpha``.
    """
    j = sp.Symbol("j", integer=True, nonnegative=True)
    e = lambda i: c * sp.Integer(2) ** (-i)  # noqa: E731
    per_scale = dudley_per_scale()
    K = sp.Symbol("K", positive=True)
    integral_coef = sp.solve(sp.Eq(per_scale * e(j), K * (e(j) - e(j + 1))), K)[0]
    x = sp.Symbol("x", positive=True)  # eps_{N+1}
    remainder = sp.maximum(2 * x, x, sp.Interval.Lopen(alpha, 2 * alpha))
    return sp.simplify(remainder / alpha), sp.simplify(integral_coef)


#: The constants of the theorem, derived by :func:`dudley_constants` (a test compares them with
#: :data:`genbound.rademacher.DUDLEY_ALPHA_COEF` and ``DUDLEY_INTEGRAL_COEF``).
DUDLEY_ALPHA_COEF, DUDLEY_INTEGRAL_COEF = dudley_constants()


def verify_dudley_telescoping() -> bool:
    """The telescoping identity of the proof: ``sum_{j=1}^{N} 12 (eps_j - eps_{j+1}) = 12 (eps_1 - eps_{N+1})``
    (a finite sum that sympy evaluates), so the per-scale terms add up to ``12`` times an integral."""
    j, Nn = sp.symbols("j N", integer=True, positive=True)
    e = lambda i: c * sp.Integer(2) ** (-i)  # noqa: E731
    total = sp.summation(DUDLEY_INTEGRAL_COEF * (e(j) - e(j + 1)), (j, 1, Nn))
    return sp.simplify(total - DUDLEY_INTEGRAL_COEF * (e(1) - e(Nn + 1))) == 0


def verify_sqrt_split() -> bool:
    """``(sqrt(A)/eps + sqrt(Lambda))^2 - (A/eps^2 + Lambda) = 2 sqrt(A Lambda)/eps >= 0``."""
    diff = sp.expand((sp.sqrt(A) / eps + sp.sqrt(Lam)) ** 2 - (A / eps**2 + Lam))
    return (
        sp.simplify(diff - 2 * sp.sqrt(A) * sp.sqrt(Lam) / eps) == 0
        and diff.is_nonnegative is not False
    )


def inverse_square_objective():
    """``4 alpha + 12/sqrt(m) (sqrt(A) log(c/(2 alpha)) + sqrt(Lambda) (c/2 - alpha))``: the Dudley
    objective with the relaxed integrand ``sqrt(A)/eps + sqrt(Lambda)``, integrated in closed form."""
    integrand = sp.sqrt(A) / eps + sp.sqrt(Lam)
    integral = sp.integrate(integrand, (eps, alpha, c / 2))
    return DUDLEY_ALPHA_COEF * alpha + DUDLEY_INTEGRAL_COEF / sp.sqrt(m) * sp.expand_log(
        integral, force=True
    )


def inverse_square_alpha():
    """The stationary point of :func:`inverse_square_objective` (a minimum: the objective is convex)."""
    sol = sp.solve(sp.diff(inverse_square_objective(), alpha), alpha)
    return sp.simplify(sol[0])


def verify_inverse_square_convex() -> bool:
    """The second derivative of the objective in ``alpha`` is ``12 sqrt(A)/(sqrt(m) alpha^2) > 0``."""
    d2 = sp.simplify(sp.diff(inverse_square_objective(), alpha, 2))
    return sp.simplify(d2 - 12 * sp.sqrt(A) / (sp.sqrt(m) * alpha**2)) == 0


def inverse_square_alpha_coef():
    """The ``3`` of ``alpha* = 3 sqrt(A) / (sqrt(m) - 3 sqrt(Lambda))``: read off the derived minimiser as
    ``alpha* sqrt(m) / sqrt(A)`` at ``Lambda = 0``.

    >>> inverse_square_alpha_coef()
    3
    """
    return sp.simplify(inverse_square_alpha().subs(Lam, 0) * sp.sqrt(m) / sp.sqrt(A))


def inverse_square_value():
    """The objective at the optimal ``alpha`` (valid when that ``alpha`` lies in ``(0, c/2]``)."""
    return sp.simplify(inverse_square_objective().subs(alpha, inverse_square_alpha()))


def log_m_rate():
    """The leading term of the optimum as ``m -> oo`` with ``Lambda = 0``:
    ``12 sqrt(A) log(sqrt(m)) / sqrt(m)``, i.e. ``6 sqrt(A) log(m)/sqrt(m)``: the ``log m``."""
    val = inverse_square_value().subs(Lam, 0)
    return sp.simplify(sp.limit(val / (sp.log(m) / sp.sqrt(m)), m, sp.oo))


def parametric_antiderivative():
    """``F(eps) = eps sqrt(log(C/eps)) + (C sqrt(pi)/2) erfc(sqrt(log(C/eps)))`` with
    ``F'(eps) = sqrt(log(C/eps))`` for ``0 < eps < C``."""
    ell = sp.log(C / eps)
    return eps * sp.sqrt(ell) + C * sp.sqrt(sp.pi) / 2 * sp.erfc(sp.sqrt(ell))


def verify_parametric_antiderivative() -> bool:
    """Differentiate :func:`parametric_antiderivative` and compare with the integrand (``eps = C e^{-u}``)."""
    u = sp.Symbol("u", positive=True)
    dF = sp.diff(parametric_antiderivative(), eps).subs(eps, C * sp.exp(-u))
    return (
        sp.simplify(
            sp.expand_log(dF - sp.sqrt(sp.log(C / eps)).subs(eps, C * sp.exp(-u)), force=True)
        )
        == 0
    )


def parametric_objective(upper=None):
    """``4 alpha + 12 sqrt(k)/sqrt(m) (F(upper) - F(alpha))`` with ``upper = min(c/2, C)``."""
    F = parametric_antiderivative()
    upper = sp.Min(c / 2, C) if upper is None else upper
    return DUDLEY_ALPHA_COEF * alpha + DUDLEY_INTEGRAL_COEF * sp.sqrt(k) / sp.sqrt(m) * (
        F.subs(eps, upper) - F.subs(eps, alpha)
    )


def parametric_alpha_denominator():
    """The ``9`` of ``alpha* = C exp(-m / (9 k))``, read off the derived minimiser: ``-m / (k log(alpha*/C))``.

    >>> parametric_alpha_denominator()
    9
    """
    return sp.simplify(-m / (k * sp.expand_log(sp.log(parametric_alpha() / C), force=True)))


def parametric_alpha():
    """Solve ``4 = 12/sqrt(m) sqrt(k log(C/alpha))`` for ``alpha``: ``C exp(-m/(9k))``."""
    eq = sp.Eq(
        DUDLEY_ALPHA_COEF, DUDLEY_INTEGRAL_COEF / sp.sqrt(m) * sp.sqrt(k * sp.log(C / alpha))
    )
    sol = sp.solve(eq, alpha)
    return sp.simplify(sol[0])


def capacity_derivation():
    """The ``m``-free capacity of a class with ``log N(eps) <= A/eps^2 + Lambda`` (:prf:ref:`cor-tt-capacity`).

    Premises: the objective :func:`inverse_square_objective` and its minimiser at ``Lambda = 0``,
    ``alpha_0 = 3 sqrt(A)/sqrt(m)`` (:func:`inverse_square_alpha`). Steps: (1) drop the ``- alpha`` of the
    ``Lambda`` term (the objective only grows); (2) evaluate at ``alpha_0`` (any ``alpha`` in ``(0, c/2]``
    bounds the infimum) and multiply by ``sqrt(m)``: ``E(m)``; (3) ``m_0`` is the sample size at which
    ``alpha_0 = c/2``; the capacity is ``E(m_0)`` and the log factor ``1 + log sqrt(m/m_0)``.
    Returns ``(capacity, log_factor, E)``.

    >>> cap, ell, _ = capacity_derivation()
    >>> cap
    12*sqrt(A) + 6*sqrt(Lambda)*c
    >>> sp.simplify(sp.expand_log(ell - 1 - sp.log(c * sp.sqrt(m) / (6 * sp.sqrt(A))), force=True))
    0
    """
    a0 = sp.simplify(inverse_square_alpha().subs(Lam, 0))
    relaxed = inverse_square_objective() + DUDLEY_INTEGRAL_COEF / sp.sqrt(m) * sp.sqrt(Lam) * alpha
    E = sp.expand(sp.simplify(sp.sqrt(m) * relaxed.subs(alpha, a0)))
    m0 = sp.solve(sp.Eq(a0, c / 2), m)[0]
    capacity = sp.expand(sp.simplify(E.subs(m, m0)))
    log_factor = 1 + sp.log(sp.sqrt(m / m0))
    return capacity, sp.expand_log(sp.simplify(log_factor), force=True), E


def verify_capacity_bound() -> bool:
    """``capacity * log_factor - E(m) = 6 c sqrt(Lambda) log sqrt(m/m_0)``, nonnegative for ``m >= m_0``
    (where ``alpha_0 <= c/2``); for ``m < m_0`` the log factor is taken as 1 and the cap ``4 (c/2)`` is below
    ``12 sqrt(A)/sqrt(m)``. Also: with ``Lambda = 0`` the bound is attained (``E`` equals the optimum)."""
    cap, ell, E = capacity_derivation()
    m0 = 36 * A / c**2
    gap = sp.simplify(sp.expand_log(cap * ell - E, force=True))
    want = sp.expand_log(6 * c * sp.sqrt(Lam) * sp.log(sp.sqrt(m / m0)), force=True)
    exact = sp.simplify(
        sp.expand_log(E.subs(Lam, 0) - sp.sqrt(m) * inverse_square_value().subs(Lam, 0), force=True)
    )
    below = sp.simplify(4 * c / 2 - 12 * sp.sqrt(A) / sp.sqrt(m)).subs(m, m0 / 4)
    return sp.simplify(gap - want) == 0 and exact == 0 and bool(below < 0)
