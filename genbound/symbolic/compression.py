"""Sympy behind Part VII (:mod:`genbound.bounds.compression`): the smoothed log-loss's range, the
smoothing's cost, the Occam penalty of the token-level (Azuma) and document-level (kl) bounds and the
bits of an entropy code.

>>> smoothed_range()
(-log(-alpha + 1 + alpha/V)/log(2), log(V*(1 - alpha)/alpha + 1)/log(2))
>>> verify_smoothed_loss_decreasing(), verify_smoothed_width(), verify_smoothing_cost()
(True, True, True)
>>> azuma_occam_deviation()
sqrt(2)*w*sqrt(C*log(2) + log(1/delta))/(2*sqrt(M))
>>> maurer_occam_rhs()
(C*log(2) + log(2*sqrt(m)/delta))/m
>>> verify_entropy_code_bits(), verify_kraft_union()
(True, True)
"""

from __future__ import annotations

import mpmath
import sympy as sp

__all__ = [
    "smoothed_loss",
    "smoothed_range",
    "verify_smoothed_loss_decreasing",
    "verify_smoothed_width",
    "verify_smoothing_cost",
    "azuma_occam_deviation",
    "maurer_occam_rhs",
    "verify_entropy_code_bits",
    "verify_kraft_union",
    "cramer_bernoulli_bound",
    "verify_cramer_sup_is_kl",
    "bernstein_occam_bound",
    "verify_fan_inequality",
]

alpha, V, p = sp.symbols("alpha V p", positive=True)
C, M, m, w, t, delta = sp.symbols("C M m w t delta", positive=True)
lam, q, r, eps, v, K = sp.symbols("lambda q r epsilon v K", positive=True)


def smoothed_loss(pp=p) -> sp.Expr:
    """``-log2((1 - alpha) p + alpha / V)``: the log-loss of the mixture with the uniform distribution."""
    return -sp.log((1 - alpha) * pp + alpha / V) / sp.log(2)


def verify_smoothed_loss_decreasing() -> bool:
    """``d/dp`` of the smoothed loss is ``-(1 - alpha) / (((1 - alpha) p + alpha / V) ln 2) < 0`` for
    ``alpha < 1``: its extremes are at ``p = 1`` (least) and ``p = 0`` (largest)."""
    d = sp.diff(smoothed_loss(), p)
    want = -(1 - alpha) / (((1 - alpha) * p + alpha / V) * sp.log(2))
    a = sp.Symbol("a", positive=True)  # alpha = 1 / (1 + a) spans (0, 1)
    neg = sp.simplify(want.subs(alpha, 1 / (1 + a))).is_negative
    return sp.simplify(d - want) == 0 and bool(neg)


def smoothed_range() -> tuple[sp.Expr, sp.Expr]:
    """``(lo, width)``: ``lo`` the loss at ``p = 1``, ``width`` the loss at ``p = 0`` minus ``lo``,
    simplified to ``log2(1 + (1 - alpha) V / alpha)``."""
    lo = smoothed_loss(1)
    width = sp.log(1 + (1 - alpha) * V / alpha) / sp.log(2)
    return lo, width


def verify_smoothed_width() -> bool:
    """``loss(0) - loss(1) = log2(1 + (1 - alpha) V / alpha)`` (exactly: ``2**`` of both sides agree)."""
    lo, width = smoothed_range()
    diff = smoothed_loss(0) - lo
    return (
        sp.simplify(sp.expand_log(sp.exp(diff * sp.log(2)) - sp.exp(width * sp.log(2)), force=True))
        == 0
    )


def verify_smoothing_cost() -> bool:
    """``smoothed(p) - (-log2 p) = -log2(1 - alpha + alpha / (V p))``, which is at most
    ``-log2(1 - alpha)`` since ``alpha / (V p) >= 0``: smoothing costs at most ``-log2(1 - alpha)`` bits
    per character."""
    cost = smoothed_loss() + sp.log(p) / sp.log(2)
    want = -sp.log(1 - alpha + alpha / (V * p)) / sp.log(2)
    same = sp.simplify(sp.expand_log(sp.exp((cost - want) * sp.log(2)), force=True)) == 1
    gap = want - (-sp.log(1 - alpha) / sp.log(2))  # <= 0
    a = sp.Symbol("a", positive=True)
    arg = sp.simplify(((1 - alpha + alpha / (V * p)) / (1 - alpha)).subs(alpha, 1 / (1 + a)))
    return bool(same) and bool((arg - 1).is_positive) and gap.has(alpha)


def azuma_occam_deviation() -> sp.Expr:
    """Solve Azuma's tail ``exp(-2 M t**2 / w**2) = delta 2**-C`` (differences in an interval of width
    ``w``, ``M`` steps; the confidence ``delta`` shared by Kraft's prior ``2**-C``) for the deviation ``t``."""
    sols = sp.solve(sp.Eq(-2 * M * t**2 / w**2, sp.log(delta) - C * sp.log(2)), t)
    (sol,) = [s for s in sols if s.is_positive is not False]
    want = w * sp.sqrt((C * sp.log(2) + sp.log(1 / delta)) / (2 * M))
    ok = sp.simplify(sp.expand_log(sol**2 - want**2, force=True)) == 0
    return want if ok else sol


def maurer_occam_rhs() -> sp.Expr:
    """Solve ``2 sqrt(m) exp(-m eps) = delta 2**-C`` (Maurer's moment with Markov's inequality, for one
    model at confidence ``delta 2**-C``) for the kl level ``eps``."""
    eps = sp.Symbol("epsilon", positive=True)
    (sol,) = sp.solve(sp.Eq(2 * sp.sqrt(m) * sp.exp(-m * eps), delta * 2**-C), eps)
    want = (C * sp.log(2) + sp.log(2 * sp.sqrt(m) / delta)) / m
    ok = sp.simplify(sp.expand_log(sol - want, force=True)) == 0
    return want if ok else sol


def verify_entropy_code_bits() -> bool:
    """``-log2 prod_i (c_i / n)**c_i = sum_i c_i log2(n / c_i)`` (three symbols, ``n = c_1 + c_2 + c_3``)."""
    c = sp.symbols("c1:4", positive=True)
    n = sum(c)
    lhs = -sp.log(sp.Mul(*[(ci / n) ** ci for ci in c]), 2)
    rhs = sum(ci * sp.log(n / ci, 2) for ci in c)
    return sp.simplify(sp.expand_log(lhs - rhs, force=True)) == 0


def verify_kraft_union() -> bool:
    """Union over models at confidences ``delta 2**-C(h)``: with Kraft's ``sum_h 2**-C(h) <= 1`` the
    failure probabilities add to at most ``delta`` (here the code lengths of a complete prefix-free code
    of lengths 1, 2, ..., k, k: ``sum = 1``)."""
    k = 12
    lengths = list(range(1, k + 1)) + [k]
    return sum(sp.Rational(1, 2**L) for L in lengths) == 1


def cramer_bernoulli_bound() -> sp.Expr:
    """Solve ``-ln(1 - r + r e^-lambda) = lambda q + eps`` for ``r``: the kl form of the martingale bound
    at one ``lambda`` (Cramér-Chernoff for ``[0, 1]``-valued increments, whose conditional log-Laplace
    transform at ``-lambda`` is at most that of a Bernoulli of the same mean; concave in the mean, so
    Jensen's inequality moves the mean inside)."""
    (sol,) = sp.solve(sp.Eq(-sp.log(1 - r + r * sp.exp(-lam)), lam * q + eps), r)
    want = (1 - sp.exp(-(lam * q + eps))) / (1 - sp.exp(-lam))
    ok = sp.simplify(sol - want) == 0
    return want if ok else sol


def verify_cramer_sup_is_kl() -> bool:
    """At ``lambda* = ln(r (1 - q) / (q (1 - r)))`` (``q < r``) the exponent ``-lambda q - ln(1 - r +
    r e^-lambda)`` equals ``kl(q || r)``, and ``lambda*`` is a stationary point: the grid of ``lambda``
    approaches the kl bound from above."""
    ls = sp.log(r * (1 - q) / (q * (1 - r)))
    f = -lam * q - sp.log(1 - r + r * sp.exp(-lam))
    kl = q * sp.log(q / r) + (1 - q) * sp.log((1 - q) / (1 - r))
    vals = [(sp.Rational(1, 5), sp.Rational(1, 3)), (sp.Rational(1, 10), sp.Rational(7, 10))]
    ok = all(
        abs(sp.N((f.subs(lam, ls) - kl).subs({q: a, r: b}), 40)) < 1e-35
        and abs(sp.N(sp.diff(f, lam).subs(lam, ls).subs({q: a, r: b}), 40)) < 1e-35
        for a, b in vals
    )
    return bool(ok)


def bernstein_occam_bound() -> sp.Expr:
    """Solve ``lambda M (r - q) - psi(lambda) v M = C ln 2 + ln(K / delta)`` for ``r``, ``psi(lambda) =
    -ln(1 - lambda) - lambda``, ``v = V_c / M``: Markov's inequality applied to the empirical-Bernstein
    supermartingale ``exp(lambda sum_k (mu_k - x_k) - psi(lambda) sum_k (x_k - c)^2)`` at one model,
    one ``lambda`` and one centre ``c`` (confidence ``delta 2**-C / K``)."""
    psi = -sp.log(1 - lam) - lam
    (sol,) = sp.solve(sp.Eq(lam * M * (r - q) - psi * v * M, C * sp.log(2) + sp.log(K / delta)), r)
    want = q + (psi * v * M + C * sp.log(2) + sp.log(K / delta)) / (lam * M)
    ok = sp.simplify(sol - want) == 0
    return want if ok else sol


def verify_fan_inequality(n: int = 400) -> bool:
    """Fan, Grama and Liu's (2015) inequality ``exp(lambda xi - psi(lambda) xi^2) <= 1 + lambda xi`` for
    ``xi >= -1``, ``lambda in [0, 1)``, on a grid of ``n`` points in ``xi in [-1, 3]`` and 9 values of
    ``lambda`` (30-digit arithmetic): the step that makes each factor of the supermartingale have
    conditional mean at most 1 (taking the mean of ``1 + lambda (c - x_k)`` gives ``1 + lambda (c -
    mu_k) <= exp(lambda (c - mu_k))``)."""
    mpmath.mp.dps = 30
    for j in range(1, 10):
        a = mpmath.mpf(j) / 10
        psi = -mpmath.log(1 - a) - a
        for i in range(n + 1):
            xi = -1 + mpmath.mpf(4) * i / n
            if mpmath.exp(a * xi - psi * xi * xi) > 1 + a * xi + mpmath.mpf(10) ** -25:
                return False
    return True
