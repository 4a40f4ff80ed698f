"""The proper-cover factor and the multiclass margin's Lipschitz constant derived (genbound.symbolic.cover_loss)
against the typed sympy constants and the numeric code."""

import pytest

from genbound.bounds import trauger_tewari as tt
from genbound.symbolic import cover_loss as cl
from genbound.symbolic import trauger_tewari as st


def test_derived_constants():
    assert cl.proper_cover_factor() == 2 == st.PROPER_FACTOR
    assert all(cl.multiclass_margin_lipschitz(K) == 2 for K in (2, 3, 4))
    assert st.MARGIN_LIPSCHITZ_MULTICLASS == 2


def test_code_matches_derivation():
    assert cl.verify_against_code()


@pytest.mark.parametrize("factor", [0.5, 2.0])
def test_a_scaled_margin_constant_is_caught(monkeypatch, factor):
    orig = tt.loss_lipschitz
    monkeypatch.setattr(tt, "loss_lipschitz", lambda g, K: orig(g, K) * (factor if K > 1 else 1))
    assert not cl.verify_against_code()


def test_a_scaled_typed_proper_factor_is_caught(monkeypatch):
    monkeypatch.setattr(st, "PROPER_FACTOR", 4 * st.PROPER_FACTOR)
    assert not cl.verify_against_code()
