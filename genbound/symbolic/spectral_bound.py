"""Sympy derivations of the constants used by :mod:`genbound.bounds.sakai_imaizumi` (no torch here).

Book: :ref:`ch-sakai-trained`. Each function returns a sympy expression or number, each ``verify_*``
returns ``True`` when sympy proves the step. ``tests/symbolic/test_symbolic_spectral_bound.py`` evaluates these and
asserts that the numeric code uses exactly the same constants:

* ``L_phi = 1.13``: ``sup_x GELU'(x) = Phi(sqrt 2) + sqrt 2 phi(sqrt 2) = 1.12890...``, rounded up to two
  decimals (:func:`gelu_slope_sup`, :func:`L_phi_two_decimals`).
* The exponents ``1/(p+2)``, ``p/(p+2)``, ``(p+1)/(p+2)`` of ``M``, ``S``, ``N`` in the per-matrix term
  ``T(p)``: the minimum over the threshold ``tau`` of ``sqrt(N M tau^-p) + S N tau`` is homogeneous
  with exactly these degrees (:func:`term_exponents`).
* The grid ``{0, 1/m, ..., 2}`` with ``m = ceil(L + ln max(N, 2))`` (:func:`grid_m`).
* The ``4`` in ``1 + 4 C2(QK)`` and the ``2`` in ``gamma(QK)``: the softmax constant 2 times the two
  occurrences of ``X`` in the scores, and the softmax constant alone (taken from the chapter module
  :mod:`genbound.symbolic.sakai_imaizumi`: :func:`attention_qk_factor`, :func:`gamma_qk_factor`).
* The Edelman-style exponents ``2/3`` and ``3/2``: allocating a covering radius over matrices with
  entropies ``a_i / eps_i^2`` costs ``(sum_i a_i^{1/3})^3 / eps^2`` (:func:`verify_edelman_allocation`).

>>> from genbound.symbolic import spectral_bound as sb
>>> round(float(sb.gelu_slope_sup()), 6), sb.L_phi_two_decimals()
(1.128904, 113/100)
>>> sb.term_exponents()
{'M': 1/(p + 2), 'S': p/(p + 2), 'N': (p + 1)/(p + 2)}
>>> sb.grid_m(12, 768), sb.attention_qk_factor(), sb.gamma_qk_factor()
(19, 4, 2)
"""

from __future__ import annotations

import sympy as sp
from . import sakai_imaizumi as si

__all__ = [
    "x",
    "p",
    "tau",
    "M",
    "S",
    "N",
    "gelu",
    "gelu_slope",
    "gelu_slope_sup",
    "verify_gelu_slope_sup",
    "L_phi_two_decimals",
    "threshold_min_value",
    "term_exponents",
    "log_term",
    "verify_term_exponents",
    "grid_m",
    "grid_points",
    "attention_qk_factor",
    "gamma_qk_factor",
    "edelman_allocation",
    "verify_edelman_allocation",
    "EDELMAN_INNER_EXPONENT",
    "EDELMAN_OUTER_EXPONENT",
]

x = sp.Symbol("x", real=True)
p = sp.Symbol("p", positive=True)
tau = sp.Symbol("tau", positive=True)
M, S, N = sp.symbols("M S N", positive=True)


# ------------------------------------------------------------------------------------ GELU slope


def _Phi(z):
    return (1 + sp.erf(z / sp.sqrt(2))) / 2


def _phi(z):
    return sp.exp(-(z**2) / 2) / sp.sqrt(2 * sp.pi)


def gelu():
    """``GELU(x) = x Phi(x)`` (the exact, erf-based GELU of BERT)."""
    return x * _Phi(x)


def gelu_slope():
    """``GELU'(x)``, simplified to ``Phi(x) + x phi(x)``."""
    return sp.simplify(sp.diff(gelu(), x))


def gelu_slope_sup():
    """``sup_x GELU'(x) = Phi(sqrt 2) + sqrt 2 phi(sqrt 2)`` (exact expression), see :func:`verify_gelu_slope_sup`."""
    return sp.simplify(gelu_slope().subs(x, sp.sqrt(2)))


def verify_gelu_slope_sup() -> bool:
    """``GELU''(x) = phi(x) (2 - x^2)``: positive on ``(-sqrt 2, sqrt 2)``, negative outside, so ``GELU'``
    rises to its maximum at ``x = sqrt 2`` and falls to its limits ``0`` (``x -> -inf``) and ``1``
    (``x -> +inf``), both below the value there; the minimum is at ``-sqrt 2``."""
    d2 = sp.diff(gelu(), x, 2)
    ok_form = sp.simplify(d2 - _phi(x) * (2 - x**2)) == 0
    crit = set(sp.solve(sp.Eq(2 - x**2, 0), x)) == {sp.sqrt(2), -sp.sqrt(2)}
    top = gelu_slope_sup()
    lim_hi = sp.limit(gelu_slope(), x, sp.oo)
    lim_lo = sp.limit(gelu_slope(), x, -sp.oo)
    ok_limits = lim_hi == 1 and lim_lo == 0 and bool(top > lim_hi)
    return bool(ok_form and crit and ok_limits)


def L_phi_two_decimals():
    """``ceil(100 * sup GELU') / 100 = 113/100``: the authors' ``L_phi = 1.13``."""
    return sp.ceiling(100 * gelu_slope_sup()) / 100


# ------------------------------------------------------------------------------------ exponents of T(p)


def threshold_min_value():
    """``min_tau sqrt(N M tau^-p) + S N tau`` in closed form (sympy solves the stationarity equation)."""
    f = sp.sqrt(N * M * tau ** (-p)) + S * N * tau
    crit = sp.solve(sp.Eq(sp.diff(f, tau), 0), tau)
    if len(crit) != 1:  # pragma: no cover - sympy finds the single positive root
        raise RuntimeError(f"expected one critical point, got {crit}")
    return sp.simplify(f.subs(tau, crit[0]))


def term_exponents() -> dict:
    """Degrees of homogeneity of :func:`threshold_min_value` in ``M``, ``S`` and ``N``.

    For ``Q`` in ``{M, S, N}`` the degree is ``d log value / d log Q`` (sympy: ``Q dvalue/dQ / value``).
    Result: ``{'M': 1/(p+2), 'S': p/(p+2), 'N': (p+1)/(p+2)}``, the exponents of ``T(p)``.
    """
    v = threshold_min_value()
    return {str(q): sp.factor(sp.simplify(q * sp.diff(v, q) / v)) for q in (M, S, N)}


def log_term():
    """``log T(p) = [log M + p log S + (p + 1) log N] / (p + 2)`` assembled from :func:`term_exponents`."""
    e = term_exponents()
    return e["M"] * sp.log(M) + e["S"] * sp.log(S) + e["N"] * sp.log(N)


def verify_term_exponents() -> bool:
    """The exponents are ``1/(p+2)``, ``p/(p+2)``, ``(p+1)/(p+2)``, and at ``p = 0`` the term is
    ``sqrt(M N)`` (``M`` = rank: parameter counting)."""
    e = term_exponents()
    ok = (
        sp.simplify(e["M"] - 1 / (p + 2)) == 0
        and sp.simplify(e["S"] - p / (p + 2)) == 0
        and sp.simplify(e["N"] - (p + 1) / (p + 2)) == 0
    )
    at0 = sp.simplify(sp.exp(log_term()).subs(p, 0) - sp.sqrt(M * N)) == 0
    return bool(ok and at0)


# ------------------------------------------------------------------------------------ the grid


def grid_m(L, hidden):
    """``m = ceil(L + ln max(N, 2))`` as an exact sympy integer."""
    return sp.ceiling(sp.Integer(L) + sp.log(sp.Max(sp.Integer(hidden), 2)))


def grid_points(L, hidden, m=None) -> list:
    """The grid ``{0, 1/m, ..., 2}`` as exact rationals (``2m + 1`` points)."""
    m = grid_m(L, hidden) if m is None else sp.Integer(m)
    return [sp.Rational(i, m) for i in range(2 * int(m) + 1)]


# ------------------------------------------------------------------------------------ Lipschitz factors


def attention_qk_factor():
    """The coefficient ``4`` of ``C_V C_QK`` in a head's Lipschitz factor ``C_V (1 + 4 C_QK)``.

    Taken from the chapter's derivation :func:`genbound.symbolic.sakai_imaizumi.head_lipschitz`
    (softmax constant 2 times the two occurrences of ``X`` in the scores).
    """

    return sp.expand(si.head_lipschitz()).coeff(si.C_V * si.C_QK)


def gamma_qk_factor():
    """The factor ``2`` in ``gamma(QK) = 2 C2(V) C2(M_out) C2(M_in)`` (the softmax constant)."""

    return sp.simplify(si.gamma_authors("QK") / (si.C_V * si.C_out * si.C_in))


# ------------------------------------------------------------------------------------ Edelman exponents

#: ``xi`` sums ``(sensitivity * ||W||_{2,1})^{2/3}``; the proxy is ``(1 + sum alpha^{2/3} xi)^{3/2}``.
EDELMAN_INNER_EXPONENT = sp.Rational(2, 3)
EDELMAN_OUTER_EXPONENT = sp.Rational(3, 2)


def edelman_allocation(n: int = 3):
    """Minimise ``sum_i a_i / eps_i^2`` subject to ``sum_i eps_i = eps``: returns the minimiser
    ``eps_i = eps a_i^{1/3} / sum_j a_j^{1/3}`` and the minimum ``(sum_i a_i^{1/3})^3 / eps^2``."""
    a = sp.symbols(f"a0:{n}", positive=True)
    e = sp.Symbol("epsilon", positive=True)
    s = sum(ai ** sp.Rational(1, 3) for ai in a)
    eps_i = [e * ai ** sp.Rational(1, 3) / s for ai in a]
    return a, e, eps_i, s**3 / e**2


def verify_edelman_allocation(n: int = 3) -> bool:
    """The allocation is feasible, stationary (equal marginal costs ``2 a_i / eps_i^3``: Lagrange) and
    attains ``(sum a_i^{1/3})^3 / eps^2``; with ``a_i = (c_i ||W_i||)^2`` the square root of the minimum
    is ``(sum_i (c_i ||W_i||)^{2/3})^{3/2}``: the exponents 2/3 and 3/2."""
    a, e, eps_i, best = edelman_allocation(n)
    feasible = sp.simplify(sum(eps_i) - e) == 0
    marg = [sp.simplify(2 * ai / ei**3) for ai, ei in zip(a, eps_i)]
    stationary = all(sp.simplify(mg - marg[0]) == 0 for mg in marg[1:])
    value = sp.simplify(sum(ai / ei**2 for ai, ei in zip(a, eps_i)) - best) == 0
    c = sp.symbols(f"c0:{n}", positive=True)
    root = sp.sqrt(best.subs({ai: ci**2 for ai, ci in zip(a, c)}) * e**2)
    target = sum(ci**EDELMAN_INNER_EXPONENT for ci in c) ** EDELMAN_OUTER_EXPONENT
    exps = sp.simplify(root - target) == 0
    # convexity of each a_i / eps_i^2 in eps_i makes the stationary point the minimum
    convex = all(sp.simplify(sp.diff(ai / e**2, e, 2)).is_positive for ai in a)
    return bool(feasible and stationary and value and exps and convex)
