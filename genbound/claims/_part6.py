"""What the claims of ``book/part6/pac_bayes.md`` share: two-sided ratios, the 40-digit kl and the checks of
a kl inverse's root, binomial probabilities, and the **exact coverage check** of the test-set bound.

* :func:`exact_failure`: ``sum_{k: bound(k) < p} P[Bin(n, p) = k]`` in integer arithmetic (a float ``p``
  is ``a / 2^e`` exactly), the probability that a bound computed from ``K ~ Bin(n, p)`` errors lies below
  the true error ``p``.
* :func:`test_set_coverage`: the worst ``P_p[binomial_test_bound(K, n, delta) < p] / delta`` over every
  ``n`` from 1 to 40 (every ``k``), ``n`` = 60, 200, 1000, four confidences, a grid of ``p`` and the
  adversarial ``p``: the float just above each bound value, where the failure probability jumps up (it
  decreases in ``p`` between two bound values, so these are its suprema).
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath

from ..bounds import pac_bayes as pb
from ._core import two_sided  # noqa: F401 (re-exported)

__all__ = ["two_sided", "kl40", "root_ratios", "binom_pmf", "exact_failure", "test_set_coverage"]


def kl40(q, p):
    with mpmath.workdps(pb.CERT_DPS):
        return pb._kl_mp(q, p)


def root_ratios(q: float, b: float, c: float) -> float:
    """``B`` is the upper kl inverse of ``q`` at budget ``c``, from both sides: ``c / kl(q || B)`` (``B``
    not below the root; skipped at ``B = 1``) and ``kl(q || B - 1e-11) / c`` (``B`` within ``1e-11`` above
    it); the larger of the two, ``inf`` where ``B < q`` or ``kl(q || B) = 0 < c``."""
    if b < q:
        return math.inf
    worst = 0.0
    if b < 1.0:
        k = float(kl40(q, b))
        worst = math.inf if k == 0.0 else c / k
    lo = b - 1e-11
    if lo > q:
        worst = max(worst, float(kl40(q, lo)) / c)
    return worst


def binom_pmf(n: int, p: float) -> list[float]:
    """``P[Bin(n, p) = k]`` for ``k = 0..n`` in 30 digits (mpmath binomials, independent of the package)."""
    with mpmath.workdps(30):
        pm = mpmath.mpf(p)
        return [float(mpmath.binomial(n, k) * pm**k * (1 - pm) ** (n - k)) for k in range(n + 1)]


def exact_failure(bounds: dict[int, float], n: int, p: float) -> Fraction:
    """``sum_{k: bounds[k] < p} C(n, k) p^k (1 - p)^(n - k)``, exactly (``p`` a float in ``[0, 1]``)."""
    a, d = Fraction(p).as_integer_ratio()
    b = d - a
    hits = sum(math.comb(n, k) * a**k * b ** (n - k) for k, v in bounds.items() if v < p)
    return Fraction(hits, d**n)


#: the confidences of :func:`test_set_coverage` (the smaller ones kill the quadratic form with a wrong constant)
COVERAGE_DELTAS = (0.5, 0.05, 1e-3, 1e-6)
#: errors of the large test sets (the bound increases in ``k``: the larger ``k`` do not fail at these ``p``)
LARGE_N_ERRORS = 12


def _probes(bounds: dict[int, float], grid: int) -> list[float]:
    """The float just above each bound value below 1, and ``grid`` equally spaced ``p`` in ``(0, 1)``."""
    above = {math.nextafter(v, 2.0) for v in bounds.values() if v < 1.0}
    return sorted(above | {(i + 0.5) / grid for i in range(grid)})


def test_set_coverage(seed: int):
    """Parts ``(worst P_p[bound(K) < p] / delta, probes)``, one per ``(n, delta)`` (see the module); the
    bound is :func:`~genbound.bounds.pac_bayes.binomial_test_bound`, looked up at call time. Every
    ``n <= 40`` runs at two of :data:`COVERAGE_DELTAS` (in turn), the larger ``n`` at all four."""
    del seed  # exhaustive: no draw
    cases = [(n, COVERAGE_DELTAS[(n + j) % 4]) for n in range(1, 41) for j in (0, 2)]
    cases += [(n, d) for n in (60, 200, 1000) for d in COVERAGE_DELTAS]
    for n, delta in cases:
        ks = range(n + 1) if n <= 60 else range(LARGE_N_ERRORS + 1)
        bounds = {k: pb.binomial_test_bound(k, n, delta).value for k in ks}
        probes = _probes(bounds, 64 if n <= 60 else 0)
        if n > 60:  # only p at or below the last bound value computed
            probes = [p for p in probes if p <= bounds[LARGE_N_ERRORS]]
        dq = Fraction(delta)
        worst = max(float(exact_failure(bounds, n, p) / dq) for p in probes)
        yield worst, len(probes)


test_set_coverage.__test__ = False  # type: ignore[attr-defined]  # a check, not a pytest test
