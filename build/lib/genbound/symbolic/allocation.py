"""The allocation lemma (:prf:ref:`lem-allocation`) by Lagrange multipliers, in sympy.

Minimise ``sum_j c_j / eps_j^2`` subject to ``sum_j a_j eps_j = eps`` (costs ``c_j > 0``, Lipschitz
weights ``a_j > 0``). The optimum is ``eps_j = eps (c_j/a_j)^{1/3} / S`` with
``S = sum_i c_i^{1/3} a_i^{2/3}`` and value ``S^3 / eps^2``. With ``c_j = C_j^2`` and ``a_j = 1`` this is the
familiar ``(sum_j C_j^{2/3})^3 / eps^2`` of Bartlett, Foster and Telgarsky.

>>> from genbound.symbolic.allocation import verify_allocation, ALLOCATION_EXPONENTS
>>> verify_allocation(2), verify_allocation(3)
(True, True)
>>> ALLOCATION_EXPONENTS
(1/3, 2/3, 3)
"""

from __future__ import annotations

import sympy as sp

__all__ = [
    "ALLOCATION_EXPONENTS",
    "lagrange_solution",
    "optimal_value",
    "verify_allocation",
    "verify_second_order",
]

#: ``(exponent of c_j, exponent of a_j, outer power)`` in ``(sum_j c_j^{1/3} a_j^{2/3})^3``.
ALLOCATION_EXPONENTS = (sp.Rational(1, 3), sp.Rational(2, 3), sp.Integer(3))

eps = sp.Symbol("epsilon", positive=True)


def _symbols(n: int):
    cs = sp.symbols(f"c1:{n + 1}", positive=True)
    as_ = sp.symbols(f"a1:{n + 1}", positive=True)
    es = sp.symbols(f"e1:{n + 1}", positive=True)
    return cs, as_, es


def lagrange_solution(n: int):
    """Solve the stationarity conditions ``-2 c_j / e_j^3 + mu a_j = 0`` and the constraint for ``n``
    parts; returns ``(cs, as, {e_j: optimum})``."""
    cs, as_, es = _symbols(n)
    mu = sp.Symbol("mu", positive=True)
    # stationarity gives e_j = (2 c_j / (mu a_j))^{1/3}; the constraint fixes mu
    e_of_mu = [sp.cbrt(2 * cj / (mu * aj)) for cj, aj in zip(cs, as_)]
    x = sp.Symbol("x", positive=True)
    for cj, aj, ej in zip(cs, as_, e_of_mu):
        if sp.simplify(sp.diff(cj / x**2, x).subs(x, ej) + mu * aj) != 0:  # pragma: no cover
            raise ArithmeticError("stationarity condition not satisfied")
    mu_sol = sp.solve(sp.Eq(sum(aj * ej for aj, ej in zip(as_, e_of_mu)), eps), mu)
    sol = {ej: sp.simplify(ex.subs(mu, mu_sol[0])) for ej, ex in zip(es, e_of_mu)}
    return cs, as_, sol


def optimal_value(n: int):
    """``(sum_j c_j^{1/3} a_j^{2/3})^3 / eps^2`` for ``n`` parts (the claimed optimum)."""
    cs, as_, _ = _symbols(n)
    p, q, outer = ALLOCATION_EXPONENTS
    return sum(cj**p * aj**q for cj, aj in zip(cs, as_)) ** outer / eps**2


def verify_allocation(n: int = 3) -> bool:
    """The Lagrange point satisfies the constraint and attains :func:`optimal_value`."""
    cs, as_, sol = lagrange_solution(n)
    es = list(sol)
    constraint = sp.simplify(sum(aj * sol[ej] for aj, ej in zip(as_, es)) - eps) == 0
    value = sum(cj / sol[ej] ** 2 for cj, ej in zip(cs, es))
    ok_value = sp.simplify(sp.powsimp(value - optimal_value(n), force=True)) == 0
    return bool(constraint and ok_value)


def verify_second_order() -> bool:
    """``c/e^2`` is convex in ``e > 0`` (second derivative ``6 c / e^4``), so the Lagrange point is the
    global minimum over the (convex) constraint set."""
    cc, e = sp.symbols("c e", positive=True)
    d2 = sp.diff(cc / e**2, e, 2)
    return sp.simplify(d2 - 6 * cc / e**4) == 0 and d2.is_positive
