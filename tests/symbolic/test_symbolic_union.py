"""The grid-rounding bound, the grid's confidence costs and the 3 of the confidence term, derived with
sympy from the union bound (genbound.symbolic.radius_grid, genbound.symbolic.rademacher), against the
numeric code."""

import math
import random

import sympy as sp

from genbound import rademacher as rad
from genbound.bounds import radius_grid as rg
from genbound.symbolic import rademacher as sr
from genbound.symbolic import radius_grid as srg


def test_rounding_range_is_the_numeric_grid():
    lo, hi = srg.rounding_range(rg.GRID_BASE)
    assert (lo, hi) == (1, 2) and float(hi) == rg.GRID_BASE
    rng = random.Random(0)
    for _ in range(2000):
        N = 10 ** rng.uniform(-8, 8)
        assert float(lo) * N <= rg.grid_point(N)[1] < float(hi) * N
    assert srg.rounding_range(3) == (1, 3)


def test_confidence_cost_is_the_prior():
    assert srg.confidence_cost(0) == sp.log(3)
    for i in range(-30, 31):
        assert math.isclose(math.exp(-float(srg.confidence_cost(i))), rg.prior(i), rel_tol=1e-14)


def test_union_delta_equals_the_derivation():
    rng = random.Random(1)
    for k in range(1, 6):
        idx = [rng.randint(-50, 50) for _ in range(k)]
        want = float(srg.grid_confidence(sp.Rational(1, 10), idx))
        assert math.isclose(rg.union_delta(0.1, idx), want, rel_tol=1e-13)


def test_union_over_all_tuples_is_delta():
    delta = sp.Symbol("delta", positive=True)
    for k in (1, 2, 3, 7):
        assert sp.simplify(srg.union_failure(k) - delta) == 0


def test_gap_three_from_the_union_bound():
    gap, failure = sr.gap_from_union()
    assert sp.simplify(failure - sr.delta) == 0
    assert sr.gap_coefficients() == (2, 3)
    assert (float(sr.gap_coefficients()[1]), float(sr.gap_coefficients()[0])) == (
        rad.GAP_CONFIDENCE_COEF,
        rad.GAP_RADEMACHER_COEF,
    )
    f = sp.lambdify((sr.R, sr.m, sr.delta, sr.b), gap, "math")
    rng = random.Random(2)
    for _ in range(100):
        R, m, d, b = (
            rng.uniform(0, 2),
            rng.randint(1, 10**7),
            rng.uniform(1e-8, 0.999),
            rng.uniform(0.1, 5),
        )
        assert math.isclose(
            rad.generalization_gap_bound(R, m=m, delta=d, b=b), f(R, m, d, b), rel_tol=1e-13
        )


def test_an_unequal_split_changes_the_constant():
    """The 3 is the equal split's: with delta_1 = delta/4, delta_2 = 3 delta/4 the gap differs."""
    gap, failure = sr.gap_from_union(sr.delta / 4, 3 * sr.delta / 4)
    assert sp.simplify(failure - sr.delta) == 0
    assert sp.simplify(gap - sr.generalization_gap()) != 0
