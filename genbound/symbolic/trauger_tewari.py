"""Sympy derivations behind the constants of Part II (sequence-length-independent bounds).

Book: :ref:`ch-tt-covers`, :ref:`ch-tt-single-layer`, :ref:`ch-tt-multilayer`, :ref:`ch-edelman-baseline`.
Every constant used by :mod:`genbound.bounds.trauger_tewari` and :mod:`genbound.bounds.edelman` is an
expression built here; the tests lambdify these expressions and compare them with the numeric code.

* :func:`layer_lipschitz` and :func:`layer_error`: one layer's input-Lipschitz constant in the max-row
  norm and its parameter-perturbation error, both free of the sequence length ``T``.
* :func:`unrolled_sensitivities`: the recursion ``Delta_l <= Lip_l Delta_{l-1} + e_l`` unrolled, with the
  coefficient of every parameter error (``rho``); :func:`verify_unrolling` checks it against the
  recursion symbolically.
* :func:`single_layer_C1` and :func:`verify_single_layer_factorisation`: the complexity ``C_1`` of the
  single-layer theorem in its 2/3-power and factored forms.
* :func:`verify_bias_absorption`: biases are an extra constant input coordinate.
* :func:`zhang_log_cover_expr` and :func:`edelman_single_layer_sensitivities`: the Edelman-type baseline.
* The head terms of :func:`layer_lipschitz` and :func:`unrolled_sensitivities` are the sensitivities that
  :func:`genbound.symbolic.softmax.attention_sensitivity` derives from the head's derivative (a test
  compares them).

>>> from genbound.symbolic import trauger_tewari as st
>>> st.verify_unrolling(2), st.verify_single_layer_factorisation(), st.verify_bias_absorption()
(True, True, True)
"""

from __future__ import annotations

import sympy as sp
from . import dudley as sd
from . import rademacher as srad
from .allocation import ALLOCATION_EXPONENTS

__all__ = [
    "L_sigma",
    "kappa",
    "B_X",
    "B_w",
    "T",
    "m",
    "layer_lipschitz",
    "layer_error",
    "unrolled_sensitivities",
    "verify_unrolling",
    "cover_constant",
    "single_layer_C1",
    "single_layer_C1_factored",
    "verify_single_layer_factorisation",
    "verify_bias_absorption",
    "zhang_log_cover_expr",
    "edelman_single_layer_sensitivities",
    "edelman_chain_sensitivities",
    "verify_edelman_sensitivities",
    "aug",
    "MARGIN_LIPSCHITZ_MULTICLASS",
    "PROPER_FACTOR",
    "LOSS_DIAMETER",
    "tt_bound_value",
    "edelman_bound_parts",
    "zhang_smooth_log_cover",
    "ZHANG_LEADING",
    "tt_loss_cover",
]

L_sigma, kappa, B_X, B_w = sp.symbols("L_sigma kappa B_X B_w", positive=True)
T, m = sp.symbols("T m", positive=True, integer=True)

#: Cost of making a cover proper (its elements inside the class); cover at eps/2, then move each centre
#: to a class member within eps/2 of it.
PROPER_FACTOR = sp.Integer(2)
#: The leading constant of Zhang's cover as recalled (:func:`zhang_log_cover_expr`); ``sqrt`` of it multiplies
#: ``rho a b`` in the ``m``-free constant of a score class.
ZHANG_LEADING = sp.Integer(36)
#: The multiclass margin v_y - max_{i != y} v_i is 2-Lipschitz in the l_inf norm.
MARGIN_LIPSCHITZ_MULTICLASS = sp.Integer(2)


def aug(x, bias: bool):
    """Radius of the augmented row ``[z, 1]`` when ``||z|| <= x``: ``sqrt(x^2 + 1)`` (or ``x``)."""
    return sp.sqrt(x**2 + 1) if bias else x


def layer_lipschitz(S_V, S_QK, B, S_C=None):
    """``Lip = L_sigma * S_C * sum_h S_V^h (1 + 2 kappa B^2 S_QK^h)`` (``S_C = 1`` without a dense map).

    ``S_V``, ``S_QK``: sequences over heads; ``B``: the (augmented) input-row radius.
    """
    c = 1 if S_C is None else S_C
    return L_sigma * c * sum(sv * (1 + 2 * kappa * B**2 * sq) for sv, sq in zip(S_V, S_QK))


def layer_error(S_V, eta_QK, eta_V, B, *, S_C=None, eta_C=None, bias=False):
    """Parameter-perturbation error of one layer at a fixed input with rows ``<= B`` (augmented radius).

    ``E_U = sum_h (S_V^h kappa B^3 eta_QK^h + B eta_V^h)`` bounds the attention output;
    then ``e = S_C L_sigma E_U + aug(L_sigma sum_h S_V^h B) eta_C`` with a dense map, ``L_sigma E_U`` without.
    """
    EU = sum(sv * kappa * B**3 * eq + B * ev for sv, eq, ev in zip(S_V, eta_QK, eta_V))
    if S_C is None:
        return L_sigma * EU
    R = L_sigma * sum(S_V) * B
    return S_C * L_sigma * EU + aug(R, bias) * eta_C


def _layer_symbols(l: int, H: int, dense: bool):
    sv = sp.symbols(f"S_V{l}_1:{H + 1}", positive=True)
    sq = sp.symbols(f"S_QK{l}_1:{H + 1}", positive=True)
    eq = sp.symbols(f"eta_QK{l}_1:{H + 1}", nonnegative=True)
    ev = sp.symbols(f"eta_V{l}_1:{H + 1}", nonnegative=True)
    sc = sp.Symbol(f"S_C{l}", positive=True) if dense else None
    ec = sp.Symbol(f"eta_C{l}", nonnegative=True) if dense else None
    return sv, sq, eq, ev, sc, ec


def _row_bounds(layers, *, bias: bool, row_norm: bool):
    """Row radii ``B_0 = B_X, B_1, ..., B_L`` (before augmentation)."""
    Bs = [B_X]
    for sv, sq, eq, ev, sc, ec in layers:
        R = L_sigma * sum(sv) * aug(Bs[-1], bias)
        Y = R if sc is None else sc * aug(R, bias)
        Bs.append(sp.Integer(1) if row_norm else Y)
    return Bs


def unrolled_sensitivities(
    L: int, H: int = 1, *, dense: bool = True, bias: bool = False, row_norm: bool = False
):
    """Closed-form sensitivities of ``|f - f_hat| <= sum rho * eta`` for ``L`` layers of ``H`` heads.

    Returns ``(layers, rho)`` where ``layers`` are the per-layer symbols
    ``(S_V, S_QK, eta_QK, eta_V, S_C, eta_C)`` and ``rho`` maps each ``eta`` symbol (plus ``"eta_w"``)
    to its coefficient: ``rho_QK^(l,h) = B_w P_l c_l L_sigma S_V^h kappa B~_{l-1}^3``,
    ``rho_V^(l,h) = B_w P_l c_l L_sigma B~_{l-1}``, ``rho_C^(l) = B_w P_l aug(L_sigma sum_h S_V^h B~_{l-1})``,
    ``rho_w = B~_L``, with ``P_l = prod_{j > l} Lip_j``, ``c_l = S_C^(l)`` (or 1) and ``B~ = aug(B)``.
    """
    layers = [_layer_symbols(l, H, dense) for l in range(1, L + 1)]
    Bs = _row_bounds(layers, bias=bias, row_norm=row_norm)
    lips = [
        layer_lipschitz(sv, sq, aug(Bs[i], bias), sc)
        for i, (sv, sq, _, _, sc, _) in enumerate(layers)
    ]
    rho = {}
    for i, (sv, sq, eq, ev, sc, ec) in enumerate(layers):
        P = sp.Mul(*lips[i + 1 :])
        Bt = aug(Bs[i], bias)
        c = 1 if sc is None else sc
        for h in range(H):
            rho[eq[h]] = B_w * P * c * L_sigma * sv[h] * kappa * Bt**3
            rho[ev[h]] = B_w * P * c * L_sigma * Bt
        if sc is not None:
            rho[ec] = B_w * P * aug(L_sigma * sum(sv) * Bt, bias)
    rho["eta_w"] = aug(Bs[-1], bias)
    return layers, rho


def verify_unrolling(
    L: int, H: int = 2, *, dense: bool = True, bias: bool = True, row_norm: bool = False
) -> bool:
    """Run the recursion ``Delta_l = Lip_l Delta_{l-1} + e_l`` (``Delta_0 = 0``), form
    ``B~_L eta_w + B_w Delta_L`` and check its coefficients equal :func:`unrolled_sensitivities`."""
    layers, rho = unrolled_sensitivities(L, H, dense=dense, bias=bias, row_norm=row_norm)
    Bs = _row_bounds(layers, bias=bias, row_norm=row_norm)
    eta_w = sp.Symbol("eta_w", nonnegative=True)
    Delta = sp.Integer(0)
    for i, (sv, sq, eq, ev, sc, ec) in enumerate(layers):
        Bt = aug(Bs[i], bias)
        Delta = layer_lipschitz(sv, sq, Bt, sc) * Delta + layer_error(
            sv, eq, ev, Bt, S_C=sc, eta_C=ec, bias=bias
        )
    total = sp.expand(aug(Bs[-1], bias) * eta_w + B_w * Delta)
    closed = sp.expand(sum(r * (eta_w if k == "eta_w" else k) for k, r in rho.items()))
    return sp.simplify(total - closed) == 0


def cover_constant(rho, radius, log_atoms, factor=1):
    """``c = factor * rho * radius * sqrt(log_atoms)``: one part's ``log N_j(eps_j) <= c^2/eps_j^2 + Lambda_j``.

    From Maurey: ``ceil(radius^2/eta^2) * log_atoms`` with ``eta = eps_j/(factor * rho)``.
    """
    return factor * rho * radius * sp.sqrt(log_atoms)


S_V1, B_V1, B_QK1, Lw, LV, LQK = sp.symbols(
    "S_V B_V B_QK Lambda_w Lambda_V Lambda_QK", positive=True
)


def single_layer_C1():
    """``C_1 = [sum_j (rho_j B_j sqrt(Lambda_j))^{2/3}]^{3/2}`` for one head, no dense map, no bias."""
    rho_w = L_sigma * S_V1 * B_X
    rho_V = B_w * L_sigma * B_X
    rho_QK = B_w * L_sigma * S_V1 * kappa * B_X**3
    terms = [
        cover_constant(rho_w, B_w, Lw),
        cover_constant(rho_V, B_V1, LV),
        cover_constant(rho_QK, B_QK1, LQK),
    ]
    return sum(t ** sp.Rational(2, 3) for t in terms) ** sp.Rational(3, 2)


def single_layer_C1_factored():
    """``L_sigma B_w B_X [S_V^{2/3} Lw^{1/3} + B_V^{2/3} LV^{1/3} + (kappa S_V B_QK B_X^2)^{2/3} LQK^{1/3}]^{3/2}``."""
    inner = (
        S_V1 ** sp.Rational(2, 3) * Lw ** sp.Rational(1, 3)
        + B_V1 ** sp.Rational(2, 3) * LV ** sp.Rational(1, 3)
        + (kappa * S_V1 * B_QK1 * B_X**2) ** sp.Rational(2, 3) * LQK ** sp.Rational(1, 3)
    )
    return L_sigma * B_w * B_X * inner ** sp.Rational(3, 2)


def verify_single_layer_factorisation() -> bool:
    """The two forms of ``C_1`` agree (all symbols positive)."""
    a, b = single_layer_C1(), single_layer_C1_factored()
    return (
        sp.simplify(
            sp.powsimp(
                sp.powdenest(a ** sp.Rational(2, 3) - b ** sp.Rational(2, 3), force=True),
                force=True,
            )
        )
        == 0
    )


def verify_bias_absorption() -> bool:
    """``(x W_Q + b_Q).(z W_K + b_K) = [x, 1] [W_Q; b_Q] [W_K; b_K]^T [z, 1]^T`` (here ``d = 2``, ``d_head = 2``)."""
    x = sp.Matrix(1, 2, sp.symbols("x1:3"))
    z = sp.Matrix(1, 2, sp.symbols("z1:3"))
    WQ, WK = sp.Matrix(2, 2, sp.symbols("q1:5")), sp.Matrix(2, 2, sp.symbols("k1:5"))
    bQ, bK = sp.Matrix(1, 2, sp.symbols("bq1:3")), sp.Matrix(1, 2, sp.symbols("bk1:3"))
    lhs = ((x * WQ + bQ) * (z * WK + bK).T)[0]
    xa, za = x.row_join(sp.Matrix([[1]])), z.row_join(sp.Matrix([[1]]))
    rhs = (xa * WQ.col_join(bQ) * (WK.col_join(bK)).T * za.T)[0]
    return sp.expand(lhs - rhs) == 0


def zhang_log_cover_expr(a, b, eta, n):
    """Zhang (2002, Thm 4, ``p = q = 2``), natural logs: ``36 a^2 b^2/eta^2 log(2 ceil(4ab/eta + 2) n + 1)``
    for linear functionals of ``l2``-norm ``<= b`` on ``n`` points of ``l2``-norm ``<= a``, in ``l_inf``
    over the points. (Recalled form; the constants are not verified against the paper.)"""
    return (
        ZHANG_LEADING * a**2 * b**2 / eta**2 * sp.log(2 * sp.ceiling(4 * a * b / eta + 2) * n + 1)
    )


def edelman_single_layer_sensitivities(H: int = 1, *, dense: bool = True, bias: bool = False):
    """Sensitivities of the Edelman-type (data-dependent) chain for one layer, read at the [CLS] row.

    Scores are covered in ``l_inf`` over the ``m T`` (sample, token) pairs (error ``eta_inf``); value,
    dense and readout maps are covered on the sample (RMS error in output units). Returns a dict with
    ``rho_QK^h = S_w c L_sigma S_V^h kappa B~``, ``rho_V^h = S_w c L_sigma``, ``rho_C = S_w``, ``rho_w = 1``.
    """
    S_w = sp.Symbol("S_w", positive=True)
    sv = sp.symbols(f"S_V1_1:{H + 1}", positive=True)
    sc = sp.Symbol("S_C1", positive=True) if dense else None
    c = 1 if sc is None else sc
    Bt = aug(B_X, bias)
    rho = {f"QK{h + 1}": S_w * c * L_sigma * sv[h] * kappa * Bt for h in range(H)}
    rho.update({f"V{h + 1}": S_w * c * L_sigma for h in range(H)})
    if dense:
        rho["C"] = S_w
    rho["w"] = sp.Integer(1)
    return rho


def edelman_chain_sensitivities(H: int = 1, *, dense: bool = True, bias: bool = False):
    """The sensitivities of :func:`edelman_single_layer_sensitivities` **derived** from the chain of
    :prf:ref:`lem-edelman-perturbation`: the output error of a perturbation is its error where it enters times
    the Lipschitz constant of every stage after that point (triangle inequality, then one Jacobian bound per
    stage). The stages, from the scores to the output, with their premises:

    * softmax, ``l_inf`` scores to ``l_1`` weights: ``kappa``;
    * pooling ``p_h = sum_t a_t z~_t`` over rows of norm ``<= B~``: ``B~`` per unit of ``l_1``;
    * the value map of head ``h``: ``S_V^h``; the activation: ``L_sigma``;
    * the dense map: ``S_C`` (absent without one); the readout: ``S_w``.

    A query-key map enters at the scores (error ``eta_inf``), a value map at the head's output (the RMS of
    ``p_hat (V - V_hat)``), the dense map at its output, the readout at the output. Returns the dict keyed as
    :func:`edelman_single_layer_sensitivities`; a test and the claim compare the two and the numeric code."""
    S_w = sp.Symbol("S_w", positive=True)
    sv = sp.symbols(f"S_V1_1:{H + 1}", positive=True)
    after_head = [L_sigma] + ([sp.Symbol("S_C1", positive=True)] if dense else []) + [S_w]
    rho = {}
    for h in range(H):
        rho[f"QK{h + 1}"] = sp.Mul(kappa, aug(B_X, bias), sv[h], *after_head)
        rho[f"V{h + 1}"] = sp.Mul(*after_head)
    if dense:
        rho["C"] = S_w
    rho["w"] = sp.Integer(1)
    return rho


def verify_edelman_sensitivities(H: int = 2, *, dense: bool = True, bias: bool = True) -> bool:
    """:func:`edelman_single_layer_sensitivities` equals the chain derivation :func:`edelman_chain_sensitivities`."""
    a = edelman_single_layer_sensitivities(H, dense=dense, bias=bias)
    b = edelman_chain_sensitivities(H, dense=dense, bias=bias)
    return set(a) == set(b) and all(sp.simplify(a[k] - b[k]) == 0 for k in a)


#: The ramp loss lies in ``[0, 1]``: within ``1/2`` of the constant ``1/2`` in every metric, so Dudley's
#: diameter is ``1/2`` and ``R_S <= 1/2`` is the trivial cap.
LOSS_DIAMETER = sp.Rational(1, 2)


def _trivial_cap():
    """``R_S(G) = R_S(G - 1/2) <= sup |g - 1/2| = 1/2`` for ``[0, 1]``-valued losses."""
    return LOSS_DIAMETER


def tt_bound_value(
    L: int,
    H: int = 1,
    *,
    dense: bool = False,
    bias: bool = False,
    row_norm: bool = False,
    multiclass: bool = False,
):
    """The value of :prf:ref:`thm-tt-multilayer` (one layer without dense map: :prf:ref:`thm-tt-single-layer`)
    as one sympy expression of the radii, assembled from the statement's parts only:

    ``value = 2 min(D, 1/2) + 3 sqrt(log(2/delta)/(2m))`` (:func:`genbound.symbolic.rademacher.generalization_gap`),
    ``D`` the inverse-square Dudley bound (:func:`genbound.symbolic.dudley.inverse_square_objective` at the
    clipped minimiser :func:`~genbound.symbolic.dudley.inverse_square_alpha`) at diameter ``1/2`` for
    ``log N <= L_loss^2 A/eps^2 + Lambda``, ``A = (sum_j c_j^{2/3})^3`` (``ALLOCATION_EXPONENTS`` of
    :mod:`genbound.symbolic.allocation`), ``c_j`` = :func:`cover_constant` of :func:`unrolled_sensitivities`, the
    ``||.||_{1,1}`` radius and ``log(2 d_in d_out)``, with :data:`PROPER_FACTOR` where the proof needs a
    proper cover (``S < B`` of every ``C``; of ``V`` below the last layer without ``Pi``), ``Lambda`` the sum
    of the ``log(2 d_in d_out)``, ``L_loss = 1/gamma`` (``2/gamma`` with ``multiclass``).

    Returns ``(expr, symbols)`` with ``symbols`` a dict name -> symbol (names as in
    :class:`genbound.bounds.trauger_tewari.LayerRadii`: ``B_QK[l,h]``, ``S_V[l,h]``, ``B_C[l]``, ... and
    ``B_X, B_w, d, out_dim, m, delta, gamma, L_sigma, kappa``).
    """

    A_loss, Lam_cover, names = tt_loss_cover(
        L, H, dense=dense, bias=bias, row_norm=row_norm, multiclass=multiclass
    )
    cc = LOSS_DIAMETER
    sub = {sd.A: A_loss, sd.Lam: Lam_cover, sd.m: srad.m, sd.c: cc}
    a_star = sd.inverse_square_alpha()
    denom = sp.sqrt(sd.m) - sd.inverse_square_alpha_coef() * sp.sqrt(sd.Lam)
    al = sp.Piecewise((cc / 2, denom.subs(sub) <= 0), (sp.Min(a_star.subs(sub), cc / 2), True))
    D = sd.inverse_square_objective().subs(sub).subs(sd.alpha, al)
    value = srad.generalization_gap().subs({srad.R: sp.Min(D, _trivial_cap()), srad.b: 1})
    return value, names


def tt_loss_cover(
    L: int,
    H: int = 1,
    *,
    dense: bool = False,
    bias: bool = False,
    row_norm: bool = False,
    multiclass: bool = False,
):
    """``(A_loss, Lambda, names)``: ``log N(eps) <= A_loss/eps^2 + Lambda`` of the ramp-loss class of
    :prf:ref:`thm-tt-multilayer` (see :func:`tt_bound_value` for the parts and ``names``)."""

    layers, rho = unrolled_sensitivities(L, H, dense=dense, bias=bias, row_norm=row_norm)
    d, k = sp.symbols("d out_dim", positive=True, integer=True)
    gamma = sp.Symbol("gamma", positive=True)
    din = d + (1 if bias else 0)
    names = {
        "B_X": B_X,
        "B_w": B_w,
        "d": d,
        "out_dim": k,
        "m": srad.m,
        "delta": srad.delta,
        "gamma": gamma,
        "L_sigma": L_sigma,
        "kappa": kappa,
    }
    consts = []  # (c_j, log_atoms_j)
    for l, (sv, sq, eq, ev, sc, ec) in enumerate(layers, start=1):
        for h in range(H):
            bqk = sp.Symbol(f"B_QK{l}_{h + 1}", positive=True)
            bv = sp.Symbol(f"B_V{l}_{h + 1}", positive=True)
            names.update(
                {
                    f"B_QK[{l},{h + 1}]": bqk,
                    f"S_QK[{l},{h + 1}]": sq[h],
                    f"B_V[{l},{h + 1}]": bv,
                    f"S_V[{l},{h + 1}]": sv[h],
                }
            )
            consts.append(
                (cover_constant(rho[eq[h]], bqk, sp.log(2 * din * din)), sp.log(2 * din * din))
            )
            fv = (
                sp.Piecewise((PROPER_FACTOR, sv[h] < bv), (1, True))
                if (not row_norm and l < L)
                else 1
            )
            consts.append(
                (cover_constant(rho[ev[h]], bv, sp.log(2 * din * d), fv), sp.log(2 * din * d))
            )
        if sc is not None:
            bc = sp.Symbol(f"B_C{l}", positive=True)
            names.update({f"B_C[{l}]": bc, f"S_C[{l}]": sc})
            fc = sp.Piecewise((PROPER_FACTOR, sc < bc), (1, True))
            consts.append(
                (cover_constant(rho[ec], bc, sp.log(2 * din * d), fc), sp.log(2 * din * d))
            )
    consts.append((cover_constant(rho["eta_w"], B_w, sp.log(2 * din * k)), sp.log(2 * din * k)))
    p_cost, _, outer = ALLOCATION_EXPONENTS
    A_cover = sum((cj**2) ** p_cost for cj, _ in consts) ** outer
    Lam_cover = sum(la for _, la in consts)
    L_loss = (MARGIN_LIPSCHITZ_MULTICLASS if multiclass else 1) / gamma
    return L_loss**2 * A_cover, Lam_cover, names


def zhang_smooth_log_cover(a, b, eta, n):
    """:func:`zhang_log_cover_expr` with ``ceil(x) <= x + 1``: ``36 a^2 b^2/eta^2 log(2 (4ab/eta + 3) n + 1)``, smooth
    in ``eta`` (the form the Edelman-type bound integrates)."""
    expr = zhang_log_cover_expr(a, b, eta, n)
    return expr.replace(sp.ceiling, lambda x: x + 1)


def edelman_bound_parts(
    H: int = 1,
    *,
    dense: bool = True,
    bias: bool = False,
    row_norm: bool = False,
    multiclass: bool = False,
):
    """The parts of :prf:ref:`thm-edelman-type` as sympy expressions of the radii (names as in
    :class:`genbound.bounds.edelman.EdelmanLayerRadii`: ``F_QK[h]``, ``B_V21[h]``, ``S_V[h]``, ``B_C21``,
    ``S_C``, and ``B_X, B_w21, S_w, d, out_dim, m, T, gamma, L_sigma, kappa``), for the loss class:

    * ``maps``: per value, dense and readout map ``(C_j, log_atoms_j)`` with ``C_j`` = :func:`cover_constant`
      of ``L_loss rho_j`` (:func:`edelman_single_layer_sensitivities`) times the map's input radius, its
      ``(2,1)`` radius and :data:`PROPER_FACTOR` where ``S < B``; a part costs ``C_j^2/eps_j^2 + log_atoms_j``;
    * ``zhang``: per head ``(rho, a, b, n)`` of its score class, costing
      ``zhang_smooth_log_cover(a, b, eps_j / rho, n)`` (:func:`zhang_smooth_log_cover`), ``n = m T``;
    * ``eps_j``, ``C``: a symbol for each part's scale; the cover is the sum of the parts at any split
      ``sum_j eps_j = eps``.

    Returns ``(maps, zhang, names)``."""
    S_w = sp.Symbol("S_w", positive=True)
    B_w21 = sp.Symbol("B_w21", positive=True)
    d, k, Tn, gamma = sp.symbols("d out_dim T gamma", positive=True)

    rho = edelman_single_layer_sensitivities(H, dense=dense, bias=bias)
    L_loss = (MARGIN_LIPSCHITZ_MULTICLASS if multiclass else 1) / gamma
    sv = sp.symbols(f"S_V1_1:{H + 1}", positive=True)
    names = {
        "B_X": B_X,
        "B_w21": B_w21,
        "S_w": S_w,
        "d": d,
        "out_dim": k,
        "m": srad.m,
        "T": Tn,
        "gamma": gamma,
        "L_sigma": L_sigma,
        "kappa": kappa,
    }
    din = d + (1 if bias else 0)
    Bt = aug(B_X, bias)
    maps, zhang = {}, {}
    for h in range(H):
        F = sp.Symbol(f"F_QK{h + 1}", positive=True)
        b21 = sp.Symbol(f"B_V21_{h + 1}", positive=True)
        names.update({f"F_QK[{h}]": F, f"B_V21[{h}]": b21, f"S_V[{h}]": sv[h]})
        zhang[f"QK[{h + 1}]"] = (L_loss * rho[f"QK{h + 1}"], Bt**2, F, srad.m * Tn)
        fv = sp.Piecewise((PROPER_FACTOR, sv[h] < b21), (1, True))
        maps[f"V[{h + 1}]"] = (
            cover_constant(L_loss * rho[f"V{h + 1}"] * Bt, b21, sp.log(2 * din * d), fv),
            sp.log(2 * din * d),
        )
    R = L_sigma * sum(sv) * Bt
    if dense:
        bc, sc = sp.Symbol("B_C21", positive=True), sp.Symbol("S_C1", positive=True)
        names.update({"B_C21": bc, "S_C": sc})
        fc = sp.Piecewise((PROPER_FACTOR, sc < bc), (1, True))
        maps["C"] = (
            cover_constant(L_loss * rho["C"] * aug(R, bias), bc, sp.log(2 * din * d), fc),
            sp.log(2 * din * d),
        )
        B1 = sc * aug(R, bias)
    else:
        B1 = R
    B1 = sp.Integer(1) if row_norm else B1
    maps["w"] = (
        cover_constant(L_loss * rho["w"] * aug(B1, bias), B_w21, sp.log(2 * din * k)),
        sp.log(2 * din * k),
    )
    return maps, zhang, names
