"""Sympy facts behind the softmax and attention Lipschitz constants (:ref:`ch-softmax-attention`).

* :func:`verify_linf_l1_identity`: for the softmax Jacobian ``J = diag(p) - p p^T`` and a sign vector
  ``s``, ``||J s||_1 = sum_i p_i |s_i - p.s| = 1 - (p.s)^2 <= 1``; so ``kappa = 1`` (:data:`KAPPA_LINF_L1`).
* :func:`verify_l2_half`: ``v^T J v = Var_p(v) <= (max v - min v)^2/4 <= 1/2`` for unit ``v``;
  so the l2 constant is ``1/2`` (:data:`KAPPA_L2`), attained at ``p = (1/2, 1/2)``.
* :func:`attention_lipschitz`: ``S_V (1 + 2 kappa B^2 S_QK)`` for self-attention in the max-row norm.
* :func:`verify_sigmoid_lower`: ``sigmoid(x) - 1/2 >= x/4 - x^3/48`` for ``x >= 0`` (the no-global-constant
  construction).

>>> from genbound.symbolic import softmax as ss
>>> ss.KAPPA_LINF_L1, ss.KAPPA_L2
(1, 1/2)
>>> ss.verify_linf_l1_identity(), ss.verify_l2_half(), ss.verify_sigmoid_lower()
(True, True, True)
"""

from __future__ import annotations

import sympy as sp

__all__ = ["KAPPA_LINF_L1", "KAPPA_L2", "KAPPA_EDELMAN", "verify_linf_l1_identity", "verify_l2_half",
           "attention_lipschitz", "no_global_lower_bound", "verify_sigmoid_lower", "verify_attention_chain"]

P, a = sp.symbols("P a", real=True)
S_V, S_QK, B, kappa = sp.symbols("S_V S_QK B kappa", positive=True)


def verify_linf_l1_identity() -> bool:
    """With ``P = sum_{s_i = +1} p_i`` and ``a = p.s = 2P - 1``:
    ``P (1 - a) + (1 - P)(1 + a) = 1 - a^2``, and ``1 - a^2 <= 1`` with equality iff ``a = 0``
    (:prf:ref:`lem-softmax-linf-l1`)."""
    av = 2 * P - 1
    lhs = P * (1 - av) + (1 - P) * (1 + av)
    ident = sp.simplify(sp.expand(lhs - (1 - av**2))) == 0
    maxed = sp.maximum(1 - a**2, a, sp.Interval(-1, 1)) == 1
    return bool(ident and maxed)


#: The tight l_inf -> l_1 Lipschitz constant of softmax, the maximum of ``1 - a^2`` over ``a in [-1, 1]``.
KAPPA_LINF_L1 = sp.maximum(1 - a**2, a, sp.Interval(-1, 1))
#: The constant used by Edelman et al. (their Corollary A.7, via secondary sources).
KAPPA_EDELMAN = sp.Integer(2)


def verify_l2_half() -> bool:
    """Two steps: Popoviciu's ``Var <= (M - m)^2/4`` for a two-point law (the extremal case), and
    ``(M - m)^2 <= 2(M^2 + m^2) <= 2``; the value 1/2 is attained at ``p = (1/2, 1/2)``,
    ``v = (1, -1)/sqrt(2)`` (:prf:ref:`lem-softmax-l2`)."""
    q, M, mm = sp.symbols("q M mm", real=True)
    var_two_point = q * M**2 + (1 - q) * mm**2 - (q * M + (1 - q) * mm) ** 2
    popoviciu = sp.maximum(sp.factor(var_two_point), q, sp.Interval(0, 1))
    ok_pop = sp.simplify(popoviciu - (M - mm) ** 2 / 4) == 0
    ok_sq = sp.simplify(2 * (M**2 + mm**2) - (M - mm) ** 2 - (M + mm) ** 2) == 0
    v = sp.Matrix([1, -1]) / sp.sqrt(2)
    p = sp.Matrix([sp.Rational(1, 2), sp.Rational(1, 2)])
    J = sp.diag(*p) - p * p.T
    attained = sp.simplify((v.T * J * v)[0] - sp.Rational(1, 2)) == 0
    return bool(ok_pop and ok_sq and attained)


#: The l2 -> l2 constant, ``(M - m)^2/4`` at ``M = -m = 1/sqrt(2)``.
KAPPA_L2 = sp.Rational(1, 2)


def attention_lipschitz():
    """``S_V (1 + 2 kappa B^2 S_QK)``: value part ``S_V`` plus the attention part
    ``S_V B * kappa * 2 B S_QK`` (see :func:`verify_attention_chain`; :prf:ref:`lem-attention-maxrow-lipschitz`)."""
    return S_V * (1 + 2 * kappa * B**2 * S_QK)


def verify_attention_chain() -> bool:
    """``S_V B ||a - a'||_1 + S_V D`` with ``||a - a'||_1 <= kappa 2 B S_QK D`` sums to
    ``attention_lipschitz() * D``."""
    D = sp.Symbol("D", positive=True)
    total = S_V * B * (kappa * 2 * B * S_QK * D) + S_V * D
    return sp.simplify(total - attention_lipschitz() * D) == 0


def verify_sigmoid_lower() -> bool:
    """``sigmoid(x) - 1/2 = tanh(x/2)/2`` and ``tanh(y) >= y - y^3/3`` for ``y >= 0`` (the derivative of
    the difference is ``tanh(y)^2... >= 0``): so ``sigmoid(x) - 1/2 >= x/4 - x^3/48``."""
    x, y = sp.symbols("x y", nonnegative=True)
    ident = sp.simplify((1 / (1 + sp.exp(-x)) - sp.Rational(1, 2)) - sp.tanh(x / 2) / 2)
    ident_ok = sp.simplify(ident.rewrite(sp.exp)) == 0
    g = sp.tanh(y) - (y - y**3 / 3)
    dg = sp.simplify(sp.diff(g, y))  # = y^2 - tanh(y)^2 >= 0 since tanh(y) <= y
    dg_ok = sp.simplify(dg - (y**2 - sp.tanh(y) ** 2)) == 0
    series_ok = sp.simplify(sp.series(sp.tanh(x / 2) / 2, x, 0, 4).removeO() - (x / 4 - x**3 / 48)) == 0
    return bool(ident_ok and dg_ok and g.subs(y, 0) == 0 and series_ok)


def no_global_lower_bound():
    """The local Lipschitz constant of the two-token construction of :prf:ref:`prop-no-global-lipschitz`
    at perturbation ``delta``: at least ``B (sigmoid(B delta) - 1/2)/delta >= B^2/4 (1 - B^2 delta^2/12)``."""
    dl = sp.Symbol("delta", positive=True)
    return B**2 / 4 * (1 - B**2 * dl**2 / 12)
