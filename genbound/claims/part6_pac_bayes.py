"""Claims of :ref:`ch-pac-bayes` (Part VI): the change of measure, Maurer's moment, the PAC-Bayes-kl
theorem, the kl inverse and its brackets, the Monte Carlo chaining, the diagonal-Gaussian KL, the
binomial tail and test-set bound, and the union over a prior-scale grid.

Every check evaluates the functions of :mod:`genbound.bounds.pac_bayes` that produce the book's numbers
(looked up on the module at call time, so that a mutant's patch is seen), against references computed
here independently: sympy's expressions, 40-digit mpmath, scipy's incomplete beta, exact binomial sums.
Equalities are checked from both sides (``max(a/b, b/a)``); the coverage statements (a bound fails with
probability at most ``delta``) by the exact failure probability over all outcomes of a Bernoulli sample.

One concept: the claims of one chapter (the naming scheme of ``genbound.claims``).
"""

from __future__ import annotations

import math
import random

import mpmath
import numpy as np
import torch

from . import register
from ._core import (
    AllOf,
    Claim,
    FunctionCheck,
    InequalityCheck,
    call_with_time_limit,
    replaced,
    scaled,
)
from ..bounds import pac_bayes as pb
from ..symbolic import pac_bayes as spb
from ._part6 import binom_pmf as _binom_pmf, kl40 as _kl, root_ratios as _root_ratios
from ._part6 import test_set_coverage, two_sided as _two_sided

CH = "book/part6/pac_bayes.md"
F64 = torch.float64
_COV = "genbound.bounds.pac_bayes."


# ---------------------------------------------------------------------------------------------------
# lem-pb-change-of-measure
# ---------------------------------------------------------------------------------------------------
_K = 6


def _dv_sample(gen: torch.Generator, n: int) -> dict:
    """Logits ``a`` of ``Q``, ``b`` of ``P`` and a function ``f`` on six outcomes (scales over three
    decades); a quarter of the instances start at the Gibbs measure ``Q ∝ P e^f`` (equality)."""
    scale = 10 ** (torch.rand(n, 1, generator=gen, dtype=F64) * 3 - 1.5)
    b = torch.randn(n, _K, generator=gen, dtype=F64) * scale
    f = torch.randn(n, _K, generator=gen, dtype=F64) * scale
    a = torch.randn(n, _K, generator=gen, dtype=F64) * scale
    gibbs = torch.log_softmax(b, -1) + f
    a[: n // 4] = gibbs[: n // 4]
    return {"a": a, "b": b, "f": f}


def _dv_ratio(a, b, f):
    q, p = torch.softmax(a, -1), torch.softmax(b, -1)
    return torch.exp((q * f).sum(-1) - pb.change_of_measure_bound(q, p, f))


def _kl_reference(q: list, p: list) -> float:
    """``sum_i q_i ln(q_i / p_i)`` in 30 digits (``0 ln 0 = 0``), independent of the package."""
    with mpmath.workdps(30):
        return float(
            mpmath.fsum(
                mpmath.mpf(a) * mpmath.log(mpmath.mpf(a) / mpmath.mpf(b))
                for a, b in zip(q, p)
                if a > 0
            )
        )


def _dv_values_check(seed: int) -> tuple[float, int]:
    """Two-sided, values: ``kl_categorical`` against the 30-digit sum (``1 + |difference|``, scaled so that
    ``1e-12`` absolute maps to the claim's tolerance), on random pairs over three decades of logit scale and
    with exact zeros in ``Q``; and equality at the Gibbs measure: ``change_of_measure_bound(Q*, P, f)`` is
    ``E_{Q*} f`` to the same tolerance."""
    gen = torch.Generator().manual_seed(int(seed))
    d = _dv_sample(gen, 400)
    q, p = torch.softmax(d["a"], -1), torch.softmax(d["b"], -1)
    q[::7, 0] = 0.0  # exact zeros in Q (0 ln 0 = 0)
    q = q / q.sum(-1, keepdim=True)
    got = pb.kl_categorical(q, p)
    worst = 0.0
    for i in range(q.shape[0]):
        ref = _kl_reference(q[i].tolist(), p[i].tolist())
        worst = max(worst, 1.0 + 1e-9 * abs(float(got[i]) - ref) / (1e-12 * max(1.0, abs(ref))))
    gibbs = torch.softmax(torch.log_softmax(d["b"], -1) + d["f"], -1)
    rhs = pb.change_of_measure_bound(gibbs, p, d["f"])
    lhs = (gibbs * d["f"]).sum(-1)
    scale = 1e-12 * torch.clamp((gibbs * d["f"].abs()).sum(-1), min=1.0)
    worst = max(worst, float((1.0 + 1e-9 * (rhs - lhs).abs() / scale).max()))
    return worst, 2 * q.shape[0]


register(
    Claim(
        label="lem-pb-change-of-measure",
        statement="E_Q f <= KL(Q||P) + ln E_P e^f for all Q << P, with equality at Q ∝ P e^f",
        chapter=CH,
        provenance="standard",
        numeric=AllOf(
            (
                InequalityCheck(_dv_sample, _dv_ratio, trials=3000, starts=16, steps=100, lr=0.05),
                FunctionCheck(_dv_values_check),
            )
        ),
        symbolic=spb.verify_gibbs_attains_change_of_measure,
        rtol=1e-9,
        covers=(_COV + "change_of_measure_bound", _COV + "kl_categorical"),
        mutants=(
            replaced(
                pb,
                "kl_categorical",
                lambda old: lambda q, p: 0.0 * old(q, p),
                name="kl-dropped",
                what="the KL term left out: E_Q f <= ln E_P e^f",
            ),
            replaced(
                pb,
                "change_of_measure_bound",
                lambda old: lambda q, p, f: pb.kl_categorical(q, p) + (p * f).sum(-1),
                name="mean-for-log-mgf",
                what="ln E_P e^f replaced by E_P f (Jensen the wrong way)",
            ),
        ),
    )
)


# ---------------------------------------------------------------------------------------------------
# lem-pb-maurer
# ---------------------------------------------------------------------------------------------------
def _bernoulli_moment(n: int, p: float) -> float:
    """``E[exp(n kl(K/n || p))]`` for ``K ~ Bin(n, p)``, summed in 30 digits."""
    with mpmath.workdps(30):
        pm, total = mpmath.mpf(p), mpmath.mpf(0)
        for k in range(n + 1):
            q = mpmath.mpf(k) / n
            total += (
                mpmath.binomial(n, k)
                * pm**k
                * (1 - pm) ** (n - k)
                * mpmath.exp(n * pb._kl_mp(q, pm))
            )
        return float(total)


def _stirling_ratio(k: int) -> float:
    """``stirling_error(k)`` against ``ln k! - (k + 1/2) ln k + k - ln(2 pi)/2`` in 40 digits, as
    ``1 + |difference|`` scaled so that the absolute tolerance maps to the claim's ``1e-9``: ``1e-13`` where
    the package subtracts lgamma terms (``k <= 15``), ``1e-15`` on its series branch (``k > 15``)."""
    with mpmath.workdps(40):
        km = mpmath.mpf(k)
        ref = float(
            mpmath.loggamma(km + 1)
            - (km + mpmath.mpf(1) / 2) * mpmath.log(km)
            + km
            - mpmath.log(2 * mpmath.pi) / 2
        )
    got = float(pb.stirling_error(np.array([float(k)]))[0])
    tol = 1e-13 if k <= 15 else 1e-15
    return 1.0 + 1e-9 * abs(got - ref) / tol


def _maurer_check(seed: int) -> tuple[float, int]:
    """Two-sided: the package's ``xi(n)`` against the Bernoulli moment at random ``(n, p)`` (it does not
    depend on ``p``); one-sided: ``sqrt(n) <= xi(n) <= 2 sqrt(n)`` at every ``n`` in ``[8, 3000]`` and on a
    log grid up to ``10^6``."""
    rng = random.Random(seed)
    worst, trials = 0.0, 0
    for n in [1, 2, 3, 8] + [rng.randint(1, 400) for _ in range(6)]:
        p = rng.choice(
            [rng.uniform(0, 1), 10 ** rng.uniform(-6, -1), 1 - 10 ** rng.uniform(-6, -1)]
        )
        worst = max(worst, _two_sided(pb.maurer_xi(n), _bernoulli_moment(n, p)))
        trials += 1
    for k in [1, 2, 7, 15, 16, 17, 23, 40] + [rng.randint(16, 10**6) for _ in range(20)]:
        worst = max(worst, _stirling_ratio(k))
        trials += 1
    ns = list(range(8, 3001)) + [int(round(10 ** (3.5 + 0.25 * i))) for i in range(11)]
    for n in ns:
        x = pb.maurer_xi(n)
        worst = max(worst, x / (2 * math.sqrt(n)), math.sqrt(n) / x)
        trials += 1
    return worst, trials


register(
    Claim(
        label="lem-pb-maurer",
        statement="for [0,1]-valued losses E exp(n kl(e_S || e)) <= xi(n), with equality for Bernoulli losses; "
        "sqrt(n) <= xi(n) <= 2 sqrt(n) for n >= 8",
        chapter=CH,
        provenance="paper",
        numeric=FunctionCheck(_maurer_check),
        symbolic=spb.verify_bernoulli_mgf_term,
        rtol=1e-9,
        covers=(_COV + "maurer_xi", _COV + "maurer_log_term", _COV + "stirling_error"),
        mutants=(
            scaled(
                pb,
                "maurer_xi",
                1.0 + 1e-6,
                name="xi-1e-6-high",
                what="xi(n) one part in a million high",
            ),
            replaced(
                pb,
                "maurer_xi",
                lambda old: lambda n: 2 * math.sqrt(n),
                name="xi-is-2sqrt",
                what="xi(n) replaced by its upper bound 2 sqrt(n)",
            ),
            replaced(
                pb,
                "maurer_xi",
                lambda old: lambda n: old(n) if n < 100 else math.sqrt(n),
                name="xi-is-sqrt",
                what="xi(n) replaced by sqrt(n) from n = 100 on",
            ),
        ),
    )
)


# ---------------------------------------------------------------------------------------------------
# thm-pb-kl
# ---------------------------------------------------------------------------------------------------
def _xi_reference(n: int) -> float:
    with mpmath.workdps(30):
        return float(
            mpmath.fsum(
                mpmath.binomial(n, k)
                * (mpmath.mpf(k) / n) ** k
                * (1 - mpmath.mpf(k) / n) ** (n - k)
                for k in range(n + 1)
            )
        )


def _pbkl_check(seed: int) -> tuple[float, int]:
    """(a) The bound is the kl inverse of the theorem's budget ``[KL + ln(xi(n)/delta)]/n`` (xi summed
    here in mpmath): ``budget / kl(q || B) <= 1`` and ``kl(q || B - 1e-11) / budget <= 1``.
    (b) Coverage, exactly: one hypothesis (``Q = P``, ``KL = 0``) with Bernoulli losses of mean ``p``; the
    probability over ``K ~ Bin(n, p)`` that the bound at ``K/n`` lies below ``p``, divided by ``delta``."""
    rng = random.Random(seed)
    worst, trials = 0.0, 0
    for _ in range(12):
        n = rng.choice([rng.randint(1, 30), rng.randint(30, 400)])
        q, kl, delta = (
            rng.choice([0.0, rng.uniform(0, 1)]),
            10 ** rng.uniform(-3, 2),
            10 ** rng.uniform(-4, -0.5),
        )
        budget = (kl + math.log(_xi_reference(n) / delta)) / n
        b = pb.pac_bayes_kl_bound(q, kl, n, delta)
        worst = max(worst, _root_ratios(q, b, budget))
        trials += 1
    for _ in range(6):
        n, delta = rng.randint(5, 60), rng.choice([0.01, 0.05, 0.2, 0.5])
        bounds = [pb.pac_bayes_kl_bound(k / n, 0.0, n, delta) for k in range(n + 1)]
        # the failure probability jumps up just above each bound value: probe there
        for p in sorted(set(min(1 - 1e-12, x * (1 + 1e-9) + 1e-12) for x in bounds))[:25]:
            pmf = _binom_pmf(n, p)
            fail = sum(pk for k, pk in enumerate(pmf) if bounds[k] < p)
            worst = max(worst, fail / delta)
            trials += 1
    return worst, trials


register(
    Claim(
        label="thm-pb-kl",
        statement="with probability >= 1 - delta over S of size n, for all Q: "
        "kl(e_S(Q) || e(Q)) <= [KL(Q||P) + ln(xi(n)/delta)] / n",
        chapter=CH,
        provenance="paper",
        numeric=FunctionCheck(_pbkl_check),
        rtol=1e-9,
        covers=(_COV + "pac_bayes_kl_bound",),
        mutants=(
            scaled(pb, "maurer_xi", 0.5, name="xi-halved", what="xi(n) halved inside the bound"),
            replaced(
                pb,
                "pac_bayes_kl_bound",
                lambda old: (
                    lambda q, kl, n, delta: pb.kl_inverse_upper(q, (kl + math.log(1 / delta)) / n)
                ),
                name="no-xi",
                what="the ln xi(n) term dropped (the budget ln(1/delta)/n)",
            ),
            replaced(
                pb,
                "pac_bayes_kl_bound",
                lambda old: lambda q, kl, n, delta: old(q, kl, n + 1, delta),
                name="n-plus-one",
                what="n + 1 in place of n",
            ),
        ),
        loose_reason=None,
    )
)


# ---------------------------------------------------------------------------------------------------
# lem-pb-kl-inverse
# ---------------------------------------------------------------------------------------------------
def _qc_cases(rng: random.Random, k: int) -> list[tuple[float, float]]:
    qs = [0.0, 1e-12, 0.5, 1 - 1e-6, 1 - 1e-12]
    out = [(q, c) for q in qs for c in (1e-9, 0.01, 1.0)]
    for _ in range(k):
        q = rng.choice(
            [rng.uniform(0, 1), 10 ** rng.uniform(-9, -1), 1 - 10 ** rng.uniform(-9, -1)]
        )
        out.append((q, 10 ** rng.uniform(-9, 1.5)))
    return out


def _ratio_or_inf(a: float, b: float) -> float:
    """``a / b``, ``inf`` at ``b = 0``."""
    return a / b if b > 0 else math.inf


#: seconds one kl inverse may take inside the check of lem-pb-kl-inverse (it takes milliseconds)
KLINV_SECONDS = 30.0


def _klinv_check(seed: int) -> tuple[float, int]:
    """Never below: ``c / kl(q || B) <= 1``; the root: ``kl(q || B - 1e-11) / c <= 1`` (40 digits);
    increasing in ``q`` and in ``c``: ``B(q1, c) / B(q2, c) <= 1`` for ``q1 < q2``, likewise in ``c``; and
    :func:`~genbound.bounds.pac_bayes.binary_kl` against the 40-digit ``kl`` (``|kl - kl_40| / (1e-12 +
    1e-9 kl_40) <= 1``)."""
    rng = random.Random(seed)
    worst, trials = 0.0, 0
    for q, c in _qc_cases(rng, 60):
        b = pb.kl_inverse_upper(q, c)
        worst = max(worst, _root_ratios(q, b, c))
        q2 = min(1.0, q + rng.choice([1e-9, 1e-4, 0.1]) * rng.random())
        c2 = c * (1 + rng.choice([1e-9, 1e-3, 1.0]) * rng.random())
        worst = max(worst, b / pb.kl_inverse_upper(q2, c), b / pb.kl_inverse_upper(q, c2))
        trials += 1
    # the tolerance argument: tol = 1e-300 bisects to adjacent floats (kl(q || B^-) <= c for the float B^- below
    # B), under a time limit (a bisection whose guard no longer stops it never returns); tol = 0.1 stays
    # within 0.1 of the root (kl(q || B - 0.1 - 1e-12) <= c)
    for q, c in _qc_cases(rng, 12):
        for tol in (1e-300, 0.1):
            try:
                b = call_with_time_limit(
                    lambda q=q, c=c, tol=tol: pb.kl_inverse_upper(q, c, tol=tol), KLINV_SECONDS
                )
            except TimeoutError:
                return math.inf, trials
            worst = max(
                worst,
                _root_ratios(q, b, c)
                if tol < 1e-200
                else (
                    math.inf if b < q else 0.0 if b >= 1.0 else _ratio_or_inf(c, float(_kl(q, b)))
                ),
            )
            below = math.nextafter(b, 0.0) if tol < 1e-200 else b - 0.1 - 1e-12
            if below > q:
                worst = max(worst, float(_kl(q, below)) / c)
            trials += 1
    # the float kl the bisection starts from, against the 40-digit one: |kl - kl_40| <= 1e-12 + 1e-9 kl_40
    for q, p in [(0.0, 0.5), (1.0, 0.5), (0.3, 0.3), (0.25, 1e-9), (1 - 1e-9, 0.5)] + [
        (rng.uniform(0, 1), rng.uniform(1e-6, 1 - 1e-6)) for _ in range(40)
    ]:
        ref = float(_kl(q, p))
        worst = max(worst, abs(pb.binary_kl(q, p) - ref) / (1e-12 + 1e-9 * ref))
        trials += 1
    return worst, trials


register(
    Claim(
        label="lem-pb-kl-inverse",
        statement="kl^-1(q, c) = sup{p in [q,1]: kl(q||p) <= c} is the root of kl(q||p) = c in [q, 1] (or 1), "
        "non-decreasing in q and in c; kl_inverse_upper returns it, never below, within 1e-11",
        chapter=CH,
        provenance="standard",
        numeric=FunctionCheck(_klinv_check),
        rtol=1e-9,
        covers=(_COV + "kl_inverse_upper", _COV + "binary_kl"),
        mutants=(
            replaced(
                pb,
                "kl_inverse_upper",
                lambda old: lambda q, c, **k: max(q, old(q, c, **k) - 1e-10),
                name="below-by-1e-10",
                what="the bisection's value 1e-10 below the inverse",
            ),
            replaced(
                pb,
                "kl_inverse_upper",
                lambda old: lambda q, c, **k: min(1.0, old(q, c, **k) + 1e-9),
                name="above-by-1e-9",
                what="a value 1e-9 above the inverse",
            ),
            replaced(
                pb,
                "kl_inverse_upper",
                lambda old: lambda q, c, **k: old(q, c, **k) if q < 0.5 else old(0.5, c, **k),
                name="frozen-above-half",
                what="the inverse evaluated at q = 1/2 for every q >= 1/2",
            ),
        ),
    )
)


# ---------------------------------------------------------------------------------------------------
# lem-pb-kl-inverse-zero
# ---------------------------------------------------------------------------------------------------
def _klinv_zero_check(seed: int) -> tuple[float, int]:
    rng = random.Random(seed)
    cs = [10 ** rng.uniform(-3, 1.5) for _ in range(200)] + [1e-3, 0.1, 1.0, 30.0]
    return max(_two_sided(pb.kl_inverse_upper(0.0, c), -math.expm1(-c)) for c in cs), len(cs)


register(
    Claim(
        label="lem-pb-kl-inverse-zero",
        statement="kl^-1(0, c) = 1 - e^(-c)",
        chapter=CH,
        provenance="standard",
        numeric=FunctionCheck(_klinv_zero_check),
        symbolic=lambda: bool(
            spb.sp.simplify(spb.kl_inverse_at_zero() - (1 - spb.sp.exp(-spb.c))) == 0
        ),
        rtol=1e-9,
        covers=(_COV + "kl_inverse_upper",),
        mutants=(
            replaced(
                pb,
                "kl_inverse_upper",
                lambda old: lambda q, c, **k: min(1.0, q + c),
                name="first-order",
                what="kl^-1(0, c) = c (the first-order term)",
            ),
            replaced(
                pb,
                "kl_inverse_upper",
                lambda old: lambda q, c, **k: min(1.0, q + math.sqrt(c / 2)),
                name="pinsker",
                what="the Pinsker upper end q + sqrt(c/2) in place of the inverse",
            ),
        ),
    )
)


# ---------------------------------------------------------------------------------------------------
# lem-pb-pinsker-bracket
# ---------------------------------------------------------------------------------------------------
def _bracket_check(seed: int) -> tuple[float, int]:
    """``(B - q) / (hi - q) <= 1`` for the package's bracket ``(q, hi)`` and ``B = kl^-1(q, c)``; tight
    for ``q`` near ``1/2`` and small ``c`` (Pinsker), ``B >= q`` checked as ``q / B <= 1``; the bracket's
    upper end is also checked two-sided against the sympy root of ``(p - q)^2 = 2 p c`` and
    ``q + sqrt(c / a)`` with ``a`` sympy's Pinsker constant."""
    rng = random.Random(seed)
    a = float(spb.pinsker_constant())
    root = spb.sp.lambdify((spb.q, spb.c), spb.small_kl_root(), "math")
    worst, trials = 0.0, 0
    cases = _qc_cases(rng, 80) + [(0.5, 10**-e) for e in range(3, 9)]
    for q, c in cases:
        b = pb.kl_inverse_upper(q, c)
        lo, hi = pb.kl_inverse_bracket(q, c)
        if hi > q:
            worst = max(worst, (b - q) / (hi - q))
        if b > 0:
            worst = max(worst, lo / b)
        want = min(1.0, q + math.sqrt(c / a), root(q, c) if q > 0 else 2 * c)
        worst = max(worst, _two_sided(hi, want))
        trials += 1
    return worst, trials


register(
    Claim(
        label="lem-pb-pinsker-bracket",
        statement="q <= kl^-1(q, c) <= min(1, q + sqrt(c/2), q + c + sqrt(c^2 + 2qc)) <= q + sqrt(2qc) + 2c",
        chapter=CH,
        provenance="standard",
        numeric=FunctionCheck(_bracket_check),
        symbolic=lambda: spb.verify_pinsker_derivative() and spb.verify_small_kl_derivative(),
        rtol=1e-9,
        covers=(_COV + "kl_inverse_bracket",),
        mutants=(
            scaled(
                pb,
                "PINSKER_CONSTANT",
                2.0,
                name="pinsker-4",
                what="kl >= 4 (p-q)^2 (constant doubled)",
            ),
            replaced(
                pb,
                "kl_inverse_bracket",
                lambda old: lambda q, c: (q, min(1.0, q + math.sqrt(c / 2), q + 2 * c)),
                name="sqrt-term-dropped",
                what="the small-kl end without its sqrt(2qc) term",
            ),
        ),
    )
)


# ---------------------------------------------------------------------------------------------------
# cor-pb-monte-carlo
# ---------------------------------------------------------------------------------------------------
def _mc_check(seed: int) -> tuple[float, int]:
    """(a) Coverage of the sampling step, exactly, for Bernoulli per-draw errors of mean ``s``: the
    probability over ``K ~ Bin(N, s)`` that ``monte_carlo_upper(K/N)`` is below ``s``, over ``delta'``
    (at most ``1/2`` here: the ``ln 2`` pays for a two-sided statement; ratios are doubled so that the
    check is tight). (b) The chain: the certificate ``C`` is the kl inverse of the corrected rate ``U`` at
    the theorem's budget, and ``U`` that of the mean at ``ln(2/delta')/N`` (:func:`_root_ratios`)."""
    rng = random.Random(seed)
    worst, trials = 0.0, 0
    for _ in range(4):
        N, dmc = rng.randint(5, 60), rng.choice([0.01, 0.05, 0.3])
        ups = [pb.monte_carlo_upper(k / N, N, dmc) for k in range(N + 1)]
        for s in sorted(set(min(1 - 1e-12, u * (1 + 1e-9) + 1e-12) for u in ups))[:20]:
            fail = sum(pk for k, pk in enumerate(_binom_pmf(N, s)) if ups[k] < s)
            worst = max(worst, 2 * fail / dmc)
            trials += 1
    for _ in range(20):
        mean, N = rng.choice([0.0, rng.uniform(0, 0.5)]), rng.randint(10, 10**5)
        n, kl = rng.randint(20, 5000), 10 ** rng.uniform(-2, 2)
        delta, dmc = 10 ** rng.uniform(-3, -1), 10 ** rng.uniform(-3, -1)
        cert = pb.pac_bayes_kl_certificate(mean, N, kl, n, delta, dmc)
        u = pb.kl_inverse_upper(mean, math.log(2 / dmc) / N)
        budget = (
            (kl + math.log(_xi_reference(n) / delta)) / n
            if n <= 400
            else (kl + math.log(pb.maurer_xi(n) / delta)) / n
        )
        worst = max(
            worst, _root_ratios(u, cert, budget), _root_ratios(mean, u, math.log(2 / dmc) / N)
        )
        trials += 1
    return worst, trials


register(
    Claim(
        label="cor-pb-monte-carlo",
        statement="with probability >= 1 - delta - delta' over S and N draws h_i ~ Q: "
        "e(Q) <= kl^-1(kl^-1(mean_i e_S(h_i), ln(2/delta')/N), [KL + ln(xi(n)/delta)]/n)",
        chapter=CH,
        provenance="paper",
        numeric=FunctionCheck(_mc_check),
        rtol=1e-9,
        covers=(_COV + "monte_carlo_upper", _COV + "pac_bayes_kl_certificate"),
        mutants=(
            replaced(
                pb,
                "pac_bayes_kl_certificate",
                lambda old: lambda m, N, kl, n, d, dm: pb.pac_bayes_kl_bound(m, kl, n, d),
                name="raw-mean",
                what="the Monte Carlo mean fed into the kl inverse uncorrected",
            ),
            replaced(
                pb,
                "monte_carlo_upper",
                lambda old: lambda m, N, dm: pb.kl_inverse_upper(m, math.log(1 / dm) / N) * 0 + m,
                name="no-correction",
                what="the sampling step returns the mean itself",
            ),
        ),
    )
)


# ---------------------------------------------------------------------------------------------------
# lem-pb-gaussian-kl
# ---------------------------------------------------------------------------------------------------
def _gauss_check(seed: int) -> tuple[float, int]:
    """``kl_diag_gaussians`` against the sum of sympy's one-dimensional integral (two-sided), and the
    isotropic optimum: two-sided against sympy's ``(S + D)/d``, and ``KL(v*) / KL(v* t) <= 1`` for
    ``t`` near and far from 1 (tight as ``t -> 1``)."""
    m1, m2 = spb.sp.symbols("m1 m2", real=True)
    s1, s2 = spb.sp.symbols("s1 s2", positive=True)
    f1d = spb.sp.lambdify((m1, s1, m2, s2), spb.gaussian_kl_1d(), "math")
    S, D, d = spb.sp.symbols("S D d", positive=True)
    fopt = spb.sp.lambdify((S, D, d), spb.isotropic_optimum(), "math")
    gen = torch.Generator().manual_seed(int(seed))
    worst, trials = 0.0, 0
    for _ in range(40):
        dim = int(torch.randint(1, 40, (1,), generator=gen))
        sc = float(10 ** (torch.rand(1, generator=gen) * 4 - 2))
        mq, mp = (torch.randn(dim, generator=gen, dtype=F64) * sc for _ in range(2))
        sq = torch.rand(dim, generator=gen, dtype=F64) * sc + 1e-3 * sc
        sp_ = float(torch.rand(1, generator=gen, dtype=F64)) * sc + 1e-2 * sc
        got = float(pb.kl_diag_gaussians(mq, sq, mp, sp_))
        want = math.fsum(
            f1d(a, s, b, sp_) for a, s, b in zip(mq.tolist(), sq.tolist(), mp.tolist())
        )
        if want > 1e-12:
            worst = max(worst, _two_sided(got, want))
        v = pb.isotropic_prior_variance(mq, sq, mp)
        worst = max(
            worst, _two_sided(v, fopt(float((sq**2).sum()), float(((mq - mp) ** 2).sum()), dim))
        )
        kv = float(pb.kl_diag_gaussians(mq, sq, mp, math.sqrt(v)))
        for t in (1 - 1e-4, 1 + 1e-4, 0.5, 2.0):
            worst = max(worst, kv / float(pb.kl_diag_gaussians(mq, sq, mp, math.sqrt(v * t))))
        trials += 1
    return worst, trials


register(
    Claim(
        label="lem-pb-gaussian-kl",
        statement="KL(N(mu_q, diag s_q^2) || N(mu_p, diag s_p^2)) = (1/2) sum [s_q^2/s_p^2 + (mu_q-mu_p)^2/s_p^2 "
        "- 1 + ln(s_p^2/s_q^2)]; over isotropic priors N(mu_p, v I) it is least at "
        "v = (sum s_q^2 + ||mu_q - mu_p||^2)/d",
        chapter=CH,
        provenance="standard",
        numeric=FunctionCheck(_gauss_check),
        symbolic=spb.verify_gaussian_kl_1d,
        rtol=1e-9,
        covers=(_COV + "kl_diag_gaussians", _COV + "isotropic_prior_variance"),
        mutants=(
            scaled(
                pb,
                "kl_diag_gaussians",
                0.5,
                name="half",
                what="the KL without its factor 1/2 halved again",
            ),
            replaced(
                pb,
                "isotropic_prior_variance",
                lambda old: lambda mq, sq, mp: float((torch.as_tensor(sq) ** 2).mean()),
                name="no-mean-shift",
                what="the optimal variance without the ||mu_q - mu_p||^2 term",
            ),
        ),
    )
)


# ---------------------------------------------------------------------------------------------------
# lem-pb-binomial-beta
# ---------------------------------------------------------------------------------------------------
def _beta_check(seed: int) -> tuple[float, int]:
    """``binomial_cdf(k, n, p)`` against scipy's ``betainc(n - k, k + 1, 1 - p)``, two-sided, where the
    value exceeds ``1e-250`` (scipy's range), ``n`` up to 3000."""
    from scipy.special import betainc

    rng = random.Random(seed)
    worst, trials = 0.0, 0
    for _ in range(150):
        n = rng.choice([rng.randint(1, 20), rng.randint(20, 3000)])
        k = rng.randint(0, n - 1)
        p = rng.choice(
            [rng.uniform(0, 1), 10 ** rng.uniform(-6, 0), 1 - 10 ** rng.uniform(-6, -0.01)]
        )
        want = float(betainc(n - k, k + 1, 1 - p))
        if want > 1e-250:
            worst = max(worst, _two_sided(pb.binomial_cdf(k, n, p), want))
            trials += 1
    return worst, trials


register(
    Claim(
        label="lem-pb-binomial-beta",
        statement="P[Bin(n, p) <= k] = I_{1-p}(n - k, k + 1) (the regularised incomplete beta function)",
        chapter=CH,
        provenance="standard",
        numeric=FunctionCheck(_beta_check),
        symbolic=spb.verify_binomial_beta_identity,
        rtol=1e-9,
        covers=(_COV + "binomial_cdf",),
        mutants=(
            replaced(
                pb,
                "binomial_cdf",
                lambda old: lambda k, n, p, **kw: old(k - 1, n, p, **kw),
                name="off-by-one",
                what="P[Bin(n, p) <= k - 1]",
            ),
            replaced(
                pb,
                "binomial_cdf",
                lambda old: lambda k, n, p, **kw: old(k, n, 1 - p, **kw),
                name="p-for-1-p",
                what="I_p in place of I_{1-p}",
            ),
        ),
    )
)


# ---------------------------------------------------------------------------------------------------
# thm-pb-test-set
# ---------------------------------------------------------------------------------------------------
def _testset_check(seed: int) -> tuple[float, int]:
    """(a) Coverage, exactly: over ``K ~ Bin(n, p)``, ``P[bound(K) < p] / delta <= 1``, probed just above
    each bound value (where it is largest: tight). (b) The root: ``P[Bin(n, B) <= k] / delta <= 1`` and
    ``delta / P[Bin(n, B - 1e-11) <= k] <= 1`` (the exact tails in 40 digits)."""
    rng = random.Random(seed)
    worst, trials = 0.0, 0
    for _ in range(4):
        n, delta = rng.randint(3, 50), rng.choice([0.01, 0.05, 0.3])
        bounds = [pb.binomial_test_bound(k, n, delta).value for k in range(n + 1)]
        for p in sorted(set(min(1 - 1e-12, x * (1 + 1e-9) + 1e-13) for x in bounds))[:15]:
            fail = sum(pk for k, pk in enumerate(_binom_pmf(n, p)) if bounds[k] < p)
            worst = max(worst, fail / delta)
            trials += 1
    for _ in range(25):
        n = rng.choice([rng.randint(1, 50), rng.randint(50, 3000)])
        k, delta = rng.randint(0, n - 1), 10 ** rng.uniform(-4, -0.3)
        r = pb.binomial_test_bound(k, n, delta)
        b = r.value
        with mpmath.workdps(40):
            worst = max(
                worst,
                float(pb._tail_mp(k, n, b) / mpmath.mpf(delta)),
                float(mpmath.mpf(delta) / pb._tail_mp(k, n, max(0.0, b - 1e-11))),
            )
        # gap_at: the Chernoff form at the same rate through the value (max below n, min above), two-sided
        for n2 in (max(1, n // 3), 7 * n + 1):
            ch = pb.kl_inverse_upper(k / n, math.log(1 / delta) / n2)
            worst = max(worst, _two_sided(r.gap_at(n2), max(b, ch) if n2 < n else min(b, ch)))
        trials += 1
    return worst, trials


register(
    Claim(
        label="thm-pb-test-set",
        statement="for a classifier fixed before n test examples, with probability >= 1 - delta its error is at most "
        "the largest p with P[Bin(n, p) <= k] >= delta (k its test errors)",
        chapter=CH,
        provenance="standard",
        numeric=FunctionCheck(_testset_check),
        rtol=1e-9,
        covers=(_COV + "binomial_test_bound", _COV + "BinomialTestBound.gap_at"),
        mutants=(
            replaced(
                pb,
                "binomial_test_bound",
                lambda old: lambda k, n, d: old(k, n, min(0.99, 2 * d)),
                name="delta-doubled",
                what="the tail set to 2 delta",
            ),
            replaced(
                pb,
                "binomial_test_bound",
                lambda old: lambda k, n, d: old(k, n, d / 2),
                name="delta-halved",
                what="the tail set to delta / 2 (valid, but not the stated bound)",
            ),
            replaced(
                pb,
                "binomial_test_bound",
                lambda old: lambda k, n, d: old(max(k - 1, 0), n, d),
                name="one-error-less",
                what="one test error forgotten",
            ),
        ),
    )
)


# prop-pb-test-set-coverage: the exact coverage of the test-set bound (the check in ._part6)
def _quadratic(c):
    return lambda old: (
        lambda k, n, d: pb.BinomialTestBound(
            min(1.0, k / n + math.sqrt(math.log(1 / d) / (c * n))), k, n, d
        )
    )


_TB = (pb, "binomial_test_bound")
_M2D = {"name": "2-delta", "what": "the tail set to 2 delta"}
_MN1 = {"name": "n-plus-one", "what": "n + 1 test examples"}
register(
    Claim(
        label="prop-pb-test-set-coverage",
        statement="for every n, delta and error p: P[binomial_test_bound(K, n, delta) < p] <= delta "
        "for K ~ Bin(n, p), computed exactly (tight just above each bound value)",
        chapter=CH,
        provenance="standard",
        numeric=FunctionCheck(test_set_coverage),
        covers=(_COV + "binomial_test_bound",),
        mutants=(
            replaced(*_TB, lambda o: lambda k, n, d: o(k, n, min(0.99, 2 * d)), **_M2D),
            replaced(*_TB, _quadratic(4), name="quadratic-4", what="k/n + sqrt(ln(1/delta)/(4n))"),
            replaced(*_TB, lambda o: lambda k, n, d: o(k, n + 1, d), **_MN1),
        ),
    )
)


# ---------------------------------------------------------------------------------------------------
# lem-pb-grid-union
# ---------------------------------------------------------------------------------------------------
def _grid_check(seed: int) -> tuple[float, int]:
    """``K * grid_delta(delta, K) = delta`` (two-sided), and the grid certificate equals the least of the
    ``K`` bounds each at confidence ``delta / K`` (computed here from ``kl_inverse_upper`` and mpmath's
    ``xi``), two-sided."""
    rng = random.Random(seed)
    worst, trials = 0.0, 0
    for _ in range(15):
        K, delta, dmc = rng.randint(1, 30), 10 ** rng.uniform(-4, -0.5), 10 ** rng.uniform(-4, -0.5)
        worst = max(worst, _two_sided(K * pb.grid_delta(delta, K), delta))
        n, N, mean = rng.randint(20, 400), rng.randint(10, 10**4), rng.uniform(0, 0.4)
        kls = [10 ** rng.uniform(-1, 2.5) for _ in range(K)]
        cert = pb.pac_bayes_grid_certificate(mean, N, kls, n, delta, dmc)
        u = pb.kl_inverse_upper(mean, math.log(2 / dmc) / N)
        xi = _xi_reference(n)
        want = min(pb.kl_inverse_upper(u, (k + math.log(xi * K / delta)) / n) for k in kls)
        worst = max(worst, _two_sided(cert.value, want))
        # gap_at: the same certificate (its KL, Monte Carlo upper end and grid) at other numbers of examples
        kl = kls[cert.grid_index]
        worst = max(
            worst, _two_sided(cert.kl, kl), _two_sided(cert.capacity, math.sqrt(kl / 2))
        )  # Pinsker's
        for n2 in (rng.randint(1, 400), rng.randint(10**6 + 1, 10**9)):
            at = lambda m, x: pb.kl_inverse_upper(u, (kl + math.log(x * K / delta)) / m)  # noqa: E731
            want2 = (
                at(n2, _xi_reference(n2))
                if n2 <= 400
                else min(at(10**6, pb.maurer_xi(10**6)), at(n2, 2 * math.sqrt(n2)))
            )
            worst = max(worst, _two_sided(cert.gap_at(n2), want2))
        trials += 1
    return worst, trials


register(
    Claim(
        label="lem-pb-grid-union",
        statement="a prior-scale grid of K points fixed before the data, each at confidence delta/K, holds "
        "simultaneously with probability >= 1 - delta; the least of the K certificates is a certificate",
        chapter=CH,
        provenance="standard",
        numeric=FunctionCheck(_grid_check),
        symbolic=spb.verify_union_bookkeeping,
        rtol=1e-9,
        covers=(
            _COV + "grid_delta",
            _COV + "pac_bayes_grid_certificate",
            _COV + "prior_scale_grid",
            _COV + "PacBayesBound.gap_at",
            _COV + "PacBayesBound.capacity",
        ),
        mutants=(
            replaced(
                pb,
                "grid_delta",
                lambda old: lambda d, K: d,
                name="union-unpaid",
                what="every grid point at the full delta",
            ),
            replaced(
                pb,
                "grid_delta",
                lambda old: lambda d, K: d / (K + 1),
                name="union-overpaid",
                what="delta / (K + 1): valid, but not the stated bookkeeping",
            ),
        ),
    )
)


# ---------------------------------------------------------------------------------------------------
# cor-pb-f-quad
# ---------------------------------------------------------------------------------------------------
def _fquad_check(seed: int) -> tuple[float, int]:
    """``f_quad`` against ``(sqrt(e + c/2) + sqrt(c/2))^2`` with ``c = (KL + ln(2 sqrt(n)/delta))/n``, two-sided
    (computed here from sympy's root of ``(p - q)^2 = 2 p c``), and the PAC-Bayes-kl bound at or below it
    for ``n >= 8`` (``pac_bayes_kl_bound / f_quad <= 1``; tight as the KL grows)."""
    rng = random.Random(seed)
    root = spb.sp.lambdify((spb.q, spb.c), spb.small_kl_root(), "math")
    worst, trials = 0.0, 0
    for _ in range(150):
        e, kl = rng.choice([0.0, rng.uniform(0, 0.6)]), 10 ** rng.uniform(-2, 3)
        n, delta = rng.randint(8, 10**5), 10 ** rng.uniform(-4, -0.5)
        c = (kl + math.log(2 * math.sqrt(n) / delta)) / n
        fq = float(pb.f_quad(e, kl, n, delta))
        want = root(e, c) if e > 0 else 2 * c
        worst = max(worst, _two_sided(fq, want))
        if n <= XI_N_MAX:
            worst = max(worst, pb.pac_bayes_kl_bound(e, kl, n, delta) / fq)
        trials += 1
    return worst, trials


XI_N_MAX = 10**5

register(
    Claim(
        label="cor-pb-f-quad",
        statement="f_quad(e, KL, n, delta) = (sqrt(e + c/2) + sqrt(c/2))^2 with c = (KL + ln(2 sqrt(n)/delta))/n, "
        "and kl^-1(e, (KL + ln(xi(n)/delta))/n) <= f_quad for n >= 8",
        chapter=CH,
        provenance="paper",
        numeric=FunctionCheck(_fquad_check),
        rtol=1e-9,
        covers=(_COV + "f_quad",),
        mutants=(
            replaced(
                pb,
                "f_quad",
                lambda old: lambda e, kl, n, d: old(e, kl, n, d) * 0.99,
                name="one-percent-low",
                what="f_quad one per cent low",
            ),
            replaced(
                pb,
                "f_quad",
                lambda old: lambda e, kl, n, d: old(e, kl, 2 * n, d),
                name="n-doubled",
                what="2n in place of n",
            ),
        ),
    )
)
