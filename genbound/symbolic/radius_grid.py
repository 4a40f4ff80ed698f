"""Sympy behind the union bound over a grid of radii (:prf:ref:`thm-radius-union`).

The theorems of Part II hold for radii fixed before the sample is drawn. To evaluate them at the
norms of a *trained* network, every radius is rounded up to the grid ``{base^i : i in Z}`` and the
confidence ``delta`` is shared among the grid points with the prior ``pi(i) = c / ((|i|+1)(|i|+2))``.
:func:`prior_normaliser` derives the ``c`` that makes ``pi`` a probability on ``Z`` by summing the series,
and :func:`verify_prior_sums_to_one` checks that the shares ``delta * prod_j pi(i_j)`` of all grid
tuples add up to ``delta``.

>>> prior_normaliser()
2/3
>>> verify_prior_sums_to_one(), verify_rounding_factor()
(True, True)
"""

from __future__ import annotations

import sympy as sp

__all__ = [
    "prior_normaliser",
    "prior_weight",
    "verify_prior_sums_to_one",
    "verify_rounding_factor",
    "rounding_range",
    "confidence_cost",
    "union_failure",
    "grid_confidence",
]

_i = sp.Symbol("i", integer=True, nonnegative=True)


def prior_normaliser() -> sp.Expr:
    """``c`` with ``sum_{i in Z} c / ((|i|+1)(|i|+2)) = 1``, derived: ``1 / (term at 0 + 2 sum_{i>=1})``.

    The series telescopes (``1/((i+1)(i+2)) = 1/(i+1) - 1/(i+2)``); sympy sums it in closed form.
    """
    tail = sp.summation(1 / ((_i + 1) * (_i + 2)), (_i, 1, sp.oo))  # i >= 1, one side
    total = sp.Rational(1, 2) + 2 * tail  # i = 0 plus both sides
    return sp.nsimplify(1 / total)


def prior_weight(i: int) -> sp.Expr:
    """``pi(i) = c / ((|i|+1)(|i|+2))`` as an exact rational."""
    a = abs(int(i))
    return prior_normaliser() / ((a + 1) * (a + 2))


def verify_prior_sums_to_one() -> bool:
    """The prior sums to exactly 1 over ``Z`` (so that the union over every grid tuple costs ``delta``:
    a product of priors over ``k`` radii sums to ``1^k``)."""
    c = prior_normaliser()
    s = c * (sp.Rational(1, 2) + 2 * sp.summation(1 / ((_i + 1) * (_i + 2)), (_i, 1, sp.oo)))
    return bool(sp.simplify(s - 1) == 0)


def verify_rounding_factor() -> bool:
    """Rounding ``N > 0`` up to ``base^ceil(log_base N)`` costs less than a factor ``base``: with
    ``N = base^(k - f)``, ``k`` an integer and ``0 <= f < 1``, the grid point ``base^k`` divided by
    ``N`` is ``base^f``, which lies in ``[1, base)``; sympy checks the identity and the endpoint values."""
    base, f, k = sp.symbols("base f k", positive=True)
    ratio = sp.simplify(base**k / base ** (k - f))
    return bool(
        sp.simplify(ratio - base**f) == 0
        and ratio.subs(f, 0) == 1
        and sp.limit(ratio, f, 1, dir="-") == base
    )


def rounding_range(base=2):
    """``(inf, sup)`` of ``grid point / N`` over all ``N > 0``, derived: with ``N = base^(k - f)``
    (``k = ceil(log_base N)``, ``0 <= f < 1``) the ratio is ``base^f``, increasing in ``f``; its value at
    ``f = 0`` is attained and its limit at ``f -> 1`` is not. So ``N <= grid point < sup * N``.

    >>> rounding_range()
    (1, 2)
    """
    f = sp.Symbol("f", nonnegative=True)
    b = sp.sympify(base)
    ratio = sp.simplify(b ** sp.Symbol("k") / b ** (sp.Symbol("k") - f))
    assert sp.simplify(sp.diff(ratio, f) - ratio * sp.log(b)) == 0  # increasing for base > 1
    return ratio.subs(f, 0), sp.limit(ratio, f, 1, dir="-")


def confidence_cost(i) -> sp.Expr:
    """``log(1/pi(i))``: the nats radius index ``i`` adds to ``log(1/delta)``, from
    :func:`prior_normaliser`: ``log((|i|+1)(|i|+2)/c)``; at ``i = 0`` it is ``log 3``.

    >>> confidence_cost(0), confidence_cost(1)
    (log(3), log(9))
    """
    a = sp.Abs(sp.sympify(i))
    return sp.log(sp.nsimplify((a + 1) * (a + 2) / prior_normaliser()))


def union_failure(k: int) -> sp.Expr:
    """The union bound over every grid tuple of ``k`` radii, summed by sympy: ``sum_{i in Z^k} delta_i``
    with ``delta_i = delta prod_j pi(i_j)`` factorises into ``delta (sum_{i in Z} pi(i))^k``.

    >>> union_failure(3)
    delta
    """
    delta = sp.Symbol("delta", positive=True)
    c = prior_normaliser()
    one = c * (
        sp.Rational(1, 2) + 2 * sp.summation(1 / ((_i + 1) * (_i + 2)), (_i, 1, sp.oo))
    )  # i = 0, then both sides
    return sp.simplify(delta * one**k)


def grid_confidence(delta, indices) -> sp.Expr:
    """``delta'`` at a grid tuple: ``log(1/delta') = log(1/delta) + sum_j`` :func:`confidence_cost`."""
    return sp.exp(-(sp.log(1 / sp.sympify(delta)) + sum(confidence_cost(i) for i in indices)))
