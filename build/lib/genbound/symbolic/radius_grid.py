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

__all__ = ["prior_normaliser", "prior_weight", "verify_prior_sums_to_one", "verify_rounding_factor"]

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
