"""The Trauger-Tewari constants derived stage by stage (genbound.symbolic.tt_chain) equal the typed sympy
formulas and the numeric code that produces the book's numbers."""

import random

import pytest
import sympy as sp

from genbound.bounds import trauger_tewari as tt
from genbound.symbolic import trauger_tewari as st
from genbound.symbolic import tt_chain as tc

CASES = [
    (1, 1, False, False, False),
    (1, 2, True, True, False),
    (2, 2, True, True, False),
    (3, 1, True, False, True),
    (2, 1, False, True, True),
]


@pytest.mark.parametrize("H,dense,bias", [(1, False, False), (2, True, True), (2, False, True)])
def test_layer_constants_equal_typed(H, dense, bias):
    assert tc.verify_layer(H, dense=dense, bias=bias)


@pytest.mark.parametrize("L,H,dense,bias,row_norm", CASES)
def test_chain_equals_typed_and_code(L, H, dense, bias, row_norm):
    assert tc.verify_chain(L, H, dense=dense, bias=bias, row_norm=row_norm)
    assert tc.verify_against_code(
        L, H, dense=dense, bias=bias, row_norm=row_norm, trials=3, seed=L * 10 + H
    )


def test_single_layer_lemma_coefficients():
    """lem-tt-single-perturbation's printed rho_w, rho_V, rho_QK come out of the chain."""
    layers, rho = tc.chain_sensitivities(1, 2, dense=False)
    sv, sq, eq, ev, _, _ = layers[0]
    assert sp.simplify(rho["eta_w"] - st.L_sigma * st.B_X * sum(sv)) == 0
    for h in range(2):
        assert sp.simplify(rho[ev[h]] - st.B_w * st.L_sigma * st.B_X) == 0
        assert sp.simplify(rho[eq[h]] - st.B_w * st.L_sigma * sv[h] * st.kappa * st.B_X**3) == 0


def test_a_wrong_code_constant_is_caught(monkeypatch):
    """The comparison can fail: the numeric query-key sensitivity scaled by 2 no longer matches."""
    raw = tt.sensitivities_raw

    def doubled(spec, **kw):
        rho, Bs, lips = raw(spec, **kw)
        return {k: (2 * v if k.startswith("QK") else v) for k, v in rho.items()}, Bs, lips

    monkeypatch.setattr(tt, "sensitivities_raw", doubled)
    assert not tc.verify_against_code(1, 1, dense=False, trials=1)


def test_a_wrong_stage_premise_is_caught(monkeypatch):
    """A softmax premise with 2 kappa gives a Lipschitz constant the typed formula does not match."""
    monkeypatch.setattr(tc, "softmax", lambda s: tc.Tracked(sp.Integer(1), 2 * st.kappa * s.err))
    assert not tc.verify_layer(1, dense=False, bias=False)


def test_row_radii_are_the_stage_sizes():
    rng = random.Random(3)
    vals = {st.B_X: rng.uniform(0.1, 3), st.L_sigma: rng.uniform(0.1, 3)}
    _, _, size, (sv, sq, _, _, sc, _) = tc.layer_constants(2, dense=True, bias=True)
    lay = tt.LayerRadii((9.0, 9.0), (1.0, 1.0), (9.0, 9.0), (0.7, 1.3), 9.0, 0.4)
    vals.update({sv[0]: 0.7, sv[1]: 1.3, sc: 0.4})
    got = tt.tt_row_bounds(
        [lay], B_X=float(vals[st.B_X]), L_sigma=float(vals[st.L_sigma]), bias=True
    )
    assert got[1] == pytest.approx(float(size.subs(vals)), rel=1e-12)
