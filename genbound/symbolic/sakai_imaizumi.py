"""Sympy derivations behind Part III chapters 2-4 (the spectrum-adaptive bound of Sakai & Imaizumi).

No torch here. Each ``verify_*`` returns ``True`` when sympy proves the step; the expressions returned
by the other functions are evaluated by the tests and compared with :mod:`genbound.schatten_entropy`.

* :ref:`ch-sa-entropy`: the threshold optimisation ``inf_tau sqrt(N M) tau**(-p/2) + S N tau =
  c_p M**(1/(p+2)) S**(p/(p+2)) N**((p+1)/(p+2))`` with ``c_p = ((p+2)/p) (p/2)**(2/(p+2))`` in ``[1, 2]``,
  the entropy form ``k_p`` (equal to ``c_p``) and its Dudley integral.
* :ref:`ch-sa-deep`: the Lipschitz peeling constants ``C_V (1 + 4 C_QK)`` and the per-matrix sensitivities,
  derived from sympy's derivatives of the head and the feed-forward block (the 4 is the softmax constant
  2, itself derived by the triangle inequality, times the 2 terms of a score's derivative), and the
  cost of rounding ``p`` to the grid.
* :ref:`ch-sa-examples`: when ``p = 0`` wins.

>>> from genbound.symbolic import sakai_imaizumi as si
>>> si.c_p().subs(si.p, 2), si.sp.limit(si.c_p(), si.p, 0, "+")
(2, 1)
>>> si.verify_threshold_optimum(), si.verify_cp_equals_kp(), si.verify_head_lipschitz()
(True, True, True)
"""

from __future__ import annotations

import sympy as sp
from . import softmax as ss

__all__ = [
    "p",
    "tau",
    "eps",
    "M",
    "S",
    "N",
    "B",
    "D",
    "C_QK",
    "C_V",
    "C_in",
    "C_out",
    "L_phi",
    "threshold_objective",
    "optimal_threshold",
    "c_p",
    "per_matrix_closed_form",
    "verify_threshold_optimum",
    "verify_threshold_convex",
    "verify_cp_limits",
    "verify_cp_increasing",
    "entropy_objective",
    "entropy_optimal_threshold",
    "k_p",
    "entropy_closed_form",
    "verify_entropy_optimum",
    "verify_cp_equals_kp",
    "dudley_integral",
    "verify_dudley_integral",
    "entropy_exponent",
    "verify_entropy_exponent_range",
    "capacity_factor",
    "verify_capacity_factor",
    "SOFTMAX_L1_CONSTANT",
    "SCORE_OCCURRENCES",
    "head_sensitivity",
    "head_lipschitz",
    "verify_head_lipschitz",
    "ffn_sensitivity",
    "layer_lipschitz",
    "gamma_derived",
    "GAMMA_STATED",
    "verify_gamma_derivation",
    "gamma_authors",
    "gamma_ratio",
    "log_term",
    "dlog_term_dp",
    "verify_dlog_term_dp",
    "verify_dlog_term_dp_full",
    "grid_size",
    "grid_rounding_cost",
    "p0_gap_lower_bound",
    "verify_p0_gap",
    "p0_scale_threshold",
]

p = sp.Symbol("p", positive=True)
tau, eps = sp.symbols("tau epsilon", positive=True)
M, S, N, B, D = sp.symbols("M S N B D", positive=True)
C_QK, C_V, C_in, C_out, L_phi = sp.symbols("C_QK C_V C_in C_out L_phi", positive=True)


# --------------------------------------------------------------------------- chapter 2: threshold


def threshold_objective():
    """``sqrt(N M) tau**(-p/2) + S N tau``: counted part (``sqrt(N r(tau))`` with ``r(tau) <= M tau**(-p)``)
    plus the residual part of one matrix with Schatten power ``M``, scale ``S`` and width ``N``."""
    return sp.sqrt(N * M) * tau ** (-p / 2) + S * N * tau


def optimal_threshold():
    """The minimiser ``tau* = (p sqrt(N M) / (2 S N))**(2/(p+2))`` (root of the derivative)."""
    return (p * sp.sqrt(N * M) / (2 * S * N)) ** (2 / (p + 2))


def c_p(q=None):
    """The constant ``c_p = ((p+2)/p) (p/2)**(2/(p+2))`` (``p`` may be substituted by ``q``)."""
    expr = (p + 2) / p * (p / 2) ** (2 / (p + 2))
    return expr if q is None else expr.subs(p, q)


def per_matrix_closed_form():
    """``c_p M**(1/(p+2)) S**(p/(p+2)) N**((p+1)/(p+2))``, the value of the objective at ``tau*``."""
    return c_p() * M ** (1 / (p + 2)) * S ** (p / (p + 2)) * N ** ((p + 1) / (p + 2))


def _same(a, b) -> bool:
    """``a == b`` for positive expressions: compare logs after full expansion, then numerically."""
    diff = sp.simplify(sp.expand_log(sp.log(a), force=True) - sp.expand_log(sp.log(b), force=True))
    if diff == 0:
        return True
    # fall back to a high-precision evaluation at several rational points
    pts = [
        {
            p: sp.Rational(1, 7),
            tau: sp.Rational(3, 5),
            eps: sp.Rational(1, 9),
            M: 3,
            S: 11,
            N: 5,
            B: 2,
            D: sp.Rational(7, 10),
        },
        {
            p: sp.Rational(3, 2),
            tau: 2,
            eps: sp.Rational(2, 3),
            M: sp.Rational(1, 4),
            S: 7,
            N: 13,
            B: 1,
            D: 3,
        },
        {p: 2, tau: sp.Rational(1, 3), eps: 5, M: 17, S: sp.Rational(1, 10), N: 2, B: 3, D: 1},
    ]
    return all(abs(sp.N(diff.subs(v), 40)) < 1e-30 for v in pts)


def verify_threshold_optimum() -> bool:
    """The derivative vanishes at ``tau*`` and the objective there equals :func:`per_matrix_closed_form`."""
    f = threshold_objective()
    t = optimal_threshold()
    d = sp.diff(f, tau)  # = S N - (p/2) sqrt(N M) tau**(-p/2 - 1)
    zero = _same(S * N - d.subs(tau, t), S * N)  # f'(tau*) = 0, compared as positive expressions
    return zero and _same(f.subs(tau, t), per_matrix_closed_form())


def verify_threshold_convex() -> bool:
    """The objective is convex in ``tau`` (its second derivative is a positive monomial), so ``tau*`` is the
    global minimiser."""
    f2 = sp.simplify(sp.diff(threshold_objective(), tau, 2))
    expected = sp.sqrt(N * M) * (p / 2) * (p / 2 + 1) * tau ** (-p / 2 - 2)
    return sp.simplify(f2 - expected) == 0 and bool(sp.ask(sp.Q.positive(expected)))


def verify_cp_limits() -> bool:
    """``c_p -> 1`` as ``p -> 0+``, ``c_1 = (3/2) 2**(1/3)`` and ``c_2 = 2``."""
    return (
        sp.limit(c_p(), p, 0, "+") == 1
        and sp.simplify(c_p(1) - sp.Rational(3, 2) * sp.cbrt(2)) == 0
        and sp.simplify(c_p(2)) == 2
    )


def verify_cp_increasing() -> bool:
    """``d/dp log c_p = -2 log(p/2) / (p+2)**2``, which is ``>= 0`` on ``(0, 2]``: ``c_p`` increases from 1 to 2."""
    d = sp.diff(sp.expand_log(sp.log(c_p()), force=True), p)
    return sp.simplify(d + 2 * sp.log(p / 2) / (p + 2) ** 2) == 0


# --------------------------------------------------------------------------- chapter 2: entropy form


def entropy_objective():
    """Two-piece entropy with the log dropped: ``M N tau**(-p) + (S N tau B / eps)**2``."""
    return M * N * tau ** (-p) + (S * N * tau * B / eps) ** 2


def entropy_optimal_threshold():
    """Minimiser of :func:`entropy_objective`: ``tau**(p+2) = p M N eps**2 / (2 (S N B)**2)``."""
    return (p * M * N * eps**2 / (2 * (S * N * B) ** 2)) ** (1 / (p + 2))


def k_p(q=None):
    """``k_p = (1 + p/2) (2/p)**(p/(p+2))`` (equal to ``c_p``)."""
    expr = (1 + p / 2) * (2 / p) ** (p / (p + 2))
    return expr if q is None else expr.subs(p, q)


def entropy_exponent():
    """The entropy exponent ``2p/(p+2)``: ``log N(eps) ~ eps**(-2p/(p+2))``."""
    return 2 * p / (p + 2)


def entropy_closed_form():
    """``k_p Theta_p**2 eps**(-2p/(p+2))`` with ``Theta_p = M**(1/(p+2)) (S B)**(p/(p+2)) N**((p+1)/(p+2))``."""
    theta = M ** (1 / (p + 2)) * (S * B) ** (p / (p + 2)) * N ** ((p + 1) / (p + 2))
    return k_p() * theta**2 * eps ** (-entropy_exponent())


def verify_entropy_optimum() -> bool:
    """The entropy objective at its minimiser equals :func:`entropy_closed_form`, and it is stationary there."""
    f = entropy_objective()
    t = entropy_optimal_threshold()
    stationary = _same(p * M * N * t ** (-p - 1), 2 * (S * N * B / eps) ** 2 * t)
    return stationary and _same(f.subs(tau, t), entropy_closed_form())


def verify_cp_equals_kp() -> bool:
    """``c_p = k_p`` for every ``p > 0``."""
    return _same(c_p(), k_p())


def dudley_integral():
    """``int_0^D sqrt(k_p Theta_p**2 eps**(-2p/(p+2))) d eps`` evaluated by sympy (it converges at 0)."""
    return sp.integrate(sp.sqrt(entropy_closed_form()), (eps, 0, D), conds="none")


def verify_dudley_integral() -> bool:
    """The integral equals ``sqrt(k_p) Theta_p ((p+2)/2) D**(2/(p+2))``."""
    theta = M ** (1 / (p + 2)) * (S * B) ** (p / (p + 2)) * N ** ((p + 1) / (p + 2))
    expected = sp.sqrt(k_p()) * theta * (p + 2) / 2 * D ** (2 / (p + 2))
    return _same(sp.simplify(dudley_integral()), expected)


def capacity_factor():
    """``kappa_p``: the Dudley integral of :func:`entropy_closed_form` up to ``D = 1`` divided by ``Theta_p``
    (sympy's integral with ``M = S = B = N = D = 1``); :prf:ref:`prop-sa-capacity`."""
    return sp.simplify(dudley_integral().subs({M: 1, S: 1, B: 1, N: 1, D: 1}))


def verify_capacity_factor() -> bool:
    """``kappa_p = sqrt(c_p) (p + 2) / 2``, ``kappa_p -> 1`` as ``p -> 0``, ``kappa_2 = 2 sqrt(2)``, and
    ``kappa_p`` increases on ``(0, 2]`` (so ``1 <= kappa_p <= 2 sqrt(2)``)."""
    k = capacity_factor()
    same = _same(k, sp.sqrt(c_p()) * (p + 2) / 2)
    ends = sp.limit(k, p, 0, "+") == 1 and sp.simplify(k.subs(p, 2) - 2 * sp.sqrt(2)) == 0
    # log kappa = log(c_p)/2 + log((p+2)/2); both parts increase (c_p increases: verify_cp_increasing)
    dlog = sp.diff(sp.log((p + 2) / 2), p)
    return bool(same and ends and verify_cp_increasing() and sp.simplify(dlog - 1 / (p + 2)) == 0)


def verify_entropy_exponent_range() -> bool:
    """``2p/(p+2)`` increases from 0 (``p = 0``) to 1 (``p = 2``), so it stays below 2 and Dudley converges."""
    e = entropy_exponent()
    return (
        sp.limit(e, p, 0, "+") == 0
        and e.subs(p, 2) == 1
        and sp.simplify(sp.diff(e, p) - 4 / (p + 2) ** 2) == 0
    )


# --------------------------------------------------------------------------- chapter 3: peeling


def _softmax():

    return ss


#: The softmax estimate ``||softmax(a) - softmax(b)||_1 <= 2 ||a - b||_inf`` used by the authors' alpha:
#: the triangle-inequality bound on the softmax Jacobian, derived by
#: :func:`genbound.symbolic.softmax.softmax_triangle_constant` (the tight constant is 1).
SOFTMAX_L1_CONSTANT = _softmax().softmax_triangle_constant()
#: ``X`` appears twice in the scores ``X W_QK X^T``: the number of terms sympy finds in the derivative of a
#: score under a perturbation of ``X`` (:func:`genbound.symbolic.softmax.score_occurrences`).
SCORE_OCCURRENCES = _softmax().score_occurrences()


def head_sensitivity(perturbed: str, softmax_constant=None):
    """Sensitivity of one head ``softmax(X W_QK X^T) X W_V`` (rows in the unit ball, max-row norm) to a
    perturbation of ``perturbed`` in ``{"X", "QK", "V"}``, derived from sympy's derivative of the head
    (:func:`genbound.symbolic.softmax.attention_sensitivity` with rows of norm 1, ``C_QK``, ``C_V`` and the
    softmax constant of the authors, :data:`SOFTMAX_L1_CONSTANT`)."""
    k = SOFTMAX_L1_CONSTANT if softmax_constant is None else softmax_constant
    return _softmax().attention_sensitivity(
        perturbed, kappa_=k, row=sp.Integer(1), S_QK_=C_QK, S_V_=C_V
    )


def head_lipschitz(softmax_constant=None):
    """Input-Lipschitz constant of one head: :func:`head_sensitivity` for a perturbation of ``X``,
    ``C_V (1 + 4 C_QK)`` with the authors' softmax constant 2 (the 4 = 2 x :data:`SCORE_OCCURRENCES`;
    softmax constant of :prf:ref:`lem-sa-softmax-l1`)."""
    return head_sensitivity("X", softmax_constant)


def verify_head_lipschitz() -> bool:
    """The derived head constant is the one the authors' ``alpha`` uses, ``C_V (1 + 4 C_QK)``."""
    return sp.expand(head_lipschitz() - C_V * (1 + 4 * C_QK)) == 0


def ffn_sensitivity(perturbed: str, *, gelu: bool = True):
    """Sensitivity of the feed-forward block ``Pi(phi(z M_in) M_out)`` (input row ``||z|| <= 1`` after the
    first ``Pi``) to ``perturbed`` in ``{"input", "M_in", "M_out"}``, from sympy's derivative.

    The derivative of ``phi(z M_in) M_out`` is bounded term by term (:func:`genbound.symbolic.softmax.bound_terms`):
    ``phi'`` by ``L_phi``, ``phi(u)`` by ``|u|`` (GELU: ``|u Phi(u)| <= |u|``; a general ``L_phi``-Lipschitz
    ``phi`` with ``phi(0) = 0`` by ``L_phi |u|``), ``||z|| <= 1``, ``||M_in|| <= C_in``, ``||M_out|| <= C_out``;
    ``Pi`` is 1-Lipschitz."""
    z, mi, mo, dz, dmi, dmo, e = sp.symbols("z m_in m_out dz dm_in dm_out e", real=True)
    phi = sp.Function("phi")
    shift = {"input": {z: z + e * dz}, "M_in": {mi: mi + e * dmi}, "M_out": {mo: mo + e * dmo}}
    if perturbed not in shift:
        raise KeyError(f"perturbed must be one of {sorted(shift)}, got {perturbed!r}")
    out = (phi(z * mi) * mo).xreplace(shift[perturbed])
    d = sp.diff(out, e).subs(e, 0).doit()
    d = d.replace(lambda x: isinstance(x, (sp.Subs, sp.Derivative)), lambda x: L_phi)
    d = d.replace(phi, lambda u: u if gelu else L_phi * u)
    return _softmax().bound_terms(d, {z: 1, mi: C_in, mo: C_out, dz: 1, dmi: 1, dmo: 1})


def layer_lipschitz(n_heads: int = 1):
    """One layer ``Pi o FFN o Pi o sum_h head_h``: the FFN's input sensitivity times the sum of the heads'
    input-Lipschitz constants, ``L_phi C_in C_out sum_h C_V,h (1 + 4 C_QK,h)``."""
    ffn = ffn_sensitivity("input")
    if n_heads == 1:
        return sp.expand(ffn * head_lipschitz())
    cv = sp.symbols(f"C_V0:{n_heads}", positive=True)
    cq = sp.symbols(f"C_QK0:{n_heads}", positive=True)
    return sp.expand(ffn * sum(head_lipschitz().subs({C_V: v, C_QK: q}) for v, q in zip(cv, cq)))


def gamma_derived(kind: str, *, gelu: bool = True):
    """Sensitivity of a layer's output to one of its matrices, derived for the reconstructed layer:
    ``QK`` and ``V`` through the head (:func:`head_sensitivity`) then the FFN (:func:`ffn_sensitivity` of its
    input), ``M_in`` and ``M_out`` through the FFN alone. Result: ``2 L_phi C_V C_in C_out``,
    ``L_phi C_in C_out``, ``L_phi C_out`` and ``C_in`` (GELU; ``L_phi C_in`` for a general ``phi``)."""
    table = {
        "QK": lambda: head_sensitivity("QK") * ffn_sensitivity("input", gelu=gelu),
        "V": lambda: head_sensitivity("V") * ffn_sensitivity("input", gelu=gelu),
        "M_in": lambda: ffn_sensitivity("M_in", gelu=gelu),
        "M_out": lambda: ffn_sensitivity("M_out", gelu=gelu),
    }
    if kind not in table:
        raise KeyError(f"kind must be one of {sorted(table)}, got {kind!r}")
    return sp.expand(table[kind]())


#: The sensitivities as the book's lemma states them (checked against :func:`gamma_derived`).
GAMMA_STATED = {
    "QK": 2 * L_phi * C_V * C_in * C_out,
    "V": L_phi * C_in * C_out,
    "M_in": L_phi * C_out,
    "M_out": C_in,
}


def verify_gamma_derivation() -> bool:
    """The derived sensitivities are the ones :prf:ref:`lem-sa-matrix-sensitivity` states."""
    return all(sp.expand(gamma_derived(k) - v) == 0 for k, v in GAMMA_STATED.items())


def gamma_authors(kind: str):
    """The ``gamma`` of the authors' code: ``2 C_V C_out C_in``, ``C_out C_in``, ``C_out``, ``1``."""
    return {"QK": 2 * C_V * C_out * C_in, "V": C_out * C_in, "M_in": C_out, "M_out": sp.Integer(1)}[
        kind
    ]


def gamma_ratio(kind: str, *, gelu: bool = True):
    """``gamma_derived / gamma_authors``: what the authors' code leaves out (``L_phi``, and ``C_in`` for
    ``M_out``)."""
    return sp.simplify(gamma_derived(kind, gelu=gelu) / gamma_authors(kind))


# --------------------------------------------------------------------------- chapter 3: the grid


def log_term():
    """``log T(p) = [log M + p log S + (p+1) log N] / (p+2)`` (the authors' summand, without ``c_p``)."""
    return (sp.log(M) + p * sp.log(S) + (p + 1) * sp.log(N)) / (p + 2)


def dlog_term_dp():
    """``d/dp log T`` at fixed ``M``: ``(2 log S + log N - log M) / (p+2)**2``."""
    return (2 * sp.log(S) + sp.log(N) - sp.log(M)) / (p + 2) ** 2


def verify_dlog_term_dp() -> bool:
    """sympy differentiates :func:`log_term` and finds :func:`dlog_term_dp`."""
    return sp.simplify(sp.diff(log_term(), p) - dlog_term_dp()) == 0


def verify_dlog_term_dp_full() -> bool:
    """With the Schatten power a function ``M(p)`` of ``p``, ``d/dp log T =
    [(p+2) M'(p)/M(p) - log M(p) + 2 log S + log N] / (p+2)**2``; the bound of :func:`grid_rounding_cost`
    follows from ``|M'/M| <= Lambda`` and ``|log M(p)| <= log k + p Lambda``."""
    Mf = sp.Function("M")(p)
    lt = (sp.log(Mf) + p * sp.log(S) + (p + 1) * sp.log(N)) / (p + 2)
    expected = ((p + 2) * sp.diff(Mf, p) / Mf - sp.log(Mf) + 2 * sp.log(S) + sp.log(N)) / (
        p + 2
    ) ** 2
    return sp.simplify(sp.diff(lt, p) - expected) == 0


def grid_size(L, N_):
    """``m = ceil(L + ln max(N, 2))`` and the grid ``P_m = {0, 1/m, ..., 2}`` has ``2m + 1`` points."""
    m = sp.ceiling(L + sp.log(sp.Max(N_, 2)))
    return m, 2 * m + 1


def grid_rounding_cost():
    """Bound on ``log T(grid point) - log T(p)`` when ``p`` is rounded to the nearest of ``P_m``.

    With ``Lambda = max_i |log sigma_i|`` over the nonzero singular values and ``k`` their number,
    ``|d/dp log T| <= (6 Lambda + log k + 2 |log S| + log N) / 4`` on ``[0, 2]`` (the Schatten power moves
    with ``p`` too), and the nearest grid point is within ``1/(2m)``. Returns the expression in the symbols
    ``Lambda, k, logS_abs, m``.
    """
    Lam, k, logS_abs, m = sp.symbols("Lambda k logS_abs m", positive=True)
    return (6 * Lam + sp.log(k) + 2 * logS_abs + sp.log(N)) / (8 * m)


# --------------------------------------------------------------------------- chapter 4: when p = 0 wins


def p0_gap_lower_bound():
    """``[log r + p log(sigma_r) + p log S + (p+1) log N]/(p+2) - (log r + log N)/2``: a lower bound on
    ``log T(p) - log T(0)`` for a matrix of rank ``r`` whose smallest nonzero singular value is ``sigma_r``
    (it uses ``sum_i sigma_i**p >= r sigma_r**p``)."""
    r, sr = sp.symbols("r sigma_r", positive=True)
    return (sp.log(r) + p * sp.log(sr) + p * sp.log(S) + (p + 1) * sp.log(N)) / (p + 2) - (
        sp.log(r) + sp.log(N)
    ) / 2


def verify_p0_gap() -> bool:
    """The lower bound equals ``p/(p+2) * log(S sigma_r sqrt(N/r))``: nonnegative exactly when
    ``S sigma_r >= sqrt(r/N)``."""
    r, sr = sp.symbols("r sigma_r", positive=True)
    target = p / (p + 2) * sp.log(S * sr * sp.sqrt(N / r))
    return sp.simplify(sp.expand_log(p0_gap_lower_bound() - target, force=True)) == 0


def p0_scale_threshold():
    """``sqrt(r/N) / sigma_r``: at or above this scale, ``p = 0`` minimises ``T`` over ``[0, 2]``."""
    r, sr = sp.symbols("r sigma_r", positive=True)
    return sp.sqrt(r / N) / sr
