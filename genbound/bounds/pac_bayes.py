"""PAC-Bayes-kl certificates and the binomial test-set bound (Part VI), as pure functions.

The pieces, each a function of named numbers (``q`` an error rate in ``[0, 1]``, ``c`` a budget
``>= 0``, ``n`` a number of examples, ``delta`` a confidence):

* :func:`binary_kl` -- ``kl(q || p)``, the relative entropy of Bernoulli(q) from Bernoulli(p);
* :func:`kl_inverse_upper` -- ``kl^-1(q, c) = sup {p in [q, 1] : kl(q || p) <= c}``, by bisection to
  :data:`KL_INV_TOL` and then certified in 40-digit arithmetic, so that the value returned is never below
  the exact inverse (of the floating-point inputs);
* :func:`maurer_xi` -- Maurer's ``xi(n) = sum_k C(n, k) (k/n)^k (1 - k/n)^(n-k)`` as an exact sum, each
  term evaluated in log space by Loader's saddle-point form (stable and accurate for ``n`` up to ``10^6``);
* :func:`pac_bayes_kl_bound` -- ``kl^-1(e_S(Q), [KL(Q||P) + ln(xi(n)/delta)] / n)``;
* :func:`monte_carlo_upper` and :func:`pac_bayes_kl_certificate` -- the sampled error of ``Q`` corrected
  by the Chernoff bound in kl form, chained into the PAC-Bayes-kl bound through the monotonicity of
  ``kl^-1`` in its first argument;
* :func:`binomial_test_bound` -- the exact test-set bound: the largest ``p`` with
  ``P[Bin(n, p) <= k] >= delta``, by incomplete-beta inversion with a bracket verified in 40 digits;
* :func:`kl_diag_gaussians`, :func:`isotropic_prior_variance` -- the KL between diagonal Gaussians and
  the prior variance that minimises it over isotropic priors;
* :func:`prior_scale_grid`, :func:`grid_delta`, :func:`pac_bayes_grid_certificate` -- a finite grid of
  prior scales fixed before the data, the confidence split evenly over it (a union bound);
* :func:`f_quad` -- the training objective of Pérez-Ortiz et al. (2021) (differentiable in torch).

>>> binary_kl(0.5, 0.5)
0.0
>>> round(binary_kl(0.0, 0.5), 12) == round(math.log(2), 12)
True
>>> abs(kl_inverse_upper(0.0, 1.0) - (1 - math.exp(-1))) < 1e-12
True
>>> kl_inverse_upper(0.3, 0.0)
0.3
>>> maurer_xi(1)
2.0
>>> maurer_xi(2)
2.5
>>> abs(binomial_test_bound(0, 10, 0.05).value - (1 - 0.05 ** 0.1)) < 1e-12
True

One concept: the PAC-Bayes-kl certificate and the pure functions it is assembled from (kl, its
certified inverse, the binomial tail), which only it uses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

from .._validate import check_positive_int, check_real
from ..errors import ParameterError
from ._result import LOSS_RANGE, BoundResult

__all__ = [
    "KL_INV_TOL",
    "CERT_DPS",
    "PINSKER_CONSTANT",
    "binary_kl",
    "kl_inverse_upper",
    "kl_inverse_bracket",
    "stirling_error",
    "maurer_xi",
    "maurer_log_term",
    "pac_bayes_kl_bound",
    "monte_carlo_upper",
    "pac_bayes_kl_certificate",
    "binomial_cdf",
    "binomial_test_bound",
    "kl_categorical",
    "change_of_measure_bound",
    "kl_diag_gaussians",
    "isotropic_prior_variance",
    "prior_scale_grid",
    "grid_delta",
    "pac_bayes_grid_certificate",
    "f_quad",
    "PacBayesBound",
    "BinomialTestBound",
    "XI_EXACT_MAX",
]

#: Width of the bisection bracket of :func:`kl_inverse_upper` (absolute, in ``p``) before certification.
KL_INV_TOL = 1e-14
#: Decimal digits of the arithmetic that certifies a returned value (``mpmath.workdps``).
CERT_DPS = 40


# --------------------------------------------------------------------------------------------- kl
def _check_rate(q, name: str = "q") -> float:
    return check_real(q, name, lo=0.0, hi=1.0)


def binary_kl(q: float, p: float) -> float:
    """``kl(q || p) = q ln(q/p) + (1-q) ln((1-q)/(1-p))`` with ``0 ln 0 = 0``; ``inf`` when ``p`` is 0 or 1
    and ``q`` differs from it.

    >>> binary_kl(0.25, 0.25), binary_kl(0.5, 1.0)
    (0.0, inf)
    """
    q, p = _check_rate(q), _check_rate(p, "p")
    out = 0.0
    for a, b in ((q, p), (1.0 - q, 1.0 - p)):
        if a > 0.0:
            if b == 0.0:
                return math.inf
            out += a * math.log(a / b)
    return max(out, 0.0)


def _kl_mp(q, p):
    """``kl(q || p)`` in mpmath (current precision); ``q``, ``p`` converted exactly from floats."""
    import mpmath

    q, p = mpmath.mpf(q), mpmath.mpf(p)
    out = mpmath.mpf(0)
    for a, b in ((q, p), (1 - q, 1 - p)):
        if a > 0:
            if b == 0:
                return mpmath.inf
            out += a * mpmath.log(a / b)
    return out


def kl_inverse_upper(q: float, c: float, *, tol: float = KL_INV_TOL) -> float:
    """``kl^-1(q, c) = sup {p in [q, 1] : kl(q || p) <= c}``: the largest error rate compatible with the
    observed rate ``q`` at kl budget ``c``.

    Bisection on ``[q, 1]`` (``kl(q || .)`` increases there) until the bracket is narrower than ``tol``;
    the upper end is then certified in :data:`CERT_DPS`-digit arithmetic (``kl(q || hi) >= c``, so ``hi``
    is at or above the exact inverse) and moved up until it is. The result lies in
    ``[kl^-1(q, c), kl^-1(q, c) + tol]`` up to the final rounding (in practice within ``2 tol``).

    >>> kl_inverse_upper(1.0, 0.3), kl_inverse_upper(0.2, 50.0)
    (1.0, 1.0)

    Book: :prf:ref:`lem-pb-kl-inverse`, :prf:ref:`lem-pb-kl-inverse-zero`.
    """
    q = _check_rate(q)
    if isinstance(c, (int, float)) and c == math.inf:
        return 1.0
    c = check_real(c, "c", lo=0.0)
    tol = check_real(tol, "tol", lo=0.0, lo_open=True)
    if c == 0.0 or q == 1.0:
        return q
    lo, hi = q, 1.0  # kl(q || lo) <= c < kl(q || hi) = inf (q < 1)
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if binary_kl(q, mid) <= c:
            lo = mid
        else:
            hi = mid
    return _certify_upper(q, c, lo, hi, tol)


def _certify_upper(q: float, c: float, lo: float, hi: float, tol: float) -> float:
    """Finish in :data:`CERT_DPS`-digit arithmetic: move ``lo`` down until ``kl(q || lo) <= c`` and ``hi`` up
    until ``kl(q || hi) >= c`` (floating-point ``kl`` loses digits near ``p = q``, so the float bracket may
    be off), then bisect (on floats) until ``hi - lo <= tol``; return ``hi``, at or above the exact
    inverse by monotonicity (``1.0`` if ``kl(q || p) < c`` up to ``p = 1``)."""
    import mpmath

    step = max(hi - lo, tol, 4 * math.ulp(hi))
    with mpmath.workdps(CERT_DPS):
        cm = mpmath.mpf(c)
        while hi < 1.0 and _kl_mp(q, hi) < cm:
            hi = min(1.0, hi + step)
            step *= 2.0
        step = max(hi - lo, tol, 4 * math.ulp(lo))
        while lo > q and _kl_mp(q, lo) > cm:
            lo = max(q, lo - step)
            step *= 2.0
        while hi - lo > tol:
            mid = 0.5 * (lo + hi)
            if mid <= lo or mid >= hi:
                break
            if _kl_mp(q, mid) <= cm:
                lo = mid
            else:
                hi = mid
    return hi


#: ``kl(q || p) >= PINSKER_CONSTANT (p - q)^2`` (Pinsker; derived in
#: :func:`genbound.symbolic.pac_bayes.pinsker_constant`).
PINSKER_CONSTANT = 2.0


def kl_inverse_bracket(q: float, c: float) -> tuple[float, float]:
    """``(q, min(1, q + sqrt(c / 2), q + c + sqrt(c^2 + 2 q c)))``: the exact ``kl^-1(q, c)`` lies between
    them (Pinsker's inequality and ``kl(q || p) >= (p - q)^2 / (2p)`` for ``p >= q``).

    >>> kl_inverse_bracket(0.5, 0.02)
    (0.5, 0.6)

    Book: :prf:ref:`lem-pb-pinsker-bracket`.
    """
    q = _check_rate(q)
    c = check_real(c, "c", lo=0.0)
    hi = min(1.0, q + math.sqrt(c / PINSKER_CONSTANT), q + c + math.sqrt(c * c + 2 * q * c))
    return q, hi


# --------------------------------------------------------------------------------------- Maurer xi
_SERIES = (1.0 / 12, 1.0 / 360, 1.0 / 1260, 1.0 / 1680, 1.0 / 1188)


def stirling_error(k) -> np.ndarray:
    """``ln k! - [(k + 1/2) ln k - k + ln(2 pi)/2]`` for integers ``k >= 1`` (Loader's ``stirlerr``): exact
    via ``lgamma`` for ``k <= 15``, the alternating Stirling series with five terms above (its error is
    below the first omitted term, under ``1e-17`` there).

    >>> float(stirling_error(1)) == 1 - 0.5 * math.log(2 * math.pi)
    True
    """
    k = np.asarray(k, dtype=np.float64)
    out = np.empty_like(k)
    small = k <= 15
    ks = k[small]
    out[small] = np.array(
        [
            math.lgamma(x + 1) - (x + 0.5) * math.log(x) + x - 0.5 * math.log(2 * math.pi)
            for x in ks.tolist()
        ]
    )
    kb = k[~small]
    k2 = kb * kb
    s0, s1, s2, s3, s4 = _SERIES
    out[~small] = (s0 - (s1 - (s2 - (s3 - s4 / k2) / k2) / k2) / k2) / kb
    return out


def maurer_log_term(n: int) -> np.ndarray:
    """``ln [C(n, k) (k/n)^k (1-k/n)^(n-k)]`` for ``k = 0..n`` (the binomial probability of its own mean):
    ``0`` at ``k = 0, n``, else ``stirlerr(n) - stirlerr(k) - stirlerr(n-k) + ln(n / (2 pi k (n-k)))/2``
    (Loader's saddle-point form, whose deviance terms vanish at ``p = k/n``).

    Book: :prf:ref:`lem-pb-maurer`.
    """
    n = check_positive_int(n, "n")
    k = np.arange(1, n, dtype=np.float64)
    inner = (
        stirling_error(n)[()]
        - stirling_error(k)
        - stirling_error(n - k)
        + 0.5 * np.log(n / (2 * math.pi * k * (n - k)))
    )
    return np.concatenate(([0.0], inner, [0.0]))


@lru_cache(maxsize=256)
def maurer_xi(n: int) -> float:
    """Maurer's ``xi(n) = sum_{k=0}^n C(n, k) (k/n)^k (1 - k/n)^(n-k)``, summed exactly (in floats) from
    :func:`maurer_log_term`; ``sqrt(n) <= xi(n) <= 2 sqrt(n)`` for ``n >= 8`` (Maurer 2004).

    Book: :prf:ref:`lem-pb-maurer`.
    """
    n = check_positive_int(n, "n")
    terms = np.exp(maurer_log_term(n))
    return float(math.fsum(terms.tolist()))


# ------------------------------------------------------------------------------------- the bounds
def _check_delta(delta, name="delta") -> float:
    return check_real(delta, name, lo=0.0, hi=1.0, lo_open=True, hi_open=True)


def pac_bayes_kl_bound(emp_risk: float, kl: float, n: int, delta: float) -> float:
    """The PAC-Bayes-kl bound (Langford-Seeger-Maurer form): with probability ``>= 1 - delta`` over ``n``
    examples, for every posterior ``Q``, ``e(Q) <= kl^-1(e_S(Q), [KL(Q||P) + ln(xi(n)/delta)] / n)``.

    >>> abs(pac_bayes_kl_bound(0.0, 0.0, 1, 0.5) - (1 - math.exp(-math.log(4)))) < 1e-12
    True

    Book: :prf:ref:`thm-pb-kl`.
    """
    q = _check_rate(emp_risk, "emp_risk")
    kl = check_real(kl, "kl", lo=0.0)
    n = check_positive_int(n, "n")
    delta = _check_delta(delta)
    return kl_inverse_upper(q, (kl + math.log(maurer_xi(n) / delta)) / n)


def monte_carlo_upper(mean: float, n_draws: int, delta_mc: float) -> float:
    """``kl^-1(mean, ln(2/delta_mc) / N)``: with probability ``>= 1 - delta_mc`` over ``N`` independent
    draws ``h ~ Q``, the exact ``e_S(Q)`` lies at or below this (the Chernoff bound in kl form on the
    ``[0, 1]``-valued ``e_S(h)``; the ``ln 2`` is Langford & Caruana's two-sided constant, kept as
    Dziugaite & Roy and Pérez-Ortiz et al. use it).

    Book: :prf:ref:`cor-pb-monte-carlo`.
    """
    q = _check_rate(mean, "mean")
    n_draws = check_positive_int(n_draws, "n_draws")
    delta_mc = _check_delta(delta_mc, "delta_mc")
    return kl_inverse_upper(q, math.log(2.0 / delta_mc) / n_draws)


def pac_bayes_kl_certificate(
    mc_mean: float, n_draws: int, kl: float, n: int, delta: float, delta_mc: float
) -> float:
    """``kl^-1(monte_carlo_upper(mc_mean, N, delta_mc), [KL + ln(xi(n)/delta)] / n)``: a bound on ``e(Q)``
    with probability ``>= 1 - delta - delta_mc`` (``kl^-1`` increases in its first argument, so the upper
    estimate of ``e_S(Q)`` may replace ``e_S(Q)``)."""
    up = monte_carlo_upper(mc_mean, n_draws, delta_mc)
    return pac_bayes_kl_bound(up, kl, n, delta)


# --------------------------------------------------------------------------------------- binomial
def binomial_cdf(k: int, n: int, p: float, *, dps: int = CERT_DPS) -> float:
    """``P[Bin(n, p) <= k]`` summed term by term in ``dps``-digit arithmetic (the smaller tail, the other
    by complement); ``1`` when ``k >= n``. Equal to the regularised incomplete beta ``I_{1-p}(n-k, k+1)``
    (:prf:ref:`lem-pb-binomial-beta`).

    >>> binomial_cdf(0, 2, 0.5), binomial_cdf(1, 2, 0.5)
    (0.25, 0.75)
    """
    with __import__("mpmath").workdps(dps):
        return float(_tail_mp(int(k), int(n), p))


def _tail_mp(k: int, n: int, p):
    """``P[Bin(n, p) <= k]`` as an mpmath number (current precision): the pmf by its ratio recursion,
    summed over ``i <= k`` when ``k < n p`` (the smaller tail: no cancellation), else one minus the sum
    over ``i > k`` (then the value is at least about 1/2)."""
    import mpmath

    if k >= n:
        return mpmath.mpf(1)
    if k < 0:
        return mpmath.mpf(0)
    p = mpmath.mpf(p)
    if p == 0:
        return mpmath.mpf(1)
    if p == 1:
        return mpmath.mpf(0)
    if k < n * p:  # the lower tail is the smaller one: sum it
        term = (1 - p) ** n
        ratio = p / (1 - p)
        total = term
        for i in range(k):
            term = term * (n - i) / (i + 1) * ratio
            total += term
        return total
    term = p**n  # i = n, walking down to i = k + 1
    ratio = (1 - p) / p
    total = term
    for i in range(n, k + 1, -1):
        term = term * i / (n - i + 1) * ratio
        total += term
    return 1 - total


def _binomial_upper(k: int, n: int, delta: float) -> float:
    """The largest ``p`` with ``P[Bin(n, p) <= k] >= delta``; ``k < n``. scipy's ``betaincinv`` gives a
    candidate; a bracket ``[lo, hi]`` around it is verified in 40 digits (``cdf(lo) >= delta >= cdf(hi)``),
    widened if need be; ``hi`` is returned."""
    import mpmath
    from scipy.special import betaincinv

    p0 = float(betaincinv(k + 1, n - k, 1.0 - delta))
    if not (0.0 <= p0 <= 1.0):
        p0 = 0.5
    w = max(1e-15 * p0, 1e-300)
    with mpmath.workdps(CERT_DPS):
        dm = mpmath.mpf(delta)
        hi = p0
        while hi < 1.0 and _tail_mp(k, n, hi) > dm:  # cdf(hi) must be <= delta
            hi = min(1.0, hi + w)
            w *= 2.0
        w = max(1e-15 * p0, 1e-300)
        lo = max(0.0, min(p0, hi) - w)
        while lo > 0.0 and _tail_mp(k, n, lo) < dm:  # cdf(lo) must be >= delta
            lo = max(0.0, lo - w)
            w *= 2.0
        # tighten from both sides while the bracket is wider than the tolerance (rarely runs)
        while hi - lo > KL_INV_TOL * max(hi, 1e-300) and hi - lo > 1e-300:
            mid = 0.5 * (lo + hi)
            if mid <= lo or mid >= hi:
                break
            if _tail_mp(k, n, mid) >= dm:
                lo = mid
            else:
                hi = mid
    return hi


# ------------------------------------------------------------------------------ change of measure
def kl_categorical(q, p):
    """``KL(Q || P) = sum_i q_i ln(q_i / p_i)`` for probability vectors along the last axis (torch, batched,
    differentiable; ``0 ln 0 = 0``)."""
    import torch

    q, p = torch.as_tensor(q), torch.as_tensor(p)
    safe = torch.where(q > 0, q / p, torch.ones_like(q))
    return (q * torch.log(safe)).sum(-1)


def change_of_measure_bound(q, p, f):
    """The right side of the Donsker-Varadhan change of measure, ``KL(Q || P) + ln E_P[e^f]``, an upper
    bound on ``E_Q[f]`` for every ``Q`` (equality at the Gibbs measure ``Q ∝ P e^f``); torch, batched
    along the leading axes, the outcomes along the last.

    Book: :prf:ref:`lem-pb-change-of-measure`.
    """
    import torch

    p, f = torch.as_tensor(p), torch.as_tensor(f)
    return kl_categorical(q, p) + torch.logsumexp(torch.log(p) + f, dim=-1)


# ----------------------------------------------------------------------------- Gaussians and grids
def kl_diag_gaussians(mu_q, sigma_q, mu_p, sigma_p):
    """``KL(N(mu_q, diag sigma_q^2) || N(mu_p, diag sigma_p^2))
    = (1/2) sum_i [sigma_q^2/sigma_p^2 + (mu_q - mu_p)^2/sigma_p^2 - 1 + 2 ln(sigma_p/sigma_q)]``,
    torch tensors (broadcast; ``sigma_p`` may be a scalar), differentiable; a 0-d float64 tensor if the
    inputs are float64.

    >>> import torch
    >>> float(kl_diag_gaussians(torch.zeros(3), torch.ones(3), torch.zeros(3), 1.0))
    0.0

    Book: :prf:ref:`lem-pb-gaussian-kl`.
    """
    import torch

    mu_q, sigma_q = torch.as_tensor(mu_q), torch.as_tensor(sigma_q)
    mu_p = torch.as_tensor(mu_p, dtype=mu_q.dtype)
    sigma_p = torch.as_tensor(sigma_p, dtype=sigma_q.dtype)
    if bool((sigma_q <= 0).any()) or bool((sigma_p <= 0).any()):
        raise ParameterError("kl_diag_gaussians: every standard deviation must be > 0")
    r = (sigma_q / sigma_p) ** 2
    d = ((mu_q - mu_p) / sigma_p) ** 2
    terms = r + d - 1.0 - torch.log(r)
    return (
        0.5
        * torch.broadcast_to(
            terms, torch.broadcast_shapes(mu_q.shape, sigma_q.shape, mu_p.shape, sigma_p.shape)
        ).sum()
    )


def isotropic_prior_variance(mu_q, sigma_q, mu_p) -> float:
    """``argmin_{s^2 > 0} KL(N(mu_q, diag sigma_q^2) || N(mu_p, s^2 I))
    = (sum_i sigma_q,i^2 + ||mu_q - mu_p||^2) / d``."""
    import torch

    mu_q, sigma_q = torch.as_tensor(mu_q), torch.as_tensor(sigma_q)
    mu_p = torch.as_tensor(mu_p, dtype=mu_q.dtype)
    d = torch.broadcast_shapes(mu_q.shape, sigma_q.shape, mu_p.shape).numel()
    total = (torch.broadcast_to(sigma_q, mu_q.shape) ** 2).sum() + ((mu_q - mu_p) ** 2).sum()
    return float(total) / d


def prior_scale_grid(center: float, ratio: float, count: int) -> tuple[float, ...]:
    """``count`` prior standard deviations ``center * ratio^(j - (count-1)/2)``, ``j = 0..count-1``: a
    geometric grid centred (in log scale) on ``center``, fixed before the bound set is seen.

    >>> prior_scale_grid(1.0, 2.0, 3)
    (0.5, 1.0, 2.0)
    """
    center = check_real(center, "center", lo=0.0, lo_open=True)
    ratio = check_real(ratio, "ratio", lo=1.0, lo_open=True)
    count = check_positive_int(count, "count")
    return tuple(center * ratio ** (j - (count - 1) / 2) for j in range(count))


def grid_delta(delta: float, count: int) -> float:
    """The confidence each of ``count`` grid points gets: ``delta / count`` (the union over the grid then
    fails with probability at most ``count * delta / count = delta``)."""
    return _check_delta(delta) / check_positive_int(count, "count")


def pac_bayes_grid_certificate(
    mc_mean: float, n_draws: int, kls: Sequence[float], n: int, delta: float, delta_mc: float
) -> "PacBayesBound":
    """The certificate at the best of ``K = len(kls)`` priors of a grid fixed before the data: each grid
    point's bound at confidence :func:`grid_delta` ``(delta, K)``, the Monte Carlo correction at
    ``delta_mc`` (one sample of ``Q``, shared); the minimum holds with probability
    ``>= 1 - delta - delta_mc``.

    Book: :prf:ref:`lem-pb-grid-union`.
    """
    kls = [check_real(k, "kl", lo=0.0) for k in kls]
    if not kls:
        raise ParameterError("kls must hold at least one KL value (one per grid point)")
    n = check_positive_int(n, "n")
    up = monte_carlo_upper(mc_mean, n_draws, delta_mc)
    dj = grid_delta(delta, len(kls))
    vals = [pac_bayes_kl_bound(up, k, n, dj) for k in kls]
    j = int(np.argmin(vals))
    return PacBayesBound(
        value=vals[j],
        mc_mean=float(mc_mean),
        n_draws=int(n_draws),
        emp_upper=up,
        kl=kls[j],
        n=n,
        delta=float(delta),
        delta_mc=float(delta_mc),
        grid_count=len(kls),
        grid_index=j,
    )


def f_quad(emp_risk, kl, n: int, delta: float):
    """Pérez-Ortiz et al.'s (2021) ``f_quad = (sqrt(e + K/(2n)) + sqrt(K/(2n)))^2`` with
    ``K = KL + ln(2 sqrt(n)/delta)`` -- a training objective (differentiable in torch tensors), an upper
    bound on ``e(Q)`` when ``e`` is the exact ``e_S(Q)``; never the reported certificate.

    >>> round(float(f_quad(0.0, 0.0, 100, 0.5)), 12) == round(2 * math.log(40) / 100, 12)
    True

    Book: :prf:ref:`cor-pb-f-quad`.
    """
    import torch

    emp_risk, kl = (
        torch.as_tensor(emp_risk, dtype=torch.float64),
        torch.as_tensor(kl, dtype=torch.float64),
    )
    n = check_positive_int(n, "n")
    delta = _check_delta(delta)
    half = (kl + math.log(2.0 * math.sqrt(n) / delta)) / (2 * n)
    return (torch.sqrt(emp_risk + half) + torch.sqrt(half)) ** 2


# ------------------------------------------------------------------------------------------ results
#: Above this sample size :meth:`PacBayesBound.gap_at` uses Maurer's ``2 sqrt(n)`` for ``xi(n)`` (the exact
#: sum costs ``O(n)``), never more than its value at this size (the exact bound does not increase in ``n``).
XI_EXACT_MAX = 10**6


@dataclass(frozen=True)
class PacBayesBound(BoundResult):
    """A PAC-Bayes-kl certificate of a Gibbs classifier ``Q``: ``value`` bounds ``e(Q)`` with probability
    ``>= 1 - delta - delta_mc``. ``mc_mean``: the error of ``Q`` averaged over ``n_draws`` fresh draws on
    the ``n`` bound examples; ``emp_upper`` its Monte Carlo upper bound; ``kl`` the KL to the chosen grid
    prior (index ``grid_index`` of ``grid_count``).

    >>> r = PacBayesBound.examples()[0]
    >>> r.trivial, r.gap_at(r.n) == r.value
    (False, True)
    """

    value: float
    mc_mean: float
    n_draws: int
    emp_upper: float
    kl: float
    n: int
    delta: float
    delta_mc: float
    grid_count: int = 1
    grid_index: int = 0

    @property
    def n_samples(self) -> int:
        """The number of bound examples."""
        return self.n

    @property
    def capacity(self) -> float:
        """``sqrt(KL / 2)``: by Pinsker, ``e(Q) - e_S(Q) <= sqrt([KL + ln(xi(n)/delta)] / (2n))``."""
        return math.sqrt(self.kl / 2)

    def _at(self, n: int, xi: float) -> float:
        d = grid_delta(self.delta, self.grid_count)
        return kl_inverse_upper(self.emp_upper, (self.kl + math.log(xi / d)) / n)

    def gap_at(self, n: int) -> float:
        """The certificate with ``n`` bound examples, every other quantity held fixed (an upper bound on
        ``e(Q)``, hence on its gap); beyond :data:`XI_EXACT_MAX` with ``xi(n) <= 2 sqrt(n)``, capped by the
        value there."""
        n = check_positive_int(n, "n")
        if n == self.n:
            return self.value
        if n <= XI_EXACT_MAX:
            return self._at(n, maurer_xi(n))
        return min(self._at(XI_EXACT_MAX, maurer_xi(XI_EXACT_MAX)), self._at(n, 2 * math.sqrt(n)))

    @property
    def trivial_reason(self) -> str:
        return (
            f"the certificate {self.value:.6g} is at or above the loss range {LOSS_RANGE:g}"
            if self.value >= LOSS_RANGE
            else ""
        )

    def _dict_fields(self) -> dict:
        return {
            "mc_mean": self.mc_mean,
            "n_draws": self.n_draws,
            "emp_upper": self.emp_upper,
            "kl": self.kl,
            "delta": self.delta,
            "delta_mc": self.delta_mc,
            "grid_count": self.grid_count,
            "grid_index": self.grid_index,
        }

    @classmethod
    def examples(cls) -> list:
        return [
            pac_bayes_grid_certificate(0.05, 1000, [30.0, 12.0], 500, 0.04, 0.01),
            pac_bayes_grid_certificate(0.3, 100, [5e3], 150, 0.04, 0.01),
        ]


@dataclass(frozen=True)
class BinomialTestBound(BoundResult):
    """The binomial test-set bound: with probability ``>= 1 - delta`` over ``n`` fresh examples, a fixed
    classifier that made ``errors`` mistakes on them has error at most ``value``.

    >>> r = binomial_test_bound(0, 10, 0.05)
    >>> r.trivial, math.isnan(r.capacity)
    (False, True)
    """

    value: float
    errors: int
    n: int
    delta: float

    @property
    def n_samples(self) -> int:
        return self.n

    @property
    def capacity(self) -> float:
        """``nan`` (the protocol's "none"), since a fixed classifier has no complexity term."""
        return math.nan

    def gap_at(self, n: int) -> float:
        """``value`` at ``n`` test examples; at another ``n``, the Chernoff form
        ``kl^-1(errors/n_0, ln(1/delta)/n)`` of the same error rate (an upper bound on the binomial bound
        at that rate), passed through ``value``: its ``max`` with ``value`` below ``n_0``, its ``min``
        above (so that the curve does not increase)."""
        n = check_positive_int(n, "n")
        if n == self.n:
            return self.value
        ch = kl_inverse_upper(self.errors / self.n, math.log(1 / self.delta) / n)
        return max(self.value, ch) if n < self.n else min(self.value, ch)

    @property
    def trivial_reason(self) -> str:
        return (
            f"the test-set bound {self.value:.6g} is at or above the loss range {LOSS_RANGE:g}"
            if self.value >= LOSS_RANGE
            else ""
        )

    def _dict_fields(self) -> dict:
        return {"errors": self.errors, "delta": self.delta}

    @classmethod
    def examples(cls) -> list:
        return [
            binomial_test_bound(0, 10, 0.05),
            binomial_test_bound(10, 10, 0.05),
            binomial_test_bound(15, 150, 0.05),
        ]


def binomial_test_bound(errors: int, n: int, delta: float) -> BinomialTestBound:
    """The exact binomial test-set bound (Langford 2005): the largest ``p`` with
    ``P[Bin(n, p) <= errors] >= delta``; ``1`` when ``errors = n``. The returned value is never below the
    exact one (the bracket is verified in 40 digits); see :func:`binomial_cdf` for the tail identity.

    >>> binomial_test_bound(3, 3, 0.1).value
    1.0

    Book: :prf:ref:`thm-pb-test-set`, :prf:ref:`prop-pb-test-set-coverage`.
    """
    n = check_positive_int(n, "n")
    errors = check_positive_int(errors, "errors", minimum=0)
    if errors > n:
        raise ParameterError(f"errors must be <= n = {n}, got {errors}")
    delta = _check_delta(delta)
    v = 1.0 if errors == n else _binomial_upper(errors, n, delta)
    return BinomialTestBound(v, errors, n, delta)
