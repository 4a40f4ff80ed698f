"""The **exact checks of Maurer's moment** behind the document and test-set bounds of
``book/part7/compression.md`` (:func:`~genbound.bounds.compression.document_bound` and
:func:`~genbound.bounds.compression.test_set_bound` spend ``ln(2 sqrt(n) / delta)``).

* :func:`code_constant`: the constant the code spends, read off it: at an empirical loss of 0 the bound is
  ``kl^-1(0, ln(c / delta) / n) = 1 - (delta / c)^(1/n)``, so ``c = delta (1 - B)^-n`` (40 digits).
* :func:`maurer_sum`: ``n^n xi(n) = sum_k C(n, k) k^k (n - k)^(n - k)``, an integer; ``xi(n)`` is
  ``E exp(n kl(K/n || p))`` for ``K ~ Bin(n, p)``, the same at every ``p`` (the binomial probabilities
  cancel).
* :func:`maurer_coverage`: parts ``(ratio, trials)``: ``xi(n) / c`` (the moment the Markov step needs is
  covered by the constant the code spends) and ``c / (2 sqrt n)`` two-sided, for every ``n`` up to 64 and a
  log grid to 2000; the Bernoulli moment summed over ``k`` at a grid of ``p`` against ``xi(n)``
  (two-sided); the moment of losses in ``{0, 1/2, 1}`` (multinomial, every outcome) over ``xi(n)``
  (Maurer's comparison: at most 1); and the exact probability that ``test_set_bound`` of one model, fed
  ``K / n``, lies below ``p``, over ``delta``, probed just above each bound value and on a grid.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath

from ..bounds import compression as cb
from ._part6 import exact_failure, two_sided

__all__ = [
    "code_constant",
    "maurer_sum",
    "bernoulli_moment",
    "three_point_moment",
    "maurer_coverage",
]

#: the confidences and sample sizes of :func:`maurer_coverage`
MAURER_DELTAS = (0.2, 0.05, 1e-3, 1e-6)
MAURER_NS = tuple(range(1, 65)) + (80, 100, 128, 150, 200, 256, 300, 400, 512, 1000, 2000)
#: (n, delta) of the exact coverage of the test-set bound (every number of errors)
COVERAGE_CASES = ((8, 0.2), (8, 1e-3), (13, 0.05), (20, 0.2), (20, 1e-3), (40, 0.05))
#: laws ``(P[0], P[1/2], P[1])`` of the three-point losses
THREE_POINT = ((0.25, 0.5, 0.25), (0.6, 0.1, 0.3), (0.05, 0.9, 0.05), (0.9, 0.02, 0.08))


def code_constant(n: int, delta: float):
    """``delta (1 - B)^-n`` with ``B = test_set_bound(0, 0, 1, n, delta)`` (looked up at call time)."""
    b = cb.test_set_bound(0.0, 0.0, 1.0, n, delta)
    with mpmath.workdps(40):
        return mpmath.mpf(delta) / (1 - mpmath.mpf(b)) ** n


def maurer_sum(n: int) -> int:
    """``sum_{k=0}^n C(n, k) k^k (n - k)^(n - k)`` (``0^0 = 1``), exactly."""
    return sum(math.comb(n, k) * k**k * (n - k) ** (n - k) for k in range(n + 1))


def _kl(q, p):
    out = mpmath.mpf(0)
    if q > 0:
        out += q * mpmath.log(q / p)
    if q < 1:
        out += (1 - q) * mpmath.log((1 - q) / (1 - p))
    return out


def bernoulli_moment(n: int, p: float):
    """``sum_k P[Bin(n, p) = k] exp(n kl(k/n || p))`` in 30 digits."""
    with mpmath.workdps(30):
        pm = mpmath.mpf(p)
        return mpmath.fsum(
            mpmath.binomial(n, k)
            * pm**k
            * (1 - pm) ** (n - k)
            * mpmath.exp(n * _kl(mpmath.mpf(k) / n, pm))
            for k in range(n + 1)
        )


def three_point_moment(n: int, law) -> mpmath.mpf:
    """``E exp(n kl(mean || p))`` for ``n`` i.i.d. losses in ``{0, 1/2, 1}`` with probabilities ``law``
    (``p = law[1] / 2 + law[2]``), every multinomial outcome summed in 30 digits."""
    with mpmath.workdps(30):
        a, b, c = (mpmath.mpf(x) for x in law)
        p = b / 2 + c
        total = mpmath.mpf(0)
        for j in range(n + 1):
            for m in range(n - j + 1):
                i = n - j - m
                prob = mpmath.factorial(n) / (
                    mpmath.factorial(i) * mpmath.factorial(j) * mpmath.factorial(m)
                )
                mean = (mpmath.mpf(j) / 2 + m) / n
                total += prob * a**i * b**j * c**m * mpmath.exp(n * _kl(mean, p))
        return total


def maurer_coverage(seed: int):
    """The parts of the check (see the module); exhaustive (``seed`` unused)."""
    del seed
    with mpmath.workdps(40):
        for i, n in enumerate(MAURER_NS):
            c = code_constant(n, MAURER_DELTAS[i % 4])
            xi = mpmath.mpf(maurer_sum(n)) / mpmath.mpf(n) ** n
            yield max(float(xi / c), two_sided(float(c), 2 * math.sqrt(n))), 1
    for n in (8, 31, 100):
        xi = Fraction(maurer_sum(n), n**n)
        ps = (1e-9, 0.01, 0.1, 1 / 3, 0.5, 0.77, 0.99, 1 - 1e-9)
        yield max(two_sided(float(bernoulli_moment(n, p)), float(xi)) for p in ps), len(ps)
    for n in (8, 20, 40):
        xi = maurer_sum(n) / n**n
        yield max(float(three_point_moment(n, law)) / xi for law in THREE_POINT), len(THREE_POINT)
    for n, delta in COVERAGE_CASES:
        bounds = {k: cb.test_set_bound(k / n, 0.0, 1.0, n, delta) for k in range(n + 1)}
        above = {math.nextafter(v, 2.0) for v in bounds.values() if v < 1.0}
        probes = sorted(above | {(i + 0.5) / 64 for i in range(64)})
        dq = Fraction(delta)
        yield max(float(exact_failure(bounds, n, p) / dq) for p in probes), len(probes)
