"""Part I: the numeric code uses exactly the sympy constants, behaves as the math says, rejects bad
input, and every Part I claim passes within its time budget."""

import math
import time

import pytest
import sympy as sp
import torch

import genbound as gb
from genbound import claims
from genbound import covering as cov
from genbound import rademacher as rad
from genbound.errors import GenboundError, NonFiniteError, ParameterError, ShapeError
from genbound.symbolic import allocation as sa
from genbound.symbolic import dudley as sd
from genbound.symbolic import rademacher as sr
from genbound.symbolic import softmax as ss

PART1 = [c.label for c in claims.all_claims() if c.chapter.startswith("book/part1/")]


# --------------------------------------------------------------------------------------------------
# numeric code == sympy derivation
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "R,m,delta,b", [(0.0, 10, 0.05, 1.0), (0.3, 1000, 0.01, 2.5), (1.2, 7, 0.5, 0.1)]
)
def test_generalization_gap_matches_sympy(R, m, delta, b):
    expr = sr.generalization_gap().subs({sr.R: R, sr.m: m, sr.delta: delta, sr.b: b})
    assert rad.generalization_gap_bound(R, m=m, delta=delta, b=b) == pytest.approx(
        float(expr), rel=1e-12
    )
    assert tuple(float(x) for x in sr.gap_coefficients()) == (
        rad.GAP_RADEMACHER_COEF,
        rad.GAP_CONFIDENCE_COEF,
    )


def test_dudley_constants_match_sympy():
    """4 and 12 derived from the chaining proof, 3 and 9 read off the derived minimisers, 2 of Chernoff."""
    assert sd.dudley_constants() == (4, 12)
    assert float(sd.DUDLEY_ALPHA_COEF) == rad.DUDLEY_ALPHA_COEF
    assert float(sd.DUDLEY_INTEGRAL_COEF) == rad.DUDLEY_INTEGRAL_COEF
    assert float(sd.inverse_square_alpha_coef()) == rad.INVERSE_SQUARE_ALPHA_COEF
    assert float(sd.parametric_alpha_denominator()) == rad.PARAMETRIC_ALPHA_DENOM
    assert float(sr.chernoff_exponent_coef()) == rad.MCDIARMID_EXPONENT_COEF
    assert sd.verify_dudley_telescoping()


def test_closed_form_alphas_are_the_minimisers():
    """The closed-form alpha of rad.dudley_inverse_square is where the relaxed objective is smallest."""
    from genbound.claims.part1_covering import _relaxed_objective

    for A, L, m, c in [(1.0, 0.0, 10_000, 1.0), (0.3, 2.0, 5_000, 3.0), (0.01, 0.5, 100_000, 0.5)]:
        r = rad.dudley_inverse_square(A, L, m=m, diameter=c)
        for f in (0.9, 1.1):
            alt = float(
                _relaxed_objective(torch.tensor(r.alpha * f, dtype=torch.float64), A, L, m, c)
            )
            assert alt > r.value


@pytest.mark.parametrize(
    "A,L,m,c",
    [
        (1.0, 0.0, 10_000, 1.0),
        (0.3, 2.0, 5_000, 3.0),
        (4.0, 0.5, 200, 10.0),
        (0.01, 0.0, 1_000_000, 0.5),
    ],
)
def test_inverse_square_alpha_and_value_match_sympy(A, L, m, c):
    subs = {sd.A: A, sd.Lam: L, sd.m: m, sd.c: c}
    a_star = float(sd.inverse_square_alpha().subs(subs))
    r = rad.dudley_inverse_square(A, L, m=m, diameter=c)
    assert a_star < c / 2  # the interior case for these inputs
    assert r.alpha == pytest.approx(a_star, rel=1e-12)
    assert r.value == pytest.approx(
        float(sd.inverse_square_objective().subs(subs).subs(sd.alpha, a_star)), rel=1e-12
    )


def test_inverse_square_clipped_and_degenerate_cases():
    # sqrt(m) <= 3 sqrt(Lambda): the objective decreases on (0, c/2], so alpha = c/2 and the bound is 2c
    r = rad.dudley_inverse_square(1.0, 100.0, m=100, diameter=2.0)
    assert r.alpha == 1.0 and r.value == pytest.approx(4.0)
    r0 = rad.dudley_inverse_square(0.0, 1.0, m=100, diameter=2.0)
    assert r0.alpha == 0.0 and r0.value == pytest.approx(12 / 10 * 1.0)


@pytest.mark.parametrize(
    "k,C,m,c", [(1.0, 1.0, 9, 2.0), (10.0, 0.5, 1000, 3.0), (3.0, 5.0, 100, 1.0)]
)
def test_parametric_alpha_and_value_match_sympy(k, C, m, c):
    subs = {sd.k: k, sd.C: C, sd.m: m, sd.c: c}
    a_star = float(sd.parametric_alpha().subs(subs))
    r = rad.dudley_parametric(k, C, m=m, diameter=c)
    assert r.alpha == pytest.approx(a_star, rel=1e-12)
    assert r.value == pytest.approx(
        float(sd.parametric_objective().subs(subs).subs(sd.alpha, a_star).evalf(30)), rel=1e-12
    )


@pytest.mark.parametrize("e,C", [(0.1, 1.0), (0.5, 2.0), (1e-6, 3.0)])
def test_parametric_antiderivative_matches_sympy(e, C):
    F = sd.parametric_antiderivative().subs({sd.eps: e, sd.C: C})
    assert rad._parametric_antiderivative(e, C) == pytest.approx(float(F.evalf(30)), rel=1e-12)


def test_massart_and_l1_constants_match_sympy():
    A = torch.tensor([[3.0, 4.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 2.0]], dtype=torch.float64)
    expr = sr.massart_bound().subs({sr.r: 5.0, sr.N: 3}) / 3
    assert float(rad.massart_bound(A)) == pytest.approx(float(expr), rel=1e-12)
    X = torch.tensor([[1.0, 2.0], [3.0, -1.0], [0.5, 0.0]], dtype=torch.float64)
    col = float(torch.linalg.vector_norm(X, dim=0).max())
    expr = sr.l1_linear_bound().subs({sr.B: 2.0, sr.colnorm: col, sr.d: 2, sr.m: 3})
    assert float(rad.l1_linear_massart_bound(X, radius=2.0)) == pytest.approx(
        float(expr), rel=1e-12
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_allocation_matches_sympy(seed):
    g = torch.Generator().manual_seed(seed)
    c = (torch.rand(3, generator=g, dtype=torch.float64) * 5 + 0.1).tolist()
    a = (torch.rand(3, generator=g, dtype=torch.float64) * 2 + 0.1).tolist()
    eps = 0.7
    assert tuple(float(x) for x in sa.ALLOCATION_EXPONENTS) == (
        cov.ALLOCATION_COST_EXPONENT,
        cov.ALLOCATION_WEIGHT_EXPONENT,
        cov.ALLOCATION_OUTER_POWER,
    )
    cs, as_, sol = sa.lagrange_solution(3)
    subs = {**dict(zip(cs, c)), **dict(zip(as_, a)), sa.eps: eps}
    e_j, value = cov.allocate_scales(c, eps, weights=a)
    assert value == pytest.approx(float(sa.optimal_value(3).subs(subs)), rel=1e-12)
    for ej, expr in zip(e_j.tolist(), sol.values()):
        assert ej == pytest.approx(float(expr.subs(subs)), rel=1e-12)
    assert float((torch.tensor(a, dtype=torch.float64) * e_j).sum()) == pytest.approx(
        eps, rel=1e-12
    )


def test_allocation_beats_a_numerical_minimiser():
    from scipy.optimize import minimize

    c, a, eps = [1.0, 4.0, 0.5], [2.0, 1.0, 0.3], 1.3
    _, value = cov.allocate_scales(c, eps, weights=a)

    def obj(u):
        e = eps * torch.softmax(torch.tensor(u), 0).numpy() / torch.tensor(a).numpy()
        return sum(ci / ei**2 for ci, ei in zip(c, e))

    res = minimize(obj, [0.0, 0.0, 0.0], method="BFGS", options={"gtol": 1e-10})
    assert value == pytest.approx(res.fun, rel=1e-8)
    assert value <= res.fun * (1 + 1e-12)


@pytest.mark.parametrize(
    "B,a,eps,n", [(1.0, 1.0, 0.5, 10), (2.0, 0.3, 0.1, 1000), (0.7, 1.5, 0.9, 3)]
)
def test_sup_norm_atoms_match_sympy(B, a, eps, n):
    n_, a_, e_ = sp.symbols("n a epsilon", positive=True)
    K_star = float(sr.sup_norm_atoms().subs({sr.B: B, n_: n, a_: a, e_: eps}))
    d = 7
    assert cov.sup_norm_maurey_log_cover(B, a, eps, n, d) == pytest.approx(
        (math.floor(K_star) + 1) * math.log(2 * d)
    )
    assert sr.verify_sup_norm_atoms()


def test_softmax_constants():
    assert ss.KAPPA_LINF_L1 == 1 and ss.KAPPA_L2 == sp.Rational(1, 2) and ss.KAPPA_EDELMAN == 2
    assert (
        ss.softmax_triangle_constant() == ss.KAPPA_EDELMAN
        and ss.score_occurrences() == ss.SCORE_OCCURRENCES == 2
    )
    # the Part II code charges the same head constant as the derivation
    from genbound.bounds.trauger_tewari import KAPPA_DEFAULT, LayerRadii, tt_layer_lipschitz

    assert KAPPA_DEFAULT == float(ss.KAPPA_LINF_L1)
    for S_v, S_qk, B in [(1.0, 1.0, 1.0), (0.3, 2.0, 1.7)]:
        want = float(
            ss.attention_lipschitz().subs(
                {ss.S_V: S_v, ss.S_QK: S_qk, ss.B: B, ss.kappa: KAPPA_DEFAULT}
            )
        )
        assert tt_layer_lipschitz(LayerRadii((1.0,), (S_qk,), (1.0,), (S_v,)), B) == pytest.approx(
            want, rel=1e-12
        )
    from genbound.claims.part1_softmax_attention import attention_lipschitz_constant

    for S_v, S_qk, B in [(1.0, 1.0, 1.0), (0.3, 2.0, 1.7)]:
        expr = ss.attention_lipschitz().subs({ss.S_V: S_v, ss.S_QK: S_qk, ss.B: B, ss.kappa: 1})
        assert attention_lipschitz_constant(S_v, S_qk, B) == pytest.approx(float(expr), rel=1e-12)


# --------------------------------------------------------------------------------------------------
# behaviour
# --------------------------------------------------------------------------------------------------


def test_dudley_numeric_agrees_with_closed_forms():
    r_num = rad.dudley_bound(lambda e: 2.0 / e**2, m=5000, diameter=2.0)
    r_cf = rad.dudley_inverse_square(2.0, 0.0, m=5000, diameter=2.0)
    assert r_num.value == pytest.approx(r_cf.value, rel=1e-8)
    assert r_num.alpha == pytest.approx(r_cf.alpha, rel=1e-5)
    r_num = rad.dudley_bound(lambda e: 3.0 / e**2 + 4.0, m=5000, diameter=2.0)
    r_cf = rad.dudley_inverse_square(3.0, 4.0, m=5000, diameter=2.0)
    assert r_num.value <= r_cf.value
    r_num = rad.dudley_bound(lambda e: 7 * max(math.log(0.8 / e), 0.0), m=300, diameter=4.0)
    r_cf = rad.dudley_parametric(7.0, 0.8, m=300, diameter=4.0)
    assert r_num.value == pytest.approx(r_cf.value, rel=1e-8)


def test_dudley_bound_handles_step_covers_with_breakpoints():
    # a ceil-shaped cover, as returned by maurey_log_cover: log N = ceil(1/eps^2) log 32
    lam = math.log(32)
    f = lambda e: cov.maurey_log_cover(1.0, 1.0, e, 4, 4)  # noqa: E731
    jumps = [1 / math.sqrt(k) for k in range(1, 400)]
    r = rad.dudley_bound(f, m=1000, diameter=2.0, breakpoints=jumps)
    # the exact objective at the returned alpha, summed step by step:
    # on (1/sqrt(k+1), 1/sqrt(k)] the ceil equals k + 1
    a, integral = r.alpha, 0.0
    for k in range(0, 400):
        lo = max(a, 1 / math.sqrt(k + 1))
        hi = 1.0 if k == 0 else min(1.0, 1 / math.sqrt(k))
        if hi > lo:
            integral += (hi - lo) * math.sqrt((k + 1) * lam)
    assert r.value == pytest.approx(4 * a + 12 / math.sqrt(1000) * integral, rel=1e-9)
    # ceil(x) lies between x and x + 1, so the bound is bracketed by the two smooth covers
    low = rad.dudley_bound(lambda e: lam / e**2, m=1000, diameter=2.0).value
    high = rad.dudley_bound(lambda e: lam / e**2 + lam, m=1000, diameter=2.0).value
    assert low <= r.value <= high


def test_empirical_rademacher_exact_and_monte_carlo_agree_and_respect_bounds():
    g = torch.Generator().manual_seed(3)
    X = torch.randn(2, 12, 5, generator=g, dtype=torch.float64)
    for norm, bound in [("l1", rad.l1_linear_massart_bound), ("l2", rad.l2_linear_bound)]:
        ex = rad.empirical_rademacher_linear(X, radius=1.5, norm=norm, n_draws=None, device="cpu")
        mc = rad.empirical_rademacher_linear(
            X, radius=1.5, norm=norm, n_draws=20000, seed=1, device="cpu"
        )
        assert ex.exact and not mc.exact and ex.value.shape == (2,)
        assert torch.all((mc.value - ex.value).abs() <= 5 * mc.stderr)
        assert torch.all(ex.value <= bound(X, radius=1.5))
    # the linf ball: dual l1 norm, exactly E ||X^T sigma||_1
    ex = rad.empirical_rademacher_linear(X[0], norm="linf", n_draws=None)
    direct = rad.rademacher_finite_exact(
        torch.tensor(
            [[1.0 if (i >> j) & 1 else -1.0 for j in range(5)] for i in range(32)],
            dtype=torch.float64,
        )
        @ X[0].T
    )
    assert float(ex.value) == pytest.approx(float(direct), rel=1e-12)


@pytest.mark.gpu
def test_empirical_rademacher_on_cuda_matches_cpu():
    X = torch.randn(64, 10, dtype=torch.float64)
    a = rad.empirical_rademacher_linear(X, n_draws=1000, seed=0, device="cpu").value
    b = rad.empirical_rademacher_linear(X, n_draws=1000, seed=0, device="cuda").value
    assert b.device.type == "cuda" and float(a) == pytest.approx(float(b.cpu()), rel=1e-10)


def test_maurey_sparsify_is_unbiased_and_in_the_ball():
    W = torch.tensor([[0.5, -0.2], [0.0, 0.1]], dtype=torch.float64)
    for zero in (True, False):
        Wk = cov.maurey_sparsify(W, 1.0, 5, n_draws=20000, seed=2, zero_atom=zero)
        assert torch.all(Wk.abs().sum((-2, -1)) <= 1.0 + 1e-12)
        assert torch.allclose(Wk.mean(0), W, atol=0.01)
        # each draw is an average of K = 5 atoms of size B = 1: entries are multiples of 1/5
        assert torch.allclose(Wk * 5, (Wk * 5).round(), atol=1e-12)


def test_maurey_log_cover_values_and_monotonicity():
    assert cov.maurey_log_cover(1.0, 1.0, 0.5, 2, 3) == pytest.approx(4 * math.log(12))
    vals = [cov.maurey_log_cover(2.0, 1.5, e, 8, 8) for e in (0.1, 0.2, 0.4, 0.8)]
    assert vals == sorted(vals, reverse=True)
    assert cov.zhang_log_cover(1.0, 1.0, 0.1, 10_000) > cov.zhang_log_cover(1.0, 1.0, 0.1, 10)
    assert cov.sup_norm_maurey_log_cover(1.0, 1.0, 0.1, 10_000, 5) > cov.sup_norm_maurey_log_cover(
        1.0, 1.0, 0.1, 10, 5
    )


def test_public_names_are_exported():
    assert gb.generalization_gap_bound is rad.generalization_gap_bound
    assert gb.dudley_bound is rad.dudley_bound and gb.allocate_scales is cov.allocate_scales
    assert gb.maurey_log_cover is cov.maurey_log_cover and gb.zhang_log_cover is cov.zhang_log_cover


# --------------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: rad.generalization_gap_bound(-0.1, m=10, delta=0.1), "rademacher"),
        (lambda: rad.generalization_gap_bound(0.1, m=0, delta=0.1), "m must be"),
        (lambda: rad.generalization_gap_bound(0.1, m=10, delta=1.0), "delta"),
        (lambda: rad.generalization_gap_bound(float("nan"), m=10, delta=0.1), "finite"),
        (lambda: rad.dudley_bound(lambda e: 1.0, m=10, diameter=0.0), "diameter"),
        (lambda: rad.dudley_bound(3.0, m=10, diameter=1.0), "callable"),
        (lambda: rad.dudley_bound(lambda e: float("nan"), m=10, diameter=1.0), "non-finite"),
        (lambda: rad.dudley_inverse_square(-1.0, 0.0, m=10, diameter=1.0), "A must"),
        (lambda: rad.dudley_parametric(1.0, 0.0, m=10, diameter=1.0), "C must"),
        (lambda: rad.empirical_rademacher_linear(torch.ones(3, 2), norm="l7"), "norm must"),
        (lambda: rad.empirical_rademacher_linear(torch.ones(30, 2), n_draws=None), "m <= 20"),
        (lambda: rad.ramp_loss(torch.ones(3), 0.0), "gamma"),
        (lambda: cov.allocate_scales([1.0, -1.0], 1.0), "nonnegative"),
        (lambda: cov.allocate_scales([1.0, 1.0], 1.0, weights=[1.0, 0.0]), "positive"),
        (lambda: cov.allocate_scales([1.0, 1.0], 0.0), "eps"),
        (lambda: cov.maurey_log_cover(1.0, 1.0, 0.1, 0, 3), "d_in"),
        (lambda: cov.maurey_sparsify(torch.ones(2, 2), 1.0, 3), "exceeds the radius"),
        (lambda: cov.zhang_log_cover(1.0, 1.0, -0.1, 5), "eps"),
    ],
)
def test_bad_input_raises_named_errors(call, match):
    with pytest.raises(GenboundError, match=match):
        call()


def test_shape_and_nonfinite_errors():
    with pytest.raises(ShapeError):
        rad.empirical_rademacher_linear(torch.ones(3))
    with pytest.raises(NonFiniteError):
        rad.empirical_rademacher_linear(torch.tensor([[1.0, float("inf")]]))
    with pytest.raises(ShapeError):
        cov.allocate_scales([[1.0, 2.0]], 1.0)
    with pytest.raises(ShapeError):
        cov.allocate_scales([1.0, 2.0], 1.0, weights=[1.0, 2.0, 3.0])
    with pytest.raises(ParameterError):
        rad.empirical_rademacher_linear(torch.ones(2, 3, 4, 5))


# --------------------------------------------------------------------------------------------------
# claims
# --------------------------------------------------------------------------------------------------


def test_part1_has_enough_claims_with_symbolic_checks():
    assert len(PART1) >= 12
    with_sym = [label for label in PART1 if claims.get(label).symbolic is not None]
    assert len(with_sym) >= 12


@pytest.mark.parametrize("label", PART1)
def test_part1_claim_passes_quickly(label):
    t0 = time.process_time()
    r = claims.get(label).check(0)
    cpu = time.process_time() - t0
    assert r.passed, r
    assert r.symbolic is not False
    assert cpu < 6.0, f"{label} took {cpu:.1f} s of CPU"


@pytest.mark.parametrize("kind", ["gaussian", "dominant", "sparse", "heavy"])
def test_monte_carlo_l1_rademacher_below_massart(kind):
    g = torch.Generator().manual_seed(11)
    m, d = 300, 40
    X = torch.randn(m, d, generator=g, dtype=torch.float64)
    if kind == "dominant":
        X[:, 0] *= 10
    elif kind == "sparse":
        X = (torch.rand(m, d, generator=g, dtype=torch.float64) < 0.05).double()
    elif kind == "heavy":
        X = X / torch.rand(m, d, generator=g, dtype=torch.float64).clamp(min=1e-3)
    r = rad.empirical_rademacher_linear(
        X, radius=2.0, norm="l1", n_draws=2000, seed=5, device="cpu"
    )
    assert float(r.value + 3 * r.stderr) <= float(rad.l1_linear_massart_bound(X, radius=2.0))
    # and the l1 class is smaller than the l2 class of the same radius (the l1 ball lies inside the l2 ball)
    r2 = rad.empirical_rademacher_linear(
        X, radius=2.0, norm="l2", n_draws=2000, seed=5, device="cpu"
    )
    assert torch.all(r.value <= r2.value)


def test_allocation_split_equals_allocate_scales():
    """The plain-float fast path used inside Dudley's integral is the allocation lemma's closed form."""
    from genbound.covering import allocate_scales, allocation_split

    g = torch.Generator().manual_seed(5)
    for _ in range(20):
        C = (
            torch.rand(6, generator=g, dtype=torch.float64)
            * 10 ** (4 * torch.rand(1, generator=g) - 2)
        ).tolist()
        eps = float(torch.rand(1, generator=g)) + 0.01
        fast = allocation_split({str(i): c for i, c in enumerate(C)}, eps)
        exact, _ = allocate_scales([c * c for c in C], eps)
        assert max(abs(a - b) for a, b in zip(fast.values(), exact.tolist())) <= 1e-12 * eps
    assert allocation_split({"a": 0.0, "b": 0.0}, 1.0) == {"a": 0.5, "b": 0.5}
    for radii, eps, msg in [
        ({"a": -1.0}, 1.0, "nonnegative"),
        ({"a": float("nan")}, 1.0, "finite"),
        ({}, 1.0, "empty"),
        ({"a": 1.0}, 0.0, "eps"),
    ]:
        with pytest.raises(GenboundError, match=msg):
            allocation_split(radii, eps)


# ------------------------------------------------------------------ two-sided: published right sides = statements
def test_published_right_sides_equal_their_sympy_statements():
    from genbound.claims import _part1 as eqs

    for seed in (0, 1):
        eq = eqs.part1_equalities(seed)
        assert set(eq) >= {
            "massart",
            "l1",
            "l2",
            "mcdiarmid",
            "gap",
            "maurey",
            "sup_norm",
            "zhang",
            "euclid",
            "allocation",
        }
        assert max(eq.values()) <= eqs.EQUALITY_RTOL, eq


def test_a_loosened_right_side_fails_its_claim():
    from genbound import claims, rademacher
    from genbound.claims import Mutant
    from genbound.claims._core import _times

    loose = Mutant(
        "massart-doubled",
        "massart_bound doubled (a looser, still true, bound)",
        ((rademacher, "massart_bound", lambda old: _times(old, 2.0)),),
    )
    with loose.applied():
        r = claims.get("lem-massart").check(0, stop_on_fail=True)
    assert not r.passed  # the inequality alone would pass it (ratio 0.41)


def test_smallest_m_bisection_and_bad_target():
    import math

    import pytest

    from genbound.bounds._result import smallest_m
    from genbound.errors import GenboundError

    assert smallest_m(lambda m: 10.0 / m, 0.5) == 20
    assert smallest_m(lambda m: 10.0 / math.sqrt(m), 0.1) == 10**4
    assert smallest_m(lambda m: 0.0, 1.0) == 1
    assert smallest_m(lambda m: 1.0, 0.5, max_m=100) == math.inf
    for bad in (0.0, 1.01, -1.0, math.nan):
        with pytest.raises(GenboundError, match="target"):
            smallest_m(lambda m: 0.0, bad)
