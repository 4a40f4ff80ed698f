"""Sympy facts behind the softmax and attention Lipschitz constants (:ref:`ch-softmax-attention`).

* :func:`verify_linf_l1_identity`: for the softmax Jacobian ``J = diag(p) - p p^T`` and a sign vector
  ``s``, ``||J s||_1 = sum_i p_i |s_i - p.s| = 1 - (p.s)^2 <= 1``; so ``kappa = 1`` (:data:`KAPPA_LINF_L1`).
* :func:`verify_l2_half`: ``v^T J v = Var_p(v) <= (max v - min v)^2/4 <= 1/2`` for unit ``v``;
  so the l2 constant is ``1/2`` (:data:`KAPPA_L2`), attained at ``p = (1/2, 1/2)``.
* :func:`attention_lipschitz`: ``S_V (1 + 2 kappa B^2 S_QK)`` for self-attention in the max-row norm,
  derived from sympy's derivative of the head (:func:`attention_sensitivity`): the ``2`` counts the places
  where ``X`` enters the scores (:func:`score_occurrences`).
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

__all__ = [
    "KAPPA_LINF_L1",
    "KAPPA_L2",
    "KAPPA_EDELMAN",
    "verify_linf_l1_identity",
    "verify_l2_half",
    "attention_lipschitz",
    "no_global_lower_bound",
    "verify_sigmoid_lower",
    "softmax_triangle_constant",
    "bound_terms",
    "attention_derivative",
    "attention_sensitivity",
    "score_occurrences",
    "verify_attention_lipschitz_form",
    "SCORE_OCCURRENCES",
]

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
#: The constant used by Edelman et al. (their Corollary A.7, via secondary sources), the triangle-inequality
#: bound :func:`softmax_triangle_constant` (a test checks they agree).
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


def softmax_triangle_constant():
    """The constant ``2`` of the cruder softmax bound (Edelman et al.; Sakai & Imaizumi's ``alpha``):
    ``||J s||_1 <= ||diag(p) s||_1 + ||p (p.s)||_1`` by the triangle inequality, and for a sign vector ``s``
    each piece is maximised separately: ``sum_i p_i |s_i| = 1`` and ``max_{a = p.s in [-1, 1]} |a| = 1``.

    >>> softmax_triangle_constant()
    2
    """
    first = sp.Integer(1)  # sum_i p_i |s_i| = sum_i p_i on the simplex
    second = sp.maximum(sp.Abs(a), a, sp.Interval(-1, 1))  # |p.s| <= 1
    return first + second


def bound_terms(expr, bounds: dict) -> sp.Expr:
    """Triangle inequality and submultiplicativity, applied mechanically: expand ``expr`` into a sum of
    products and replace every factor by its bound (``bounds`` maps symbols to nonnegative bounds; a
    derivative of an activation ``phi`` by ``L_phi`` and ``phi(u)`` by ``|u|``, see ``layer_bound``).
    For matrices the same count holds with norms, since ``||A B|| <= ||A|| ||B||``."""
    terms = sp.Add.make_args(sp.expand(expr))
    return sp.Add(*[sp.Abs(t.subs(bounds)) for t in terms])


_e = sp.Symbol("e", real=True)  # the size of the perturbation


def attention_derivative(perturbed: str):
    """Derivatives of one attention head's score and value for a perturbation of ``perturbed`` in
    ``{"X", "QK", "V"}``, computed by sympy on the scalar model ``s_t = x_i q x_t``, ``value_t = x_t v``.

    Returns ``(d s_t, d value_t)`` at ``e = 0``, in the perturbation directions ``dx_i, dx_t, dq, dv`` (each of
    norm at most 1 per unit of perturbation)."""
    xi, xt, q, v, dxi, dxt, dq, dv = sp.symbols("x_i x_t q v dx_i dx_t dq dv", real=True)
    shift = {
        "X": {xi: xi + _e * dxi, xt: xt + _e * dxt},
        "QK": {q: q + _e * dq},
        "V": {v: v + _e * dv},
    }
    if perturbed not in shift:
        raise KeyError(f"perturbed must be one of {sorted(shift)}, got {perturbed!r}")
    score, value = xi * q * xt, xt * v
    ds = sp.diff(score.xreplace(shift[perturbed]), _e).subs(_e, 0)
    dval = sp.diff(value.xreplace(shift[perturbed]), _e).subs(_e, 0)
    return ds, dval


def attention_sensitivity(perturbed: str, *, kappa_=None, row=None, S_QK_=None, S_V_=None):
    """Sensitivity of an attention row ``sum_t a_t value_t`` to a perturbation of ``perturbed``, in the
    max-row norm: ``(value bound) * kappa * (score bound) + (value-change bound)``.

    The pieces come from :func:`attention_derivative` by :func:`bound_terms` (rows ``<= row``, ``||W_QK||
    <= S_QK``, ``||W_V|| <= S_V``); the attention weights move by at most ``kappa`` times the largest score
    change in ``l_1`` (:data:`KAPPA_LINF_L1`, or the cruder :func:`softmax_triangle_constant`) and multiply
    value rows of norm at most ``S_V row``. With ``perturbed = "X"`` this is the input-Lipschitz constant
    ``S_V (1 + 2 kappa B^2 S_QK)``: the ``2`` counts the two places where ``X`` enters the scores.
    """
    kap = kappa if kappa_ is None else kappa_
    Bv = B if row is None else row
    sq = S_QK if S_QK_ is None else S_QK_
    sv = S_V if S_V_ is None else S_V_
    ds, dval = attention_derivative(perturbed)
    xi, xt, q, v, dxi, dxt, dq, dv = sp.symbols("x_i x_t q v dx_i dx_t dq dv", real=True)
    bounds = {xi: Bv, xt: Bv, q: sq, v: sv, dxi: 1, dxt: 1, dq: 1, dv: 1}
    return sp.expand(sv * Bv * kap * bound_terms(ds, bounds) + bound_terms(dval, bounds))


def score_occurrences() -> int:
    """How many times ``X`` enters the scores ``X W_QK X^T``: the number of terms of the derivative of
    ``x_i q x_t`` under a perturbation of ``X`` (sympy's product rule gives 2)."""
    return len(sp.Add.make_args(sp.expand(attention_derivative("X")[0])))


def attention_lipschitz():
    """``S_V (1 + 2 kappa B^2 S_QK)``, derived: :func:`attention_sensitivity` for a perturbation of ``X``
    (:prf:ref:`lem-attention-maxrow-lipschitz`)."""
    return attention_sensitivity("X")


def verify_attention_lipschitz_form() -> bool:
    """The derived constant has the form ``S_V (1 + n kappa B^2 S_QK)`` with ``n`` = :func:`score_occurrences`:
    its value part is ``S_V`` (one term in the value derivative) and its attention part is linear in
    ``kappa``, ``S_QK`` and ``B^2`` (sympy compares coefficients)."""
    L = attention_lipschitz()
    n = score_occurrences()
    return bool(sp.simplify(L - S_V * (1 + n * kappa * B**2 * S_QK)) == 0 and n == 2)


def verify_sigmoid_lower() -> bool:
    """``sigmoid(x) - 1/2 = tanh(x/2)/2`` and ``tanh(y) >= y - y^3/3`` for ``y >= 0`` (the derivative of
    the difference is ``tanh(y)^2... >= 0``): so ``sigmoid(x) - 1/2 >= x/4 - x^3/48``."""
    x, y = sp.symbols("x y", nonnegative=True)
    ident = sp.simplify((1 / (1 + sp.exp(-x)) - sp.Rational(1, 2)) - sp.tanh(x / 2) / 2)
    ident_ok = sp.simplify(ident.rewrite(sp.exp)) == 0
    g = sp.tanh(y) - (y - y**3 / 3)
    dg = sp.simplify(sp.diff(g, y))  # = y^2 - tanh(y)^2 >= 0 since tanh(y) <= y
    dg_ok = sp.simplify(dg - (y**2 - sp.tanh(y) ** 2)) == 0
    series_ok = (
        sp.simplify(sp.series(sp.tanh(x / 2) / 2, x, 0, 4).removeO() - (x / 4 - x**3 / 48)) == 0
    )
    return bool(ident_ok and dg_ok and g.subs(y, 0) == 0 and series_ok)


def no_global_lower_bound():
    """The local Lipschitz constant of the two-token construction of :prf:ref:`prop-no-global-lipschitz`
    at perturbation ``delta``: at least ``B (sigmoid(B delta) - 1/2)/delta >= B^2/4 (1 - B^2 delta^2/12)``."""
    dl = sp.Symbol("delta", positive=True)
    return B**2 / 4 * (1 - B**2 * dl**2 / 12)


#: The number of places ``X`` enters the scores, derived by :func:`score_occurrences` (used by the numeric
#: attention constants; tests compare).
SCORE_OCCURRENCES = score_occurrences()
