"""The numeric code of genbound.bounds.sakai_imaizumi uses exactly the constants that
genbound.symbolic.spectral_bound derives (GELU slope, exponents of T(p), the grid, 4 and 2, 2/3 and 3/2)."""

from __future__ import annotations

import math

import pytest
import sympy as sp
import torch

from genbound.bounds import sakai_imaizumi as si
from genbound.symbolic import spectral_bound as sb


def test_gelu_slope_supremum_and_L_phi():
    assert sb.verify_gelu_slope_sup()
    sup = float(sb.gelu_slope_sup())
    # numeric cross-check of the supremum on a fine grid of GELU'(x) = Phi(x) + x phi(x)
    x = torch.linspace(-6, 6, 200001, dtype=torch.float64)
    slope = 0.5 * (1 + torch.erf(x / math.sqrt(2))) + x * torch.exp(-(x**2) / 2) / math.sqrt(
        2 * math.pi
    )
    assert abs(float(slope.max()) - sup) < 1e-9
    assert abs(sup - 1.1289039) < 1e-6
    assert sb.L_phi_two_decimals() == sp.Rational(113, 100)
    assert si.L_PHI == float(sb.L_phi_two_decimals()) and si.L_PHI >= sup
    # the defaults of the public functions are that constant
    import inspect

    for fn in (
        si.spectral_adaptive_bound,
        si.edelman_proxy,
        si.layer_alpha,
        si.log_layer_lipschitz,
    ):
        assert inspect.signature(fn).parameters["L_phi"].default == si.L_PHI


def test_term_exponents_and_log_contribution():
    assert sb.verify_term_exponents()
    e = sb.term_exponents()
    lt = sp.lambdify((sb.M, sb.S, sb.N, sb.p), sb.log_term())
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        M = float(torch.exp(torch.randn(1, generator=g) * 3))
        S = float(torch.exp(torch.randn(1, generator=g) * 20))
        N = int(torch.randint(2, 5000, (1,), generator=g))
        p = float(torch.rand(1, generator=g)) * 2 + 1e-3
        num = si.log_contribution(
            torch.tensor([math.log(M)], dtype=torch.float64),
            torch.tensor(math.log(S), dtype=torch.float64),
            N,
            torch.tensor([p], dtype=torch.float64),
        )
        assert abs(float(num) - lt(M, S, N, p)) <= 1e-12 * max(1.0, abs(lt(M, S, N, p)))
        for q, val in (("M", 1 / (p + 2)), ("S", p / (p + 2)), ("N", (p + 1) / (p + 2))):
            assert abs(float(e[q].subs(sb.p, p)) - val) < 1e-14


def test_grid_rule_matches_sympy():
    for L in (1, 2, 3, 6, 12, 24, 32, 48):
        for N in (1, 2, 3, 7, 128, 384, 768, 1024, 4096, 8192):
            assert si.grid_m(L, N) == int(sb.grid_m(L, N))
            grid = si.p_grid(L, N)
            exact = sb.grid_points(L, N)
            assert len(grid) == len(exact)
            assert max(abs(float(a) - float(b)) for a, b in zip(grid, exact)) < 1e-15
    assert si.p_grid(3, 10, grid_m=4).tolist() == [float(v) for v in sb.grid_points(3, 10, m=4)]


def test_attention_factors_come_from_the_derivation():
    assert si.ATTENTION_QK_FACTOR == float(sb.attention_qk_factor()) == 4.0
    assert si.GAMMA_QK_FACTOR == float(sb.gamma_qk_factor()) == 2.0
    # and the numeric alpha / gamma use them: compare with the sympy layer Lipschitz constant
    from genbound.symbolic import sakai_imaizumi as sym

    expr = sym.layer_lipschitz(n_heads=2)
    vals = {sym.L_phi: 1.13, sym.C_in: 1.7, sym.C_out: 0.6}
    cq, cv = [0.3, 2.5], [1.1, 0.4]
    subs = dict(vals)
    subs.update({sp.Symbol(f"C_QK{h}", positive=True): cq[h] for h in range(2)})
    subs.update({sp.Symbol(f"C_V{h}", positive=True): cv[h] for h in range(2)})
    want = float(expr.subs(subs))
    lam = si.log_layer_lipschitz(
        torch.tensor([cq], dtype=torch.float64),
        torch.tensor([cv], dtype=torch.float64),
        torch.tensor([1.7], dtype=torch.float64),
        torch.tensor([0.6], dtype=torch.float64),
    )
    assert abs(math.exp(float(lam)) - want) <= 1e-12 * want
    g = si.matrix_gamma(
        torch.tensor([[0.3]]), torch.tensor([[1.1]]), torch.tensor([1.7]), torch.tensor([0.6])
    )
    for kind in ("QK", "V", "M_in", "M_out"):
        ga = float(sym.gamma_authors(kind).subs({sym.C_V: 1.1, sym.C_in: 1.7, sym.C_out: 0.6}))
        assert abs(float(g[kind].flatten()[0]) - ga) <= 1e-6 * max(ga, 1)  # float32 inputs here


@pytest.mark.parametrize("n", [2, 3])
def test_edelman_exponents(n):
    assert sb.verify_edelman_allocation(n)
    assert sb.EDELMAN_INNER_EXPONENT == sp.Rational(
        2, 3
    ) and sb.EDELMAN_OUTER_EXPONENT == sp.Rational(3, 2)
    # the numeric proxy with one layer, one head: (1 + sum of the four (.)^(2/3) terms)^(3/2)
    from genbound.weights import TransformerWeights

    A = torch.diag(torch.tensor([3.0, 1.0], dtype=torch.float64))
    w = TransformerWeights.from_proxy_matrices([[A]], [[A]], [A], [A])
    n21 = 4.0  # column norms 3 and 1
    xi = (
        (3 * 3 * 3 * n21) ** (2 / 3)
        + (3 * 3 * n21) ** (2 / 3)
        + (3 * n21) ** (2 / 3)
        + n21 ** (2 / 3)
    )
    want = float((1 + sp.nsimplify(xi)) ** sb.EDELMAN_OUTER_EXPONENT)
    assert abs(si.edelman_proxy(w).value - want) <= 1e-12 * want
