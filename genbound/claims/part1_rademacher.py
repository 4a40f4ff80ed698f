"""Claims of :ref:`ch-rademacher` (``book/part1/rademacher.md``, Part I: Rademacher complexity and generalization).

Each claim's numeric check computes ``ratio = left side / right side`` on random instances and, where the
quantities are differentiable, pushes the ratio up by projected gradient ascent. Rademacher averages are
computed **exactly** (all ``2^m`` sign vectors) on small instances, so the checks have no Monte Carlo
error unless a docstring says so.

One concept: the claims of one chapter (the naming scheme of ``genbound.claims``).
"""

from __future__ import annotations

import itertools
import math
import sys

import sympy as sp
import torch

from .. import rademacher as rad
from ..bounds import trauger_tewari as tt_bounds
from ..symbolic import rademacher as sym_rad
from . import AllOf, Claim, FunctionCheck, InequalityCheck, register, replaced, scaled
from ._part1 import CH_RAD, F64, _TINY, _rad_exact, _rel_ratio, _signs, add_equalities

_THIS = sys.modules[__name__]  # mutants patch the right-hand-side functions defined here


# ---- McDiarmid (checked on the mean of Bernoulli variables, whose tail is exact) -----------------
M_MAX = (
    30  #: the largest number of variables m in the check of lem-mcdiarmid (exact binomial tails)
)


def _mcd_sample(gen, n):
    m = torch.randint(1, M_MAX + 1, (n,), generator=gen).to(F64)
    p = torch.rand(n, generator=gen, dtype=F64).clamp(1e-4, 1 - 1e-4)
    t = torch.rand(n, generator=gen, dtype=F64) * (1 - p)
    return {"m": m, "p": p, "t": t.clamp(min=1e-6)}


def _mcd_project(x):
    p = x["p"].clamp(1e-6, 1 - 1e-6)
    return {**x, "p": p, "t": x["t"].clamp(1e-6, 1.0)}


def _mcd_ratio(m, p, t):
    k = torch.arange(M_MAX + 1, dtype=F64)
    mm, pp = m.unsqueeze(-1), p.unsqueeze(-1)
    logpmf = (
        torch.lgamma(mm + 1)
        - torch.lgamma(k + 1)
        - torch.lgamma((mm - k).clamp(min=0) + 1)
        + k * torch.log(pp)
        + (mm - k) * torch.log1p(-pp)
    )
    # P(mean - p >= t) = P(sum >= m (p + t)), with exact integer comparison
    mask = (k <= mm) & (k >= mm * (pp + t.unsqueeze(-1)))
    tail = torch.where(mask, logpmf.exp(), torch.zeros_like(logpmf)).sum(-1)
    return tail / rad.mcdiarmid_tail(t, 1.0 / m)  # c_i = 1/m for the mean of m variables in [0, 1]


register(
    Claim(
        label="lem-mcdiarmid",
        statement="P(Phi(S) - E Phi(S) >= t) <= exp(-2 t^2 / sum_i c_i^2) for Phi with bounded differences c_i",
        chapter=CH_RAD,
        provenance="standard",
        numeric=InequalityCheck(
            _mcd_sample,
            _mcd_ratio,
            _mcd_project,
            trials=3000,
            starts=32,
            steps=100,
            lr=0.01,
            search=("p", "t"),
        ),
        symbolic=sym_rad.verify_chernoff_exponent,
        mutants=(
            scaled(
                rad,
                "MCDIARMID_EXPONENT_COEF",
                2.0,
                name="exponent-doubled",
                what="the 2 in exp(-2 t^2 / sum c_i^2) doubled (a tail that falls too fast)",
            ),
        ),
    )
)

# ---- symmetrization (exact: every sample of a small finite distribution, every sign vector) ------
#: support size, sample size and class size of the exact check of lem-symmetrization
SYM_NX, SYM_M, SYM_K = 3, 3, 4
_SYM_IDX = torch.tensor(list(itertools.product(range(SYM_NX), repeat=SYM_M)))  # (27, m)


def _sym_sample(gen, n):
    return {
        "logits": 2 * torch.randn(n, SYM_NX, generator=gen, dtype=F64),
        "G": torch.rand(n, SYM_K, SYM_NX, generator=gen, dtype=F64),
    }


def _sym_project(x):
    return {**x, "G": x["G"].clamp(0.0, 1.0), "logits": x["logits"].clamp(-30, 30)}


def _sym_ratio(logits, G):
    p = torch.softmax(logits, -1)  # (n, nx)
    w = p[:, _SYM_IDX].prod(-1)  # (n, S): probability of each sample
    vals = G[:, :, _SYM_IDX]  # (n, K, S, m)
    risk = (G * p.unsqueeze(1)).sum(-1)  # (n, K)
    emp = vals.mean(-1)  # (n, K, S)
    lhs = (w * (risk.unsqueeze(-1) - emp).amax(1)).sum(-1)
    rs = _rad_exact(vals.transpose(1, 2))  # (n, S)
    # the 2 of symmetrization is the coefficient of R in the generalization bound
    return lhs / (rad.GAP_RADEMACHER_COEF * (w * rs).sum(-1)).clamp(min=_TINY)


register(
    Claim(
        label="lem-symmetrization",
        covers=(
            "genbound.rademacher.generalization_gap_bound",
            "genbound.rademacher.GAP_RADEMACHER_COEF",
        ),
        statement="E_S sup_g (E g - E_S g) <= 2 R_m(G)",
        chapter=CH_RAD,
        provenance="standard",
        numeric=InequalityCheck(
            _sym_sample, _sym_ratio, _sym_project, trials=1000, starts=16, steps=80, lr=0.03
        ),
        mutants=(
            scaled(
                rad,
                "GAP_RADEMACHER_COEF",
                0.5,
                name="factor-2-halved",
                what="E sup (E g - E_S g) <= R_m instead of 2 R_m",
            ),
        ),
    )
)

# ---- Talagrand's contraction -----------------------------------------------------------------------
TAL_K, TAL_M = 4, 6  #: class size and sample size of the check of lem-talagrand-contraction


def _tal_sample(gen, n):
    return {
        "A": torch.randn(n, TAL_K, TAL_M, generator=gen, dtype=F64),
        "c": torch.randn(n, TAL_M, generator=gen, dtype=F64),
        "w": torch.rand(n, TAL_M, generator=gen, dtype=F64),
        "L": 0.1 + 3 * torch.rand(n, generator=gen, dtype=F64),
    }


def _tal_project(x):
    return {**x, "w": x["w"].clamp(0.0, 1.0)}


def _tal_phi(A, c, w, L):
    """phi_i(t) = L (w_i |t - c_i| + (1 - w_i) sin(t + c_i)): L-Lipschitz, one function per coordinate."""
    c, w = c.unsqueeze(1), w.unsqueeze(1)
    return L.view(-1, 1, 1) * (w * (A - c).abs() + (1 - w) * torch.sin(A + c))


def contraction_rhs(L, A):
    """Right side ``L R_S(A)`` of Talagrand's contraction (``L``: the Lipschitz constant of the ``phi_i``)."""
    return L * _rad_exact(A)


def _tal_ratio(A, c, w, L):
    return _rad_exact(_tal_phi(A, c, w, L)) / _THIS.contraction_rhs(L, A).clamp(min=_TINY)


register(
    Claim(
        label="lem-talagrand-contraction",
        covers=("genbound.claims.part1_rademacher.contraction_rhs",),
        statement="R_S(phi o A) <= L R_S(A) for coordinatewise L-Lipschitz phi_i",
        chapter=CH_RAD,
        provenance="standard",
        numeric=InequalityCheck(
            _tal_sample,
            _tal_ratio,
            _tal_project,
            trials=1000,
            starts=16,
            steps=100,
            lr=0.03,
            search=("A", "c", "w"),
        ),
        mutants=(
            replaced(
                _THIS,
                "contraction_rhs",
                lambda old: lambda L, A: old(L / 2, A),
                name="lipschitz-halved",
                what="the Lipschitz constant L of phi replaced by L/2",
            ),
        ),
    )
)

# ---- Massart ----------------------------------------------------------------------------------------
MAS_N, MAS_M = 5, 7  #: class size and sample size of the check of lem-massart


def _mas_sample(gen, n):
    scale = torch.rand(n, MAS_N, 1, generator=gen, dtype=F64) ** 2
    return {"A": scale * torch.randn(n, MAS_N, MAS_M, generator=gen, dtype=F64)}


def _mas_ratio(A):
    return _rad_exact(A) / rad.massart_bound(A).clamp(min=_TINY)


register(
    Claim(
        label="lem-massart",
        statement="R_S(A) <= max_a ||a||_2 sqrt(2 log |A|) / m for a finite A in R^m",
        chapter=CH_RAD,
        provenance="standard",
        numeric=InequalityCheck(
            _mas_sample, _mas_ratio, trials=1000, starts=16, steps=150, lr=0.03
        ),
        symbolic=sym_rad.verify_massart_optimum,
        mutants=(
            scaled(
                rad,
                "massart_bound",
                0.5,
                name="rhs-halved",
                what="massart_bound returns half of max ||a|| sqrt(2 log N) / m",
            ),
        ),
    )
)

# ---- linear classes ---------------------------------------------------------------------------------


def sp_equal(a, b) -> bool:
    """Whether two sympy expressions are equal (difference simplifies to 0)."""
    return bool(sym_rad.sp.simplify(a - b) == 0)


LIN_M, LIN_D = (
    8,
    4,
)  #: sample size and dimension of the exact checks of the linear-class corollaries


def _lin_sample(gen, n):
    col = torch.rand(n, 1, LIN_D, generator=gen, dtype=F64) ** 2
    return {
        "X": col * torch.randn(n, LIN_M, LIN_D, generator=gen, dtype=F64),
        "B": 0.1 + 5 * torch.rand(n, generator=gen, dtype=F64),
    }


def _l1_ratio(X, B):
    v = torch.einsum("sm,nmd->nsd", _signs(LIN_M), X)
    exact = B * v.abs().amax(-1).mean(-1) / LIN_M
    return exact / (B * rad.l1_linear_massart_bound(X)).clamp(min=_TINY)


def _l2_ratio(X, B):
    v = torch.einsum("sm,nmd->nsd", _signs(LIN_M), X)
    exact = B * torch.linalg.vector_norm(v, dim=-1).mean(-1) / LIN_M
    return exact / (B * rad.l2_linear_bound(X)).clamp(min=_TINY)


def _mc_stderr_check(seed):
    """The Monte Carlo path of :func:`genbound.rademacher.empirical_rademacher_linear` (``n_draws`` signs), on data
    sets whose supremum takes two values only: one feature, two nonzero rows ``x_i, x_j``, so
    ``B |sigma_i x_i + sigma_j x_j| / m`` is ``a = B |x_i + x_j| / m`` or ``b = B |x_i - x_j| / m``. The mean fixes the
    fraction ``q`` of draws at ``a``; the standard error must then be the sample standard error of those draws,
    ``|a - b| sqrt(q (1 - q) / (n - 1))`` (numpy's ``std(ddof=1) / sqrt(n)`` of ``n q`` values ``a`` and
    ``n (1 - q)`` values ``b``), for every norm, in a batch, with chunks smaller than ``n``. Ratio ``1 + rel. error``."""
    import numpy as np

    gen = torch.Generator().manual_seed(int(seed))
    worst, trials = 0.0, 0
    for m, n, chunk in ((6, 200, 64), (9, 1001, 4096), (3, 37, 5)):
        pairs = [(i, j) for i in range(m) for j in range(i + 1, m)][:6]
        X = torch.zeros(len(pairs), m, 1, dtype=F64)
        for b, (i, j) in enumerate(pairs):
            X[b, i, 0], X[b, j, 0] = torch.randn(2, generator=gen, dtype=F64) + 0.1
        B = 0.5 + float(torch.rand(1, generator=gen))
        for norm in ("l1", "l2", "linf"):
            est = rad.empirical_rademacher_linear(
                X, radius=B, norm=norm, n_draws=n, seed=seed + trials, device="cpu", chunk=chunk
            )
            for b, (i, j) in enumerate(pairs):
                xi, xj = float(X[b, i, 0]), float(X[b, j, 0])
                hi, lo = B * abs(xi + xj) / m, B * abs(xi - xj) / m
                q = (float(est.value[b]) - lo) / (hi - lo)
                k = int(round(q * n))
                if abs(q * n - k) > 1e-6 * n:  # the mean is not a mixture of the two values
                    return math.inf, trials + 1
                draws = np.array([hi] * k + [lo] * (n - k))
                want = float(np.std(draws, ddof=1) / math.sqrt(n))
                got = float(est.stderr[b])
                worst = max(
                    worst, _rel_ratio(got, want) if want > 0 else (1.0 if got == 0 else math.inf)
                )
                trials += 1
            worst = max(worst, 1.0 if est.n_draws == n and not est.exact else math.inf)
    return worst, trials


def _stderr_population(old):
    """Mutant maker: the standard error with the population variance (``ddof = 0``)."""
    import dataclasses

    def new(*args, **kwargs):
        r = old(*args, **kwargs)
        n = r.n_draws
        return dataclasses.replace(r, stderr=r.stderr * math.sqrt((n - 1) / n))

    return new


register(
    Claim(
        label="cor-l1-linear-rademacher",
        statement="R_S({x -> w.x : ||w||_1 <= B}) = B E||X^T sigma||_inf / m <= B max_j ||X_{:,j}||_2 sqrt(2 log(2d)) / m",
        chapter=CH_RAD,
        provenance="standard",
        numeric=InequalityCheck(
            _lin_sample, _l1_ratio, trials=600, starts=16, steps=100, lr=0.03, search=("X",)
        ),
        symbolic=lambda: sp_equal(
            sym_rad.l1_linear_bound(),
            sym_rad.B
            * sym_rad.colnorm
            * sym_rad.sp.sqrt(2 * sym_rad.sp.log(2 * sym_rad.d))
            / sym_rad.m,
        ),
        mutants=(
            scaled(
                rad,
                "l1_linear_massart_bound",
                0.5,
                name="rhs-halved",
                what="l1_linear_massart_bound returns half of B max_j ||X_:j|| sqrt(2 log 2d) / m",
            ),
        ),
    )
)

register(
    Claim(
        label="cor-l2-linear-rademacher",
        statement="R_S({x -> w.x : ||w||_2 <= B}) = B E||X^T sigma||_2 / m <= B sqrt(sum_i ||x_i||_2^2) / m",
        chapter=CH_RAD,
        provenance="standard",
        numeric=AllOf(
            (
                InequalityCheck(
                    _lin_sample, _l2_ratio, trials=600, starts=16, steps=100, lr=0.03, search=("X",)
                ),
                FunctionCheck(_mc_stderr_check),
            )
        ),
        symbolic=sym_rad.verify_l2_second_moment,
        mutants=(
            scaled(
                rad,
                "l2_linear_bound",
                0.5,
                name="rhs-halved",
                what="l2_linear_bound returns half of B sqrt(sum ||x_i||^2) / m",
            ),
            replaced(
                rad,
                "empirical_rademacher_linear",
                _stderr_population,
                name="stderr-population",
                what="the Monte Carlo standard error from the population variance (ddof = 0)",
            ),
        ),
        covers=(
            "genbound.rademacher.l2_linear_bound",
            "genbound.rademacher.empirical_rademacher_linear",
        ),
    )
)


# ---- ramp loss ----------------------------------------------------------------------------------------


def _ramp_sample(gen, n):
    gamma = 10 ** (2 * torch.rand(n, generator=gen, dtype=F64) - 1)
    u = gamma * (3 * torch.rand(n, generator=gen, dtype=F64) - 1)
    v = u + gamma * torch.randn(n, generator=gen, dtype=F64)
    return {"u": u, "v": v, "gamma": gamma}


def _ramp_ratio(u, v, gamma):
    # ramp_gamma(u) = ramp_1(u / gamma): the package's ramp_loss, batched in gamma
    lu, lv = rad.ramp_loss(u / gamma, 1.0), rad.ramp_loss(v / gamma, 1.0)
    lower = (u <= 0).to(F64)
    upper = (u < gamma).to(F64)
    r1 = torch.where(lower > 0, lower / lu.clamp(min=_TINY), torch.zeros_like(u))
    r2 = torch.where(
        upper > 0,
        lu / upper.clamp(min=_TINY),
        torch.where(lu > 0, torch.full_like(u, math.inf), torch.zeros_like(u)),
    )
    # the Lipschitz constant the bounds charge for the ramp loss: loss_lipschitz(gamma, 1) = 1/gamma
    lip = tt_bounds.loss_lipschitz(1.0, 1) / gamma
    r3 = (lu - lv).abs() / (lip * (u - v).abs()).clamp(min=_TINY)
    return torch.maximum(torch.maximum(r1, r2), r3)


register(
    Claim(
        label="lem-ramp-loss",
        covers=("genbound.rademacher.ramp_loss", "genbound.bounds.trauger_tewari.loss_lipschitz"),
        statement="1[y f <= 0] <= ramp_gamma(y f) <= 1[y f < gamma], and ramp_gamma is 1/gamma-Lipschitz",
        chapter=CH_RAD,
        provenance="standard",
        numeric=InequalityCheck(
            _ramp_sample, _ramp_ratio, trials=5000, starts=32, steps=100, lr=0.01, search=("u", "v")
        ),
        symbolic=sym_rad.verify_ramp_slope,
        mutants=(
            scaled(
                tt_bounds,
                "loss_lipschitz",
                0.5,
                name="lipschitz-halved",
                what="the ramp loss charged as 1/(2 gamma)-Lipschitz (loss_lipschitz halved)",
            ),
        ),
    )
)


# ---- the theorem: (1 - delta) quantile of sup-deviation / bound ---------------------------------------
#
# Two loss classes whose sup-deviation and empirical Rademacher complexity have closed forms, so that the
# check runs at sample sizes where the bound is below the loss range b (at small m the confidence term
# alone exceeds b, and the check could not fail):
#
# * "all subsets" of a finite domain of n points, values in {0, b}: sup_g (E g - E_S g) is b times the
#   total-variation excess sum_z max(0, p_z - N_z/m), and R_S = (b/m) sum_z E max(0, S_{N_z}) with S_N a
#   sum of N independent signs (exact, from the binomial law). With n a few times m most points are unseen:
#   the deviation is close to 2 R_S, the extremal case of symmetrization.
# * a single fair coin in {0, b}: R_S = 0, so only the confidence term remains (the McDiarmid part).

#: ``(class, m, n, b)``: sample size ``m`` and domain size ``n`` of each test class (``n = 0``: one coin).
GEN_PLAN = (
    ("all subsets, n = 2m", 1000, 2000, 1.0),
    ("all subsets, n = 4m", 3000, 12000, 1.0),
    ("all subsets, skewed p", 2000, 8000, 1.0),
    ("one fair coin, b = 2", 1000, 0, 2.0),
)
#: Confidence and number of samples per class of the check of thm-rademacher-generalization.
GEN_DELTA, GEN_TRIALS = 0.05, 400


def _half_abs_sign_sum(N: torch.Tensor) -> torch.Tensor:
    """``E max(0, S_N)`` for ``S_N`` a sum of ``N`` independent uniform signs (exact; ``N`` integer tensor)."""
    nmax = int(N.max()) if N.numel() else 0
    table = torch.zeros(nmax + 1, dtype=F64)
    for n in range(1, nmax + 1):
        k = torch.arange(n + 1, dtype=F64)
        logpmf = (
            math.lgamma(n + 1) - torch.lgamma(k + 1) - torch.lgamma(n - k + 1)
        ) - n * math.log(2)
        table[n] = (logpmf.exp() * (2 * k - n).clamp(min=0)).sum()
    return table[N]


def generalization_ratios(
    name: str,
    m: int,
    n: int,
    b: float,
    *,
    seed: int = 0,
    delta: float = GEN_DELTA,
    trials: int = GEN_TRIALS,
):
    """``(ratio, bound)`` per sample for one test class: ``ratio = sup_g (E g - E_S g) / bound`` with
    ``bound = 2 R_S + 3 b sqrt(log(2/delta)/(2m))`` (:func:`genbound.rademacher.generalization_gap_bound`)."""
    gen = torch.Generator().manual_seed(int(seed))

    def gap(rs):
        return torch.tensor(
            [rad.generalization_gap_bound(float(x), m=m, delta=delta, b=b) for x in rs], dtype=F64
        )

    if n == 0:  # one coin: R_S = 0
        heads = torch.binomial(
            torch.full((trials,), float(m), dtype=F64),
            torch.full((trials,), 0.5, dtype=F64),
            generator=gen,
        )
        dev = b * (0.5 - heads / m)
        bound = gap(torch.zeros_like(dev))
        return _safe_ratio(dev, bound), bound
    if "skewed" in name:
        p = torch.softmax(torch.randn(n, generator=gen, dtype=F64), 0)
    else:
        p = torch.full((n,), 1.0 / n, dtype=F64)
    idx = torch.multinomial(p, trials * m, replacement=True, generator=gen).reshape(trials, m)
    counts = torch.zeros(trials, n, dtype=torch.long).scatter_add_(1, idx, torch.ones_like(idx))
    dev = b * (p - counts.to(F64) / m).clamp(min=0).sum(-1)
    rs = b * _half_abs_sign_sum(counts).sum(-1) / m
    bound = gap(rs)
    return _safe_ratio(dev, bound), bound


def _safe_ratio(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    """``num / den`` with ``x / 0 = inf`` for ``x > 0`` and ``0`` for ``x <= 0`` (never NaN)."""
    pos = den > 0
    return torch.where(
        pos,
        num / torch.where(pos, den, torch.ones_like(den)),
        torch.where(num > 0, torch.full_like(num, math.inf), torch.zeros_like(num)),
    )


def generalization_quantiles(seed: int = 0, *, delta: float = GEN_DELTA, trials: int = GEN_TRIALS):
    """For each class of :data:`GEN_PLAN`: the empirical ``(1 - delta)``-quantile of the ratio over
    ``trials`` samples (the theorem says it is at most 1) and the largest bound seen (below ``b``: the
    check is run where the bound is informative). Returns ``{class name: (quantile, max bound / b)}``."""
    res = {}
    for i, (name, m, n, b) in enumerate(GEN_PLAN):
        ratio, bound = generalization_ratios(
            name, m, n, b, seed=seed * 31 + i, delta=delta, trials=trials
        )
        q = float(
            torch.quantile(ratio, 1 - delta, interpolation="higher")
        )  # an order statistic: never NaN
        res[name] = (q, float(bound.max()) / b)
    return res


def _gen_check(seed):
    q = generalization_quantiles(seed)
    uninformative = [k for k, (_, bnd) in q.items() if bnd >= 1.0]
    if uninformative:  # the plan is wrong, not the theorem: say so loudly
        raise ValueError(f"bound not below the loss range for {uninformative}")
    return max(v for v, _ in q.values()), GEN_TRIALS * len(q)


def _gap_matches_union() -> bool:
    """``generalization_gap_bound`` equals the gap :func:`genbound.symbolic.rademacher.gap_from_union`
    assembles from its two failure events (split ``delta/2`` each, total ``delta``) at random ``R, m,
    delta, b``; and the typed ``2 R + 3 b sqrt(...)`` agrees (a cross-check)."""
    import random

    gap, failure = sym_rad.gap_from_union()
    if sp.simplify(failure - sym_rad.delta) != 0 or not sym_rad.verify_gap_constants():
        return False
    f = sp.lambdify((sym_rad.R, sym_rad.m, sym_rad.delta, sym_rad.b), gap, "math")
    rng = random.Random(5)
    for _ in range(50):
        R, m, dl, b = (
            rng.uniform(0, 2),
            rng.randint(1, 10**6),
            rng.uniform(1e-6, 0.99),
            rng.uniform(0.1, 3),
        )
        got = rad.generalization_gap_bound(R, m=m, delta=dl, b=b)
        if abs(got / f(R, m, dl, b) - 1.0) > 1e-12:
            return False
    return True


register(
    Claim(
        label="thm-rademacher-generalization",
        statement="w.p. >= 1 - delta, for all g in G (values in [0, b]): E g <= E_S g + 2 R_S(G) + 3 b sqrt(log(2/delta)/(2m))",
        chapter=CH_RAD,
        provenance="standard",
        numeric=FunctionCheck(_gen_check),
        symbolic=_gap_matches_union,
        mutants=(
            scaled(
                rad,
                "GAP_RADEMACHER_COEF",
                0.5,
                name="rademacher-coef-halved",
                what="E g <= E_S g + R_S + 3 b sqrt(...): the 2 of symmetrization halved",
            ),
            scaled(
                rad,
                "GAP_CONFIDENCE_COEF",
                0.0,
                name="confidence-term-dropped",
                what="the confidence term 3 b sqrt(log(2/delta)/(2m)) dropped",
            ),
        ),
    )
)


#: claim label -> (key of :func:`._part1.part1_equalities`, published functions it covers): each claim
#: also checks its published right side for equality with the statement (two-sided)
_EQUALITIES = {
    "lem-massart": (
        "massart",
        ("genbound.rademacher.massart_bound", "genbound.rademacher.rademacher_finite_exact"),
    ),
    "cor-l1-linear-rademacher": ("l1", ("genbound.rademacher.l1_linear_massart_bound",)),
    "cor-l2-linear-rademacher": ("l2", ("genbound.rademacher.l2_linear_bound",)),
    "lem-mcdiarmid": ("mcdiarmid", ("genbound.rademacher.mcdiarmid_tail",)),
    "thm-rademacher-generalization": ("gap", ("genbound.rademacher.generalization_gap_bound",)),
}

add_equalities(_EQUALITIES)
