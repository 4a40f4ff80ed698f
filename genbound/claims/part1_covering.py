"""Claims of :ref:`ch-covering` (``book/part1/covering.md``, Part I: covering numbers and chaining).

Each claim's numeric check computes ``ratio = left side / right side`` on random instances and, where the
quantities are differentiable, pushes the ratio up by projected gradient ascent. Rademacher averages are
computed **exactly** (all ``2^m`` sign vectors) on small instances, so the checks have no Monte Carlo
error unless a docstring says so.
"""

from __future__ import annotations

import itertools
import math
import sys

import torch

from .. import covering as cov
from .. import rademacher as rad
from ..symbolic import dudley as sym_dudley
from . import AllOf, Claim, FunctionCheck, InequalityCheck, register, replaced, scaled
from ._part1 import CH_COV, F64, _TINY, _rad_exact, _rel_ratio, add_equalities

_THIS = sys.modules[__name__]  # mutants patch the right-hand-side functions defined here


def _dom_sample(gen, n):
    d, m = 5, 12
    R = 0.1 + 3 * torch.rand(n, generator=gen, dtype=F64)
    X = torch.randn(n, m, d, generator=gen, dtype=F64)
    X = (
        X
        / torch.linalg.vector_norm(X, dim=-1, keepdim=True)
        * R.view(-1, 1, 1)
        * torch.rand(n, m, 1, generator=gen, dtype=F64)
    )
    return {"X": X, "dw": torch.randn(n, d, generator=gen, dtype=F64), "R": R}


def _dom_project(x):
    nrm = torch.linalg.vector_norm(x["X"], dim=-1, keepdim=True)
    scale = torch.clamp(x["R"].view(-1, 1, 1) / nrm.clamp(min=_TINY), max=1.0)
    return {**x, "X": x["X"] * scale}


def uniform_distance(dw, R):
    """``sup_{||x|| <= R} |(f - g)(x)| = R ||w_f - w_g||_2`` for linear ``f, g`` (the uniform metric)."""
    return R * torch.linalg.vector_norm(dw, dim=-1)


def _dom_ratio(X, dw, R):
    diff = torch.einsum("nmd,nd->nm", X, dw)  # (f - g)(x_i) for linear f, g
    rho2 = diff.pow(2).mean(-1).sqrt()
    rhoinf = diff.abs().amax(-1)
    unif = _THIS.uniform_distance(dw, R)
    return torch.maximum(rho2 / rhoinf.clamp(min=_TINY), rhoinf / unif.clamp(min=_TINY))


register(
    Claim(
        label="lem-cover-domination",
        covers=("genbound.claims.part1_covering.uniform_distance",),
        statement="rho_{S,2}(f,g) <= rho_{S,inf}(f,g) <= sup_{x in X} |f(x) - g(x)|, hence N_2 <= N_inf <= N_unif",
        chapter=CH_COV,
        provenance="standard",
        numeric=InequalityCheck(
            _dom_sample,
            _dom_ratio,
            _dom_project,
            trials=2000,
            starts=16,
            steps=100,
            lr=0.02,
            search=("X", "dw"),
        ),
        mutants=(
            scaled(
                _THIS,
                "uniform_distance",
                0.5,
                name="uniform-halved",
                what="the uniform distance sup_x |f - g| computed as R ||w_f - w_g|| / 2",
            ),
        ),
    )
)


def dudley_test_instances(seed: int = 0):
    """Data sets for the Dudley check: an l2-bounded linear class on ``m <= 12`` points (exact ``R_S``,
    volumetric cover) and finite classes (``log N <= log |A|``). Yields
    ``(name, exact R_S, log_cover, m, c)``."""
    gen = torch.Generator().manual_seed(int(seed))
    for m, d in [(4, 1), (8, 2), (12, 3), (12, 12), (10, 6)]:
        X = torch.randn(m, d, generator=gen, dtype=F64)
        if d > 1:
            X[:, 0] *= 5  # one dominant direction
        B = 1.0
        exact = float(
            rad.empirical_rademacher_linear(
                X, radius=B, norm="l2", n_draws=None, device="cpu"
            ).value
        )
        op = float(torch.linalg.matrix_norm(X, ord=2))
        c = B * op / math.sqrt(m)
        yield (
            f"l2 ball, m={m}, d={d}",
            exact,
            (lambda e, d=d, c=c: cov.euclidean_ball_log_cover(c, e, d)),
            m,
            c,
        )
    for m, N in [(8, 2), (10, 64), (12, 1000)]:
        A = torch.randn(N, m, generator=gen, dtype=F64)
        exact = float(_rad_exact(A))
        c = float(torch.linalg.vector_norm(A, dim=-1).amax()) / math.sqrt(m)
        yield f"finite, N={N}, m={m}", exact, (lambda e, N=N: math.log(N)), m, c
    # the extremal family: the hypercube {-r, r}^m, where R_S = r = c (every sign vector is in the class)
    for m in (4, 8):
        A = torch.tensor(list(itertools.product((-1.0, 1.0), repeat=m)), dtype=F64) * 0.7
        exact = float(_rad_exact(A))
        c = float(torch.linalg.vector_norm(A, dim=-1).amax()) / math.sqrt(m)
        yield f"hypercube, m={m}", exact, (lambda e, m=m: m * math.log(2)), m, c


def _dudley_check(seed):
    worst, n = 0.0, 0
    for _, exact, logn, m, c in dudley_test_instances(seed):
        worst = max(worst, exact / rad.dudley_bound(logn, m=m, diameter=c).value)
        n += 1
    return worst, n


def dudley_riemann_step_ratios(seed: int, n: int = 30) -> tuple[float, int]:
    """The step of :prf:ref:`thm-dudley`'s proof where the integral coefficient is tight: the chaining sum
    ``sum_{j=1}^N 6 eps_j sqrt(log N_j / m)`` (the per-scale 6 from :func:`genbound.symbolic.dudley.dudley_per_scale`)
    over the Riemann sum ``(12/sqrt m) int_{eps_{N+1}}^{eps_1} sqrt(log N)`` of the production objective
    (:func:`genbound.rademacher.dudley_objective` less its ``4 alpha`` at ``alpha = eps_{N+1}``, ``c/2 = eps_1``).
    For a step cover (``log N`` constant on each ``(eps_{j+1}, eps_j]``, non-increasing in ``eps``) the ratio is
    exactly 1: an integral coefficient below 12 fails here, while the theorem's own inequality (against exact
    Rademacher complexities) has slack 2 everywhere (its loose_reason). Returns ``(worst, trials)``."""
    import random

    rng = random.Random(seed)
    per_scale = float(sym_dudley.dudley_per_scale())
    worst, trials = 0.0, 0
    for _ in range(n):
        N, c, m = rng.randint(1, 8), 10 ** rng.uniform(-1, 1), rng.randint(1, 10**6)
        eps = [c * 2.0**-j for j in range(N + 2)]
        L = sorted(10 ** rng.uniform(-2, 3) for _ in range(N))  # log N_j, non-decreasing in j

        def log_cover(e, L=L, c=c, N=N):
            j = min(max(int(math.floor(math.log2(c / e) + 1e-12)), 1), N)
            return L[j - 1]

        alpha = eps[N + 1]
        chain = sum(per_scale * eps[j] * math.sqrt(L[j - 1] / m) for j in range(1, N + 1))
        riemann = (
            rad.dudley_objective(log_cover, alpha, m=m, diameter=c, breakpoints=eps[1 : N + 1])
            - rad.DUDLEY_ALPHA_COEF * alpha
        )
        worst, trials = max(worst, chain / riemann), trials + 1
    return worst, trials


def _dudley_constants_match() -> bool:
    """The constants of :mod:`genbound.rademacher` are the ones :func:`genbound.symbolic.dudley.dudley_constants`
    derives, and the telescoping identity holds."""
    k4, k12 = sym_dudley.dudley_constants()
    return (
        sym_dudley.verify_dudley_telescoping()
        and float(k4) == rad.DUDLEY_ALPHA_COEF
        and float(k12) == rad.DUDLEY_INTEGRAL_COEF
    )


register(
    Claim(
        label="thm-dudley",
        statement="R_S(F) <= inf_{0<alpha<=c/2} 4 alpha + 12/sqrt(m) int_alpha^{c/2} sqrt(log N(F, eps, rho_S)) d eps",
        chapter=CH_COV,
        provenance="standard",
        numeric=AllOf((FunctionCheck(_dudley_check), FunctionCheck(dudley_riemann_step_ratios))),
        symbolic=_dudley_constants_match,
        loose_reason="R_S <= c (Cauchy-Schwarz) while the bound is 2c as soon as 12 sqrt(log N(eps)/m) >= 4 on "
        "(alpha, c/2): the extremal hypercube {-c, c}^m has R_S = c and bound exactly 2c (ratio 1/2); "
        "smaller classes have R_S far below c. The constants 4 and 12 of the chaining proof are not tight",
        mutants=(
            scaled(
                rad,
                "DUDLEY_ALPHA_COEF",
                0.25,
                name="alpha-coef-quartered",
                what="4 alpha replaced by alpha (the remainder of the chain under-counted)",
            ),
            scaled(
                rad,
                "DUDLEY_INTEGRAL_COEF",
                0.5,
                name="integral-coef-halved",
                what="12/sqrt(m) replaced by 6/sqrt(m) (the Riemann step of the proof over-counted)",
            ),
        ),
    )
)


def _dudley_params(gen, n):
    A = 10 ** (4 * torch.rand(n, generator=gen, dtype=F64) - 3)
    L = torch.where(
        torch.rand(n, generator=gen) < 0.3,
        torch.zeros(n, dtype=F64),
        10 ** (3 * torch.rand(n, generator=gen, dtype=F64) - 1),
    )
    m = (10 ** (1 + 5 * torch.rand(n, generator=gen, dtype=F64))).round()
    c = 10 ** (2 * torch.rand(n, generator=gen, dtype=F64) - 1)
    return A.tolist(), L.tolist(), [int(x) for x in m.tolist()], c.tolist()


def _relaxed_objective(alpha, A, lam, m, c):
    """The relaxed Dudley objective ``4 alpha + 12/sqrt(m) (sqrt(A) log(c/(2 alpha)) + sqrt(Lambda)(c/2 - alpha))``
    (constants from :mod:`genbound.rademacher`), vectorised over ``alpha``."""
    return rad.DUDLEY_ALPHA_COEF * alpha + rad.DUDLEY_INTEGRAL_COEF / math.sqrt(m) * (
        math.sqrt(A) * torch.log(c / (2 * alpha)) + math.sqrt(lam) * (c / 2 - alpha)
    )


def _mp_integral(a, lam, lo, hi):
    """``int_lo^hi sqrt(a/eps^2 + lam) d eps`` by ``mpmath.quad`` in ``log eps`` (independent of scipy's quadrature)."""
    import mpmath

    if hi <= lo:
        return 0.0
    f = lambda u: mpmath.sqrt(a * mpmath.exp(-2 * u) + lam) * mpmath.exp(u)  # noqa: E731
    return float(mpmath.quad(f, [mpmath.log(lo), mpmath.log(hi)]))


def _integral_scaled(factor):
    """Mutant maker: :func:`~genbound.rademacher.dudley_bound` reporting ``factor`` times its integral."""
    import dataclasses

    def make(old):
        def new(*args, **kwargs):
            r = old(*args, **kwargs)
            return dataclasses.replace(r, integral=factor * r.integral)

        return new

    return make


def _cutoff_doubled_at_a0(old):
    """Mutant maker: :func:`~genbound.rademacher.dudley_inverse_square` reporting twice its cut-off when ``A = 0``."""
    import dataclasses

    def new(A, Lambda, *, m, diameter):
        r = old(A, Lambda, m=m, diameter=diameter)
        return dataclasses.replace(r, alpha=2 * r.alpha) if A == 0 else r

    return new


def _inv_sq_check(seed):
    """(a) the closed form bounds the numerical infimum of Dudley's objective from above; (b) it is the
    minimum of the relaxed objective: its value is at most the minimum over a fine grid of alpha in (0, c/2]
    refined by golden section (a wrong alpha* gives a larger value, a ratio above 1); (c) with ``A = 0`` it
    equals the infimum of the (then linear) objective, two-sided, with the minimising end as its reported cut-off and
    the integral there; (d) the ``integral`` that
    :func:`~genbound.rademacher.dudley_bound` reports equals the integral at its cut-off (``mpmath.quad``), two-sided."""
    gen = torch.Generator().manual_seed(int(seed))
    worst = 0.0
    A, L, m, c = _dudley_params(gen, 24)
    g = (math.sqrt(5) - 1) / 2
    for k, (a, lam, mm, cc) in enumerate(zip(A, L, m, c)):
        dud = rad.dudley_bound(lambda e: a / e**2 + lam, m=mm, diameter=cc)
        num = dud.value
        if (
            k % 3 == 0
        ):  # the reported integral: int_alpha^{c/2} sqrt(A/eps^2 + Lambda) d eps (mpmath)
            worst = max(worst, _rel_ratio(dud.integral, _mp_integral(a, lam, dud.alpha, cc / 2)))
        closed = rad.dudley_inverse_square(a, lam, m=mm, diameter=cc).value
        grid = cc / 2 * torch.logspace(-12, 0, 4001, dtype=F64)
        vals = _relaxed_objective(grid, a, lam, mm, cc)
        i = int(vals.argmin())
        lo, hi = math.log(grid[max(i - 1, 0)]), math.log(grid[min(i + 1, len(grid) - 1)])
        for _ in range(100):  # golden section in log alpha (the objective is convex in alpha)
            u, v = hi - g * (hi - lo), lo + g * (hi - lo)
            fu, fv = (
                float(_relaxed_objective(torch.tensor(math.exp(x), dtype=F64), a, lam, mm, cc))
                for x in (u, v)
            )
            lo, hi = (lo, v) if fu < fv else (u, hi)
        best = min(
            float(vals.min()),
            float(
                _relaxed_objective(torch.tensor(math.exp((lo + hi) / 2), dtype=F64), a, lam, mm, cc)
            ),
        )
        worst = max(worst, num / closed, closed / best)
    # (c) A = 0 (a finite class, log N = Lambda): the objective is linear in alpha, so the closed form
    # is exactly its infimum, 12 sqrt(Lambda) c / (2 sqrt(m)) (alpha -> 0) or 4 c / 2 (alpha = c/2):
    # compared two-sided with the linear objective's two ends
    for lam, mm, cc in zip(L, m, c):
        lam = lam if lam > 0 else 1.0
        for mmm in (mm, max(1, int(9 * lam))):  # both sides of 4 = 12 sqrt(Lambda / m)
            res = rad.dudley_inverse_square(0.0, lam, m=mmm, diameter=cc)
            closed = res.value
            ends = min(12 * math.sqrt(lam / mmm) * cc / 2, 4 * cc / 2)
            worst = max(worst, closed / ends, ends / closed)
            # the reported cut-off is the minimising end (alpha -> 0, reported as 0, or c/2), and the
            # reported integral the statement's int_alpha^{c/2} sqrt(Lambda) d eps there
            slope = 4 - 12 * math.sqrt(lam / mmm)
            if abs(slope) > 1e-9:
                al = 0.0 if slope > 0 else cc / 2
                worst = max(
                    worst,
                    1.0 if res.alpha == al else math.inf,
                    _rel_ratio(res.integral, math.sqrt(lam) * (cc / 2 - al)),
                )
    return worst, 3 * len(A)


register(
    Claim(
        label="cor-dudley-inverse-square",
        covers=("genbound.rademacher.dudley_inverse_square", "genbound.rademacher.dudley_bound"),
        statement="log N <= A/eps^2 + Lambda gives R_S <= 4 a* + 12/sqrt(m)(sqrt(A) log(c/(2a*)) + sqrt(Lambda)(c/2 - a*)), a* = 3 sqrt(A)/(sqrt(m) - 3 sqrt(Lambda))",
        chapter=CH_COV,
        provenance="reconstructed",
        numeric=FunctionCheck(_inv_sq_check),
        symbolic=lambda: (
            sym_dudley.verify_sqrt_split() and sym_dudley.verify_inverse_square_convex()
        ),
        rtol=1e-7,
        mutants=(
            scaled(
                rad,
                "INVERSE_SQUARE_ALPHA_COEF",
                2.0,
                name="alpha-star-doubled",
                what="alpha* = 6 sqrt(A)/(sqrt(m) - 6 sqrt(Lambda)): not the minimiser",
            ),
            replaced(
                rad,
                "dudley_bound",
                _integral_scaled(1.001),
                name="integral-off",
                what="dudley_bound reports its integral 0.1% too large (the value unchanged)",
            ),
            replaced(
                rad,
                "dudley_inverse_square",
                _cutoff_doubled_at_a0,
                name="a0-cutoff-doubled",
                what="with A = 0 the cut-off reported as c instead of c/2 (the value unchanged)",
            ),
        ),
    )
)


def _integral_scaled_at_k0(old):
    """Mutant maker: :func:`~genbound.rademacher.dudley_parametric` reporting integral 1 when ``k = 0``."""
    import dataclasses

    def new(k, C, *, m, diameter):
        r = old(k, C, m=m, diameter=diameter)
        return dataclasses.replace(r, integral=1.0) if k == 0 else r

    return new


def _param_check(seed):
    gen = torch.Generator().manual_seed(int(seed))
    worst = 0.0
    A, _, m, c = _dudley_params(gen, 40)
    Cs = (10 ** (2 * torch.rand(40, generator=gen, dtype=F64) - 1)).tolist()
    ks = [1 + 50 * a for a in torch.rand(40, generator=gen, dtype=F64).tolist()]
    for k, C, mm, cc in zip(ks, Cs, m, c):
        num = rad.dudley_bound(lambda e: k * max(math.log(C / e), 0.0), m=mm, diameter=cc).value
        closed = rad.dudley_parametric(k, C, m=mm, diameter=cc).value
        worst = max(worst, num / closed, closed / num)
    # k = 0 (log N = 0, one function): the infimum is 0 as alpha -> 0, with an empty integral; every field
    # of the result is exactly 0 (two-sided: 0 and nothing else)
    for C, mm, cc in zip(Cs[:5], m[:5], c[:5]):
        r0 = rad.dudley_parametric(0.0, C, m=mm, diameter=cc)
        worst = max(
            worst, 1.0 if (r0.value, r0.alpha, r0.integral) == (0.0, 0.0, 0.0) else math.inf
        )
    return worst, len(ks) + 5


register(
    Claim(
        label="cor-dudley-parametric",
        covers=("genbound.rademacher.dudley_parametric", "genbound.rademacher.dudley_bound"),
        statement="log N <= k log(C/eps) gives the exact infimum at alpha* = C exp(-m/(9k)), integral in closed form (erfc)",
        chapter=CH_COV,
        provenance="reconstructed",
        numeric=FunctionCheck(_param_check),
        symbolic=sym_dudley.verify_parametric_antiderivative,
        rtol=1e-7,
        mutants=(
            scaled(
                rad,
                "PARAMETRIC_ALPHA_DENOM",
                2.0,
                name="alpha-star-moved",
                what="alpha* = C exp(-m/(18 k)) instead of C exp(-m/(9 k))",
            ),
            replaced(
                rad,
                "dudley_parametric",
                _integral_scaled_at_k0,
                name="k0-integral-one",
                what="log N = 0 (k = 0) reported with integral 1 instead of 0",
            ),
        ),
    )
)


#: claim label -> (key of :func:`._part1.part1_equalities`, published functions it covers): each claim
#: also checks its published right side for equality with the statement (two-sided)
_EQUALITIES = {
    "thm-dudley": (
        ("euclid", "exact_linear"),
        (
            "genbound.rademacher.dudley_bound",
            "genbound.rademacher.dudley_objective",
            "genbound.covering.euclidean_ball_log_cover",
            "genbound.rademacher.empirical_rademacher_linear",
        ),
    ),
}

add_equalities(_EQUALITIES)
