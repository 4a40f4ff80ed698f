"""Two constants of Part II derived rather than typed: the proper-cover factor and the multiclass margin's
Lipschitz constant.

Book: :ref:`ch-tt-multilayer` (proper covers in :prf:ref:`thm-tt-multilayer`, the multiclass margin in
:prf:ref:`thm-tt-masked`), :ref:`ch-edelman-baseline`.
:data:`genbound.symbolic.trauger_tewari.PROPER_FACTOR` and
:data:`~genbound.symbolic.trauger_tewari.MARGIN_LIPSCHITZ_MULTICLASS` are typed; the claims compare them, and
the numeric code, with :func:`proper_cover_factor` and :func:`multiclass_margin_lipschitz`.

>>> proper_cover_factor(), multiclass_margin_lipschitz()
(2, 2)
"""

from __future__ import annotations

import itertools

import sympy as sp
from . import trauger_tewari as st

__all__ = ["proper_cover_factor", "multiclass_margin_lipschitz"]


def proper_cover_factor() -> sp.Expr:
    """``eps / r`` for a proper cover built from an ``r``-cover: every ``f`` is within ``r`` of a centre
    ``c``; the centre is moved to a class member ``g`` within ``r`` of it (one exists when the centre's ball
    meets the class, the only centres kept); the triangle inequality gives ``||f - g|| <= r + r``, and
    solving ``r + r = eps`` for ``r`` gives ``r = eps / 2``."""
    r, eps = sp.symbols("r eps", positive=True)
    dist_to_centre, centre_to_member = r, r
    (sol,) = sp.solve(sp.Eq(dist_to_centre + centre_to_member, eps), r)
    return sp.simplify(eps / sol)


def _margin(v, y: int):
    return v[y] - sp.Max(*[v[i] for i in range(len(v)) if i != y])


def multiclass_margin_lipschitz(K: int = 3) -> sp.Expr:
    """The Lipschitz constant of ``M(v) = v_y - max_{i != y} v_i`` in ``l_inf``, derived as an upper bound
    that is attained. Upper: ``|M(v) - M(v')| <= |v_y - v'_y| + |max v_i - max v'_i|``, and each term is at
    most ``||v - v'||_inf`` (a coordinate and a maximum of coordinates are 1-Lipschitz in ``l_inf``), so
    the constant is at most the number of such terms, 2. Attained: sympy evaluates ``|M(0) - M(e)|`` at every
    vertex ``e`` of the unit ``l_inf`` cube (``K`` classes, ``y = 0``); its maximum must equal the upper
    bound (an ``AssertionError`` otherwise), so the constant is exactly 2."""
    upper = sum(1 for _term in ("coordinate", "maximum"))
    zero = [sp.Integer(0)] * K
    attained = max(
        abs(_margin(zero, 0) - _margin(list(map(sp.Integer, e)), 0))
        for e in itertools.product((-1, 1), repeat=K)
    )
    if attained != upper:
        raise AssertionError(f"margin Lipschitz: upper bound {upper}, attained {attained}")
    return sp.Integer(upper)


def verify_against_code() -> bool:
    """The typed sympy constants and the numeric code equal the derivations: ``PROPER_FACTOR`` and
    ``MARGIN_LIPSCHITZ_MULTICLASS``; ``loss_lipschitz(gamma, K) gamma`` (1 for one output, the margin's
    constant for ``K >= 2``); the cover factors of :func:`genbound.bounds.trauger_tewari.tt_sensitivities`
    (two layers, ``S < B`` for every value and dense map) and of
    :func:`genbound.bounds.edelman.edelman_log_cover` (``S < B``): 1 or the proper-cover factor."""
    from ..bounds import edelman as ed
    from ..bounds import trauger_tewari as tt

    proper, margin = proper_cover_factor(), multiclass_margin_lipschitz()
    if st.PROPER_FACTOR != proper or st.MARGIN_LIPSCHITZ_MULTICLASS != margin:
        return False
    for gamma in (0.25, 1.0, 3.0):
        if tt.loss_lipschitz(gamma, 1) * gamma != 1.0:
            return False
        if any(tt.loss_lipschitz(gamma, K) * gamma != float(margin) for K in (2, 5)):
            return False
    lay = tt.LayerRadii((2.0, 1.0), (1.0, 0.5), (3.0, 2.0), (1.0, 1.5), 4.0, 2.0)
    sens = tt.tt_sensitivities([lay, lay], B_X=1.0, B_w=1.0)
    want = {
        k: (float(proper) if k[0] in "VC" and not k.startswith("V[2") else 1.0) for k in sens.rho
    }
    if sens.factor != want:
        return False
    el = ed.EdelmanLayerRadii((1.0,), (3.0,), (1.0,), 4.0, 2.0)
    cover = ed.edelman_log_cover(el, B_X=1.0, B_w21=1.0, S_w=1.0, d=3, m=10, T=4)
    factors = {t.name: t.factor for t in cover.terms}
    return factors.get("V[1]") == float(proper) and factors.get("C") == float(proper)
