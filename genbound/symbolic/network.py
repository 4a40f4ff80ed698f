"""Sympy derivations behind theorem P, the proved network bound (:ref:`ch-sa-network`).

No torch here. Each constant of :mod:`genbound.bounds.network` and of the two covering facts it uses
(:func:`genbound.covering.rank_net_log_cover`, :func:`genbound.covering.sudakov_log_cover`) is derived from
its premise; ``tests/symbolic/test_network_symbolic.py`` compares them with the numeric code.

>>> from genbound.symbolic import network as sn
>>> sn.rank_net_base(), sn.dudley_top(), sn.proper_cover_factor(), sn.prior_total()
(9, 1/4, 2, 1)
>>> sn.sudakov_constant()
2*pi*log(2)
>>> sn.verify_p0_antiderivative(), sn.verify_gaussian_max_at_two()
(True, True)
"""

from __future__ import annotations

from functools import lru_cache

import sympy as sp

from . import sakai_imaizumi as ssi

__all__ = [
    "eps",
    "b",
    "A",
    "rank_net_base",
    "sudakov_constant",
    "verify_gaussian_max_at_two",
    "proper_cover_factor",
    "dudley_top",
    "prior_total",
    "p0_antiderivative",
    "verify_p0_antiderivative",
    "p0_integral",
    "hybrid_sensitivity",
]

eps, b, A, eta, w = sp.symbols("epsilon b A eta w", positive=True)


@lru_cache(maxsize=None)  # a derivation without arguments: derived once per process
def rank_net_base() -> sp.Integer:
    """The ``9`` of the rank-``r`` net ``(9 R / eps)^{(N+N'+1) r}`` (Candes and Plan 2011, Lemma 3.1).

    Premises: a matrix of rank ``r`` is ``U Sigma V^T``, each factor in a unit ball of its norm; each
    factor is covered at radius ``eps / 3`` (three errors add up to ``eps``), and a unit ball of ``R^d`` has an
    ``eta``-net of ``(C / eta)^d`` points for ``eta <= 1`` with ``C`` the least constant such that
    ``1 + 2/eta <= C/eta`` on ``(0, 1]`` (the volumetric count). sympy finds ``C = 3``; then ``C / (eps/3)``.
    (The volumetric count allows ``7`` at the radius 1, but the cited lemma states ``9``; the code uses 9.)
    """
    x = sp.Symbol("x", positive=True)
    C = sp.maximum(x * (1 + 2 / x), x, sp.Interval.Lopen(0, 1))  # = 3
    return sp.Integer(sp.simplify(C / (sp.Rational(1, 3))))


@lru_cache(maxsize=None)  # a derivation without arguments: derived once per process
def sudakov_constant() -> sp.Expr:
    """The ``2 pi log 2`` of Sudakov's minoration ``log M <= 2 pi log 2 (w / eta)^2``.

    Premises: an ``eta``-packing ``t_1..t_M`` of a set of Gaussian width ``w``; by Sudakov-Fernique the
    process ``<g, t_i>`` dominates ``(eta / sqrt 2) xi_i`` with ``xi`` i.i.d. standard (its increments are at
    least ``eta``); and ``E max xi_i >= sqrt(log M / (pi log 2))``. Solve ``(eta/sqrt 2) sqrt(lM/(pi log 2)) = w``
    for ``lM = log M`` and read off the coefficient of ``(w / eta)^2``."""
    lM = sp.Symbol("lM", positive=True)
    sol = sp.solve(sp.Eq(eta / sp.sqrt(2) * sp.sqrt(lM / (sp.pi * sp.log(2))), w), lM)[0]
    return sp.simplify(sol / (w / eta) ** 2)


@lru_cache(maxsize=None)  # a derivation without arguments: derived once per process
def verify_gaussian_max_at_two() -> bool:
    """``E max(g_1, g_2) = 1/sqrt(pi)``, which equals ``sqrt(log 2 / (pi log 2))``: the lower bound of the
    Gaussian maximum is attained at ``M = 2`` (``max(a, b) = (a + b + |a - b|)/2`` and ``a - b ~ N(0, 2)``)."""
    x = sp.Symbol("x", real=True)
    e_abs = sp.integrate(sp.Abs(x) * sp.exp(-(x**2) / 4) / sp.sqrt(4 * sp.pi), (x, -sp.oo, sp.oo))
    e_max = sp.simplify(e_abs / 2)
    return (
        sp.simplify(e_max - 1 / sp.sqrt(sp.pi)) == 0
        and sp.simplify(sp.sqrt(sp.log(2) / (sp.pi * sp.log(2))) - e_max) == 0
    )


@lru_cache(maxsize=None)  # a derivation without arguments: derived once per process
def proper_cover_factor() -> sp.Integer:
    """The ``2`` of a proper cover: each point ``y`` of an ``eps/2``-cover whose ball meets the class is
    replaced by a class member ``g`` within ``eps/2`` of it; a member ``f`` within ``eps/2`` of ``y`` is then within
    ``eps/2 + eps/2`` of ``g`` (triangle inequality). The factor is ``eps`` over the radius of the cover used."""
    r = sp.Symbol("r", positive=True)
    radius = sp.solve(sp.Eq(r + r, eps), r)[0]
    return sp.Integer(sp.simplify(eps / radius))


@lru_cache(maxsize=None)  # a derivation without arguments: derived once per process
def dudley_top() -> sp.Rational:
    """``c / 2`` of :prf:ref:`thm-dudley` for ramp losses: the losses take values in ``[0, 1]``, so each lies
    within ``c = max |l - 1/2| = 1/2`` of ``g_0 = 1/2`` (sympy maximises over ``[0, 1]``)."""
    l = sp.Symbol("l", real=True)
    c = sp.maximum(sp.Abs(l - sp.Rational(1, 2)), l, sp.Interval(0, 1))
    return sp.Rational(c) / 2


@lru_cache(maxsize=None)  # a derivation without arguments: derived once per process
def prior_total() -> sp.Expr:
    """``sum_k pi(k)`` of the prior on the integers, ``pi(0) = 1/2``, ``pi(k) = 1/(2(|k|+1)(|k|+2))``: 1."""
    k = sp.Symbol("k", integer=True, positive=True)
    return sp.Rational(1, 2) + 2 * sp.summation(1 / (2 * (k + 1) * (k + 2)), (k, 1, sp.oo))


def p0_antiderivative() -> sp.Expr:
    """``G(eps) = eps sqrt(log(b/eps)) + b (sqrt(pi)/2) erfc(sqrt(log(b/eps)))`` for ``0 < eps <= b``."""
    u = sp.log(b / eps)
    return eps * sp.sqrt(u) + b * sp.sqrt(sp.pi) / 2 * sp.erfc(sp.sqrt(u))


@lru_cache(maxsize=None)  # a derivation without arguments: derived once per process
def verify_p0_antiderivative() -> bool:
    """``G' = sqrt(log(b/eps))`` on ``(0, b)`` and ``G(0+) = 0``: so ``int_0^e sqrt(A log(b/x)) dx = sqrt(A) G(e)``
    (substituting ``eps = b e^{-t}``, checked at ``b = 1``)."""
    G = p0_antiderivative()
    d = sp.simplify(sp.diff(G, eps) - sp.sqrt(sp.log(b / eps)))
    t = sp.Symbol("t", positive=True)
    d_t = sp.simplify(d.subs(eps, b * sp.exp(-t)))
    lim = sp.limit(G.subs(b, 1), eps, 0, "+")
    return d_t == 0 and lim == 0


def p0_integral() -> sp.Expr:
    """``int_0^top sqrt(A log(b/eps)) d eps = sqrt(A) G(top)`` with ``top = 1/4`` (:func:`dudley_top`), the closed
    form of theorem P's integral when every matrix sits at ``p = 0`` and every ``b_a >= 1/4``."""
    return sp.sqrt(A) * p0_antiderivative().subs(eps, dudley_top())


def hybrid_sensitivity(kind: str) -> sp.Expr:
    """Sensitivity of one reference layer's output, per unit of ``max_t |v_t Delta|``, to one matrix, as the
    product of the steps of :prf:ref:`lem-p-hybrid-step` (``b``: the radius of the layer's input rows)."""
    C_V, C_in, C_out, L_phi, s_in = sp.symbols("C_V C_in C_out L_phi s_in", positive=True)
    ffn = L_phi * C_in * C_out  # projection (1), feed-forward block, projection (1)
    if (
        kind == "QK"
    ):  # score moves by |z_t Delta| b; weights by the softmax constant times that; values <= C_V b
        return ssi.SOFTMAX_L1_CONSTANT * b * (C_V * b) * ffn
    if kind == "V":  # a convex combination of the rows z_s Delta
        return ffn
    if kind == "M_in":  # GELU is L_phi-Lipschitz, then M_out
        return L_phi * C_out
    if (
        kind == "M_out"
    ):  # the hidden rows (radius s_in) enter through the vectors; the projection is 1-Lipschitz
        return sp.Integer(1)
    raise ValueError(f"unknown kind {kind!r}")
