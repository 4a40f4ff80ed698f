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
"""

from __future__ import annotations

import sympy as sp

__all__ = ["alpha", "eps", "m", "c", "A", "Lam", "k", "C", "DUDLEY_ALPHA_COEF", "DUDLEY_INTEGRAL_COEF",
           "inverse_square_objective", "inverse_square_alpha", "inverse_square_value",
           "parametric_antiderivative", "parametric_alpha", "parametric_objective",
           "verify_parametric_antiderivative", "verify_dudley_telescoping", "verify_inverse_square_convex",
           "verify_sqrt_split", "log_m_rate"]

alpha, eps, m, c, A, Lam, k, C = sp.symbols("alpha epsilon m c A Lambda k C", positive=True)

#: The constants of the theorem, derived in :func:`verify_dudley_telescoping`.
DUDLEY_ALPHA_COEF = sp.Integer(4)
DUDLEY_INTEGRAL_COEF = sp.Integer(12)


def verify_dudley_telescoping() -> bool:
    """The constants 4 and 12 of the chaining proof.

    With scales ``eps_j = c 2^{-j}``, a link ``f_j - f_{j-1}`` has ``rho <= eps_j + eps_{j-1} = 3 eps_j``;
    Massart over at most ``N_j^2`` links gives ``3 eps_j sqrt(2 log N_j^2)/sqrt(m) = 6 eps_j sqrt(log N_j)
    / sqrt(m)``, and ``6 eps_j = 12 (eps_j - eps_{j+1})`` turns the sum into ``12/sqrt(m)`` times an
    integral. The remainder is ``eps_N <= 4 alpha`` when ``eps_{N+1} <= 2 alpha``.
    """
    j = sp.Symbol("j", integer=True, nonnegative=True)
    e = lambda i: c * sp.Integer(2) ** (-i)  # noqa: E731
    logn = sp.Symbol("L", positive=True)
    link = (e(j) + e(j - 1))
    ok_link = sp.simplify(link - 3 * e(j)) == 0
    massart = 3 * e(j) * sp.sqrt(2 * sp.log(sp.exp(logn) ** 2))
    ok_massart = sp.simplify(massart - 6 * e(j) * sp.sqrt(logn)) == 0
    ok_sum = sp.simplify(6 * e(j) - DUDLEY_INTEGRAL_COEF * (e(j) - e(j + 1))) == 0
    ok_rem = sp.simplify(e(j) - 2 * e(j + 1)) == 0 and DUDLEY_ALPHA_COEF == 2 * 2  # eps_N = 2 eps_{N+1} <= 4 alpha
    return bool(ok_link and ok_massart and ok_sum and ok_rem)


def verify_sqrt_split() -> bool:
    """``(sqrt(A)/eps + sqrt(Lambda))^2 - (A/eps^2 + Lambda) = 2 sqrt(A Lambda)/eps >= 0``."""
    diff = sp.expand((sp.sqrt(A) / eps + sp.sqrt(Lam)) ** 2 - (A / eps**2 + Lam))
    return sp.simplify(diff - 2 * sp.sqrt(A) * sp.sqrt(Lam) / eps) == 0 and diff.is_nonnegative is not False


def inverse_square_objective():
    """``4 alpha + 12/sqrt(m) (sqrt(A) log(c/(2 alpha)) + sqrt(Lambda) (c/2 - alpha))``: the Dudley
    objective with the relaxed integrand ``sqrt(A)/eps + sqrt(Lambda)``, integrated in closed form."""
    integrand = sp.sqrt(A) / eps + sp.sqrt(Lam)
    integral = sp.integrate(integrand, (eps, alpha, c / 2))
    return DUDLEY_ALPHA_COEF * alpha + DUDLEY_INTEGRAL_COEF / sp.sqrt(m) * sp.expand_log(integral, force=True)


def inverse_square_alpha():
    """The stationary point of :func:`inverse_square_objective` (a minimum: the objective is convex)."""
    sol = sp.solve(sp.diff(inverse_square_objective(), alpha), alpha)
    return sp.simplify(sol[0])


def verify_inverse_square_convex() -> bool:
    """The second derivative of the objective in ``alpha`` is ``12 sqrt(A)/(sqrt(m) alpha^2) > 0``."""
    d2 = sp.simplify(sp.diff(inverse_square_objective(), alpha, 2))
    return sp.simplify(d2 - 12 * sp.sqrt(A) / (sp.sqrt(m) * alpha**2)) == 0


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
    return sp.simplify(sp.expand_log(dF - sp.sqrt(sp.log(C / eps)).subs(eps, C * sp.exp(-u)), force=True)) == 0


def parametric_objective(upper=None):
    """``4 alpha + 12 sqrt(k)/sqrt(m) (F(upper) - F(alpha))`` with ``upper = min(c/2, C)``."""
    F = parametric_antiderivative()
    upper = sp.Min(c / 2, C) if upper is None else upper
    return DUDLEY_ALPHA_COEF * alpha + DUDLEY_INTEGRAL_COEF * sp.sqrt(k) / sp.sqrt(m) * (
        F.subs(eps, upper) - F.subs(eps, alpha))


def parametric_alpha():
    """Solve ``4 = 12/sqrt(m) sqrt(k log(C/alpha))`` for ``alpha``: ``C exp(-m/(9k))``."""
    eq = sp.Eq(DUDLEY_ALPHA_COEF, DUDLEY_INTEGRAL_COEF / sp.sqrt(m) * sp.sqrt(k * sp.log(C / alpha)))
    sol = sp.solve(eq, alpha)
    return sp.simplify(sol[0])
