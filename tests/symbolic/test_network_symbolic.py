"""Theorem P's constants, derived by sympy (:mod:`genbound.symbolic.network`), against the numeric code."""

from __future__ import annotations

import math

import pytest
import sympy as sp
import torch

from genbound import covering as cov
from genbound import schatten_entropy as se
from genbound.bounds import network as net
from genbound.symbolic import network as sn


def test_constants_match_the_code():
    assert float(sn.rank_net_base()) == cov.RANK_NET_BASE
    assert math.isclose(float(sn.sudakov_constant()), cov.SUDAKOV_CONSTANT, rel_tol=1e-15)
    assert float(sn.proper_cover_factor()) == net.PROPER_COVER_FACTOR == net.PIECE_SPLIT
    assert float(sn.dudley_top()) == net.dudley_top()
    assert sn.prior_total() == 1
    assert sn.verify_p0_antiderivative() and sn.verify_gaussian_max_at_two()


@pytest.mark.parametrize("b_x", [1.0, 0.3, 2.5])
def test_hybrid_sensitivities_match_the_code(b_x):
    g = torch.Generator().manual_seed(0)
    L, H = 3, 2
    lv = {
        k: torch.rand(*shape, generator=g, dtype=torch.float64) * 3 + 0.1
        for k, shape in (("QK", (L, H)), ("V", (L, H)), ("M_in", (L,)), ("M_out", (L,)))
    }
    out = net.network_sensitivities(lv["QK"], lv["V"], lv["M_in"], lv["M_out"], input_radius=b_x)
    sym = {k: sn.hybrid_sensitivity(k) for k in ("QK", "V", "M_in", "M_out")}
    names = {s.name: s for e in sym.values() for s in e.free_symbols}
    i = 0
    for l, h, kind in net.matrix_order(L, H):
        b = b_x if l == 0 else 1.0
        vals = {
            "C_V": float(lv["V"][l, h]) if h >= 0 else 0.0,
            "C_in": float(lv["M_in"][l]),
            "C_out": float(lv["M_out"][l]),
            "L_phi": se.L_PHI,
            "b": b,
        }
        want = float(sym[kind].subs({names[k]: v for k, v in vals.items() if k in names}))
        assert math.isclose(math.exp(float(out["log_sens"][i])), want, rel_tol=1e-12), (l, h, kind)
        radius = {"QK": b, "V": b, "M_in": 1.0, "M_out": float(lv["M_in"][l])}[kind]
        assert math.isclose(math.exp(float(out["log_radius"][i])), radius, rel_tol=1e-12)
        i += 1


@pytest.mark.parametrize("A,b", [(1.0, 0.25), (37.0, 3.0), (5e4, 1e30)])
def test_closed_form_matches_sympy(A, b):
    want = float(sn.p0_integral().subs({sn.A: A, sn.b: b}).evalf(30))
    got = net.p0_dudley_integral([A], [math.log(b)])
    assert math.isclose(got, want, rel_tol=1e-12)


def test_a_wrong_constant_is_seen():
    assert float(sn.rank_net_base()) != 7.0 and float(sn.sudakov_constant()) != math.pi * math.log(
        2
    )
    assert sp.simplify(sn.hybrid_sensitivity("QK") / sn.hybrid_sensitivity("V")) != sp.Integer(1)
