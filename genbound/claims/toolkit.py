"""Claims of Part I, the learning-theory toolkit (:ref:`ch-rademacher`, :ref:`ch-covering`,
:ref:`ch-linear-classes`, :ref:`ch-softmax-attention`).

Each claim's numeric check computes ``ratio = left side / right side`` on random instances and, where the
quantities are differentiable, pushes the ratio up by projected gradient ascent. Rademacher averages are
computed **exactly** (all ``2^m`` sign vectors) on small instances, so the checks have no Monte Carlo
error unless a docstring says so.
"""

from __future__ import annotations

import itertools
from functools import lru_cache
import math

import torch

import sys

from .. import covering as cov
from .. import rademacher as rad
from ..bounds import edelman as ed_mod
from ..bounds import trauger_tewari as tt_bounds
from ..symbolic import allocation as sym_alloc
from ..symbolic import dudley as sym_dudley
from ..symbolic import maurey as sym_maurey
from ..symbolic import rademacher as sym_rad
from ..symbolic import softmax as sym_soft
from . import AllOf, Claim, FunctionCheck, InequalityCheck, register, register_cache, replaced, scaled

CH_RAD = "book/part1/rademacher.md"
CH_COV = "book/part1/covering.md"
CH_LIN = "book/part1/linear_classes.md"
CH_SOFT = "book/part1/softmax_attention.md"
F64 = torch.float64
_TINY = 1e-300
_THIS = sys.modules[__name__]  # mutants patch the right-hand-side functions defined here


def _signs(m: int) -> torch.Tensor:
    return torch.tensor(list(itertools.product((-1.0, 1.0), repeat=m)), dtype=F64)


def _rad_exact(A: torch.Tensor) -> torch.Tensor:
    """E_sigma max_k (1/m) sigma . A[..., k, :] over all sign vectors; A: (..., K, m)
    (:func:`genbound.rademacher.rademacher_finite_exact`, the published function)."""
    return rad.rademacher_finite_exact(A)


# =================================================================================================
# Chapter 1: Rademacher complexity and generalization
# =================================================================================================

# ---- McDiarmid (checked on the mean of Bernoulli variables, whose tail is exact) -----------------
_M_MAX = 30


def _mcd_sample(gen, n):
    m = torch.randint(1, _M_MAX + 1, (n,), generator=gen).to(F64)
    p = torch.rand(n, generator=gen, dtype=F64).clamp(1e-4, 1 - 1e-4)
    t = torch.rand(n, generator=gen, dtype=F64) * (1 - p)
    return {"m": m, "p": p, "t": t.clamp(min=1e-6)}


def _mcd_project(x):
    p = x["p"].clamp(1e-6, 1 - 1e-6)
    return {**x, "p": p, "t": x["t"].clamp(1e-6, 1.0)}


def _mcd_ratio(m, p, t):
    k = torch.arange(_M_MAX + 1, dtype=F64)
    mm, pp = m.unsqueeze(-1), p.unsqueeze(-1)
    logpmf = (torch.lgamma(mm + 1) - torch.lgamma(k + 1) - torch.lgamma((mm - k).clamp(min=0) + 1)
              + k * torch.log(pp) + (mm - k) * torch.log1p(-pp))
    # P(mean - p >= t) = P(sum >= m (p + t)), with exact integer comparison
    mask = (k <= mm) & (k >= mm * (pp + t.unsqueeze(-1)))
    tail = torch.where(mask, logpmf.exp(), torch.zeros_like(logpmf)).sum(-1)
    return tail / rad.mcdiarmid_tail(t, 1.0 / m)      # c_i = 1/m for the mean of m variables in [0, 1]


register(Claim(
    label="lem-mcdiarmid",
    statement="P(Phi(S) - E Phi(S) >= t) <= exp(-2 t^2 / sum_i c_i^2) for Phi with bounded differences c_i",
    chapter=CH_RAD, provenance="standard",
    numeric=InequalityCheck(_mcd_sample, _mcd_ratio, _mcd_project, trials=3000, starts=32, steps=100,
                            lr=0.01, search=("p", "t")),
    symbolic=sym_rad.verify_chernoff_exponent,
    mutants=(scaled(rad, "MCDIARMID_EXPONENT_COEF", 2.0, name="exponent-doubled",
                    what="the 2 in exp(-2 t^2 / sum c_i^2) doubled (a tail that falls too fast)"),),
))

# ---- symmetrization (exact: every sample of a small finite distribution, every sign vector) ------
_SYM_NX, _SYM_M, _SYM_K = 3, 3, 4
_SYM_IDX = torch.tensor(list(itertools.product(range(_SYM_NX), repeat=_SYM_M)))  # (27, m)


def _sym_sample(gen, n):
    return {"logits": 2 * torch.randn(n, _SYM_NX, generator=gen, dtype=F64),
            "G": torch.rand(n, _SYM_K, _SYM_NX, generator=gen, dtype=F64)}


def _sym_project(x):
    return {**x, "G": x["G"].clamp(0.0, 1.0), "logits": x["logits"].clamp(-30, 30)}


def _sym_ratio(logits, G):
    p = torch.softmax(logits, -1)                                   # (n, nx)
    w = p[:, _SYM_IDX].prod(-1)                                     # (n, S): probability of each sample
    vals = G[:, :, _SYM_IDX]                                        # (n, K, S, m)
    risk = (G * p.unsqueeze(1)).sum(-1)                             # (n, K)
    emp = vals.mean(-1)                                             # (n, K, S)
    lhs = (w * (risk.unsqueeze(-1) - emp).amax(1)).sum(-1)
    rs = _rad_exact(vals.transpose(1, 2))                           # (n, S)
    # the 2 of symmetrization is the coefficient of R in the generalization bound
    return lhs / (rad.GAP_RADEMACHER_COEF * (w * rs).sum(-1)).clamp(min=_TINY)


register(Claim(
    label="lem-symmetrization", covers=('genbound.rademacher.generalization_gap_bound', 'genbound.rademacher.GAP_RADEMACHER_COEF'),
    statement="E_S sup_g (E g - E_S g) <= 2 R_m(G)",
    chapter=CH_RAD, provenance="standard",
    numeric=InequalityCheck(_sym_sample, _sym_ratio, _sym_project, trials=1000, starts=16, steps=80, lr=0.03),
    mutants=(scaled(rad, "GAP_RADEMACHER_COEF", 0.5, name="factor-2-halved",
                    what="E sup (E g - E_S g) <= R_m instead of 2 R_m"),),
))

# ---- Talagrand's contraction -----------------------------------------------------------------------
_TAL_K, _TAL_M = 4, 6


def _tal_sample(gen, n):
    return {"A": torch.randn(n, _TAL_K, _TAL_M, generator=gen, dtype=F64),
            "c": torch.randn(n, _TAL_M, generator=gen, dtype=F64),
            "w": torch.rand(n, _TAL_M, generator=gen, dtype=F64),
            "L": 0.1 + 3 * torch.rand(n, generator=gen, dtype=F64)}


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


register(Claim(
    label="lem-talagrand-contraction", covers=('genbound.claims.toolkit.contraction_rhs',),
    statement="R_S(phi o A) <= L R_S(A) for coordinatewise L-Lipschitz phi_i",
    chapter=CH_RAD, provenance="standard",
    numeric=InequalityCheck(_tal_sample, _tal_ratio, _tal_project, trials=1000, starts=16, steps=100,
                            lr=0.03, search=("A", "c", "w")),
    mutants=(replaced(_THIS, "contraction_rhs", lambda old: (lambda L, A: old(L / 2, A)),
                      name="lipschitz-halved", what="the Lipschitz constant L of phi replaced by L/2"),),
))

# ---- Massart ----------------------------------------------------------------------------------------
_MAS_N, _MAS_M = 5, 7


def _mas_sample(gen, n):
    scale = torch.rand(n, _MAS_N, 1, generator=gen, dtype=F64) ** 2
    return {"A": scale * torch.randn(n, _MAS_N, _MAS_M, generator=gen, dtype=F64)}


def _mas_ratio(A):
    return _rad_exact(A) / rad.massart_bound(A).clamp(min=_TINY)


register(Claim(
    label="lem-massart",
    statement="R_S(A) <= max_a ||a||_2 sqrt(2 log |A|) / m for a finite A in R^m",
    chapter=CH_RAD, provenance="standard",
    numeric=InequalityCheck(_mas_sample, _mas_ratio, trials=1000, starts=16, steps=150, lr=0.03),
    symbolic=sym_rad.verify_massart_optimum,
    mutants=(scaled(rad, "massart_bound", 0.5, name="rhs-halved",
                    what="massart_bound returns half of max ||a|| sqrt(2 log N) / m"),),
))

# ---- linear classes ---------------------------------------------------------------------------------

def sp_equal(a, b) -> bool:
    """Whether two sympy expressions are equal (difference simplifies to 0)."""
    return bool(sym_rad.sp.simplify(a - b) == 0)


_LIN_M, _LIN_D = 8, 4


def _lin_sample(gen, n):
    col = torch.rand(n, 1, _LIN_D, generator=gen, dtype=F64) ** 2
    return {"X": col * torch.randn(n, _LIN_M, _LIN_D, generator=gen, dtype=F64),
            "B": 0.1 + 5 * torch.rand(n, generator=gen, dtype=F64)}


def _l1_ratio(X, B):
    v = torch.einsum("sm,nmd->nsd", _signs(_LIN_M), X)
    exact = B * v.abs().amax(-1).mean(-1) / _LIN_M
    return exact / (B * rad.l1_linear_massart_bound(X)).clamp(min=_TINY)


def _l2_ratio(X, B):
    v = torch.einsum("sm,nmd->nsd", _signs(_LIN_M), X)
    exact = B * torch.linalg.vector_norm(v, dim=-1).mean(-1) / _LIN_M
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
            est = rad.empirical_rademacher_linear(X, radius=B, norm=norm, n_draws=n, seed=seed + trials, device="cpu",
                                                  chunk=chunk)
            for b, (i, j) in enumerate(pairs):
                xi, xj = float(X[b, i, 0]), float(X[b, j, 0])
                hi, lo = B * abs(xi + xj) / m, B * abs(xi - xj) / m
                q = (float(est.value[b]) - lo) / (hi - lo)
                k = int(round(q * n))
                if abs(q * n - k) > 1e-6 * n:           # the mean is not a mixture of the two values
                    return math.inf, trials + 1
                draws = np.array([hi] * k + [lo] * (n - k))
                want = float(np.std(draws, ddof=1) / math.sqrt(n))
                got = float(est.stderr[b])
                worst = max(worst, _rel_ratio(got, want) if want > 0 else (1.0 if got == 0 else math.inf))
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


register(Claim(
    label="cor-l1-linear-rademacher",
    statement="R_S({x -> w.x : ||w||_1 <= B}) = B E||X^T sigma||_inf / m <= B max_j ||X_{:,j}||_2 sqrt(2 log(2d)) / m",
    chapter=CH_RAD, provenance="standard",
    numeric=InequalityCheck(_lin_sample, _l1_ratio, trials=600, starts=16, steps=100, lr=0.03, search=("X",)),
    symbolic=lambda: sp_equal(sym_rad.l1_linear_bound(),
                              sym_rad.B * sym_rad.colnorm * sym_rad.sp.sqrt(2 * sym_rad.sp.log(2 * sym_rad.d))
                              / sym_rad.m),
    mutants=(scaled(rad, "l1_linear_massart_bound", 0.5, name="rhs-halved",
                    what="l1_linear_massart_bound returns half of B max_j ||X_:j|| sqrt(2 log 2d) / m"),),
))

register(Claim(
    label="cor-l2-linear-rademacher",
    statement="R_S({x -> w.x : ||w||_2 <= B}) = B E||X^T sigma||_2 / m <= B sqrt(sum_i ||x_i||_2^2) / m",
    chapter=CH_RAD, provenance="standard",
    numeric=AllOf((InequalityCheck(_lin_sample, _l2_ratio, trials=600, starts=16, steps=100, lr=0.03, search=("X",)),
                   FunctionCheck(_mc_stderr_check))),
    symbolic=sym_rad.verify_l2_second_moment,
    mutants=(scaled(rad, "l2_linear_bound", 0.5, name="rhs-halved",
                    what="l2_linear_bound returns half of B sqrt(sum ||x_i||^2) / m"),
             replaced(rad, "empirical_rademacher_linear", _stderr_population, name="stderr-population",
                      what="the Monte Carlo standard error from the population variance (ddof = 0)")),
    covers=("genbound.rademacher.l2_linear_bound", "genbound.rademacher.empirical_rademacher_linear"),
))


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
    r2 = torch.where(upper > 0, lu / upper.clamp(min=_TINY),
                     torch.where(lu > 0, torch.full_like(u, math.inf), torch.zeros_like(u)))
    # the Lipschitz constant the bounds charge for the ramp loss: loss_lipschitz(gamma, 1) = 1/gamma
    lip = tt_bounds.loss_lipschitz(1.0, 1) / gamma
    r3 = (lu - lv).abs() / (lip * (u - v).abs()).clamp(min=_TINY)
    return torch.maximum(torch.maximum(r1, r2), r3)


register(Claim(
    label="lem-ramp-loss", covers=('genbound.rademacher.ramp_loss', 'genbound.bounds.trauger_tewari.loss_lipschitz'),
    statement="1[y f <= 0] <= ramp_gamma(y f) <= 1[y f < gamma], and ramp_gamma is 1/gamma-Lipschitz",
    chapter=CH_RAD, provenance="standard",
    numeric=InequalityCheck(_ramp_sample, _ramp_ratio, trials=5000, starts=32, steps=100, lr=0.01,
                            search=("u", "v")),
    symbolic=sym_rad.verify_ramp_slope,
    mutants=(scaled(tt_bounds, "loss_lipschitz", 0.5, name="lipschitz-halved",
                    what="the ramp loss charged as 1/(2 gamma)-Lipschitz (loss_lipschitz halved)"),),
))


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
GEN_PLAN = (("all subsets, n = 2m", 1000, 2000, 1.0), ("all subsets, n = 4m", 3000, 12000, 1.0),
            ("all subsets, skewed p", 2000, 8000, 1.0), ("one fair coin, b = 2", 1000, 0, 2.0))
#: Confidence and number of samples per class of the check of thm-rademacher-generalization.
GEN_DELTA, GEN_TRIALS = 0.05, 400


def _half_abs_sign_sum(N: torch.Tensor) -> torch.Tensor:
    """``E max(0, S_N)`` for ``S_N`` a sum of ``N`` independent uniform signs (exact; ``N`` integer tensor)."""
    nmax = int(N.max()) if N.numel() else 0
    table = torch.zeros(nmax + 1, dtype=F64)
    for n in range(1, nmax + 1):
        k = torch.arange(n + 1, dtype=F64)
        logpmf = (math.lgamma(n + 1) - torch.lgamma(k + 1) - torch.lgamma(n - k + 1)) - n * math.log(2)
        table[n] = (logpmf.exp() * (2 * k - n).clamp(min=0)).sum()
    return table[N]


def generalization_ratios(name: str, m: int, n: int, b: float, *, seed: int = 0, delta: float = GEN_DELTA,
                          trials: int = GEN_TRIALS):
    """``(ratio, bound)`` per sample for one test class: ``ratio = sup_g (E g - E_S g) / bound`` with
    ``bound = 2 R_S + 3 b sqrt(log(2/delta)/(2m))`` (:func:`genbound.rademacher.generalization_gap_bound`)."""
    gen = torch.Generator().manual_seed(int(seed))
    def gap(rs):
        return torch.tensor([rad.generalization_gap_bound(float(x), m=m, delta=delta, b=b) for x in rs], dtype=F64)

    if n == 0:                                                     # one coin: R_S = 0
        heads = torch.binomial(torch.full((trials,), float(m), dtype=F64), torch.full((trials,), 0.5, dtype=F64),
                               generator=gen)
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
    return torch.where(pos, num / torch.where(pos, den, torch.ones_like(den)),
                       torch.where(num > 0, torch.full_like(num, math.inf), torch.zeros_like(num)))


def generalization_quantiles(seed: int = 0, *, delta: float = GEN_DELTA, trials: int = GEN_TRIALS):
    """For each class of :data:`GEN_PLAN`: the empirical ``(1 - delta)``-quantile of the ratio over
    ``trials`` samples (the theorem says it is at most 1) and the largest bound seen (below ``b``: the
    check is run where the bound is informative). Returns ``{class name: (quantile, max bound / b)}``."""
    res = {}
    for i, (name, m, n, b) in enumerate(GEN_PLAN):
        ratio, bound = generalization_ratios(name, m, n, b, seed=seed * 31 + i, delta=delta, trials=trials)
        q = float(torch.quantile(ratio, 1 - delta, interpolation="higher"))   # an order statistic: never NaN
        res[name] = (q, float(bound.max()) / b)
    return res


def _gen_check(seed):
    q = generalization_quantiles(seed)
    uninformative = [k for k, (_, bnd) in q.items() if bnd >= 1.0]
    if uninformative:  # the plan is wrong, not the theorem: say so loudly
        raise ValueError(f"bound not below the loss range for {uninformative}")
    return max(v for v, _ in q.values()), GEN_TRIALS * len(q)


register(Claim(
    label="thm-rademacher-generalization",
    statement="w.p. >= 1 - delta, for all g in G (values in [0, b]): E g <= E_S g + 2 R_S(G) + 3 b sqrt(log(2/delta)/(2m))",
    chapter=CH_RAD, provenance="standard",
    numeric=FunctionCheck(_gen_check),
    symbolic=sym_rad.verify_gap_constants,
    mutants=(scaled(rad, "GAP_RADEMACHER_COEF", 0.5, name="rademacher-coef-halved",
                    what="E g <= E_S g + R_S + 3 b sqrt(...): the 2 of symmetrization halved"),
             scaled(rad, "GAP_CONFIDENCE_COEF", 0.0, name="confidence-term-dropped",
                    what="the confidence term 3 b sqrt(log(2/delta)/(2m)) dropped")),
))


# =================================================================================================
# Chapter 2: covering numbers and chaining
# =================================================================================================

def _dom_sample(gen, n):
    d, m = 5, 12
    R = 0.1 + 3 * torch.rand(n, generator=gen, dtype=F64)
    X = torch.randn(n, m, d, generator=gen, dtype=F64)
    X = X / torch.linalg.vector_norm(X, dim=-1, keepdim=True) * R.view(-1, 1, 1) * torch.rand(n, m, 1, generator=gen, dtype=F64)
    return {"X": X, "dw": torch.randn(n, d, generator=gen, dtype=F64), "R": R}


def _dom_project(x):
    nrm = torch.linalg.vector_norm(x["X"], dim=-1, keepdim=True)
    scale = torch.clamp(x["R"].view(-1, 1, 1) / nrm.clamp(min=_TINY), max=1.0)
    return {**x, "X": x["X"] * scale}


def uniform_distance(dw, R):
    """``sup_{||x|| <= R} |(f - g)(x)| = R ||w_f - w_g||_2`` for linear ``f, g`` (the uniform metric)."""
    return R * torch.linalg.vector_norm(dw, dim=-1)


def _dom_ratio(X, dw, R):
    diff = torch.einsum("nmd,nd->nm", X, dw)                        # (f - g)(x_i) for linear f, g
    rho2 = diff.pow(2).mean(-1).sqrt()
    rhoinf = diff.abs().amax(-1)
    unif = _THIS.uniform_distance(dw, R)
    return torch.maximum(rho2 / rhoinf.clamp(min=_TINY), rhoinf / unif.clamp(min=_TINY))


register(Claim(
    label="lem-cover-domination", covers=('genbound.claims.toolkit.uniform_distance',),
    statement="rho_{S,2}(f,g) <= rho_{S,inf}(f,g) <= sup_{x in X} |f(x) - g(x)|, hence N_2 <= N_inf <= N_unif",
    chapter=CH_COV, provenance="standard",
    numeric=InequalityCheck(_dom_sample, _dom_ratio, _dom_project, trials=2000, starts=16, steps=100,
                            lr=0.02, search=("X", "dw")),
    mutants=(scaled(_THIS, "uniform_distance", 0.5, name="uniform-halved",
                    what="the uniform distance sup_x |f - g| computed as R ||w_f - w_g|| / 2"),),
))


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
        exact = float(rad.empirical_rademacher_linear(X, radius=B, norm="l2", n_draws=None, device="cpu").value)
        op = float(torch.linalg.matrix_norm(X, ord=2))
        c = B * op / math.sqrt(m)
        yield (f"l2 ball, m={m}, d={d}", exact,
               (lambda e, d=d, c=c: cov.euclidean_ball_log_cover(c, e, d)), m, c)
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


register(Claim(
    label="thm-dudley",
    statement="R_S(F) <= inf_{0<alpha<=c/2} 4 alpha + 12/sqrt(m) int_alpha^{c/2} sqrt(log N(F, eps, rho_S)) d eps",
    chapter=CH_COV, provenance="standard",
    numeric=FunctionCheck(_dudley_check),
    symbolic=sym_dudley.verify_dudley_telescoping,
    loose_reason="R_S <= c (Cauchy-Schwarz) while the bound is 2c as soon as 12 sqrt(log N(eps)/m) >= 4 on "
                 "(alpha, c/2): the extremal hypercube {-c, c}^m has R_S = c and bound exactly 2c (ratio 1/2); "
                 "smaller classes have R_S far below c. The constants 4 and 12 of the chaining proof are not tight",
    mutants=(scaled(rad, "DUDLEY_ALPHA_COEF", 0.25, name="alpha-coef-quartered",
                    what="4 alpha replaced by alpha (the remainder of the chain under-counted)"),),
))


def _dudley_params(gen, n):
    A = 10 ** (4 * torch.rand(n, generator=gen, dtype=F64) - 3)
    L = torch.where(torch.rand(n, generator=gen) < 0.3, torch.zeros(n, dtype=F64),
                    10 ** (3 * torch.rand(n, generator=gen, dtype=F64) - 1))
    m = (10 ** (1 + 5 * torch.rand(n, generator=gen, dtype=F64))).round()
    c = 10 ** (2 * torch.rand(n, generator=gen, dtype=F64) - 1)
    return A.tolist(), L.tolist(), [int(x) for x in m.tolist()], c.tolist()


def _relaxed_objective(alpha, A, lam, m, c):
    """The relaxed Dudley objective ``4 alpha + 12/sqrt(m) (sqrt(A) log(c/(2 alpha)) + sqrt(Lambda)(c/2 - alpha))``
    (constants from :mod:`genbound.rademacher`), vectorised over ``alpha``."""
    return (rad.DUDLEY_ALPHA_COEF * alpha + rad.DUDLEY_INTEGRAL_COEF / math.sqrt(m)
            * (math.sqrt(A) * torch.log(c / (2 * alpha)) + math.sqrt(lam) * (c / 2 - alpha)))


def _mp_integral(a, lam, lo, hi):
    """``int_lo^hi sqrt(a/eps^2 + lam) d eps`` by ``mpmath.quad`` in ``log eps`` (independent of scipy's quadrature)."""
    import mpmath

    if hi <= lo:
        return 0.0
    f = lambda u: mpmath.sqrt(a * mpmath.exp(-2 * u) + lam) * mpmath.exp(u)  # noqa: E731
    return float(mpmath.quad(f, [mpmath.log(lo), mpmath.log(hi)]))


def _rel_ratio(got, want):
    """``1 + |got - want| / |want|`` (``1`` when equal, ``inf`` when only ``want`` is 0): two-sided."""
    if got == want:
        return 1.0
    if want == 0:
        return math.inf
    return 1.0 + abs(got - want) / abs(want)


def _integral_scaled(factor):
    """Mutant maker: :func:`~genbound.rademacher.dudley_bound` reporting ``factor`` times its integral."""
    import dataclasses

    def make(old):
        def new(*args, **kwargs):
            r = old(*args, **kwargs)
            return dataclasses.replace(r, integral=factor * r.integral)
        return new
    return make


def _inv_sq_check(seed):
    """(a) the closed form bounds the numerical infimum of Dudley's objective from above; (b) it is the
    minimum of the relaxed objective: its value is at most the minimum over a fine grid of alpha in (0, c/2]
    refined by golden section (a wrong alpha* gives a larger value, a ratio above 1); (c) with ``A = 0`` it
    equals the infimum of the (then linear) objective, two-sided; (d) the ``integral`` that
    :func:`~genbound.rademacher.dudley_bound` reports equals the integral at its cut-off (``mpmath.quad``), two-sided."""
    gen = torch.Generator().manual_seed(int(seed))
    worst = 0.0
    A, L, m, c = _dudley_params(gen, 24)
    g = (math.sqrt(5) - 1) / 2
    for k, (a, lam, mm, cc) in enumerate(zip(A, L, m, c)):
        dud = rad.dudley_bound(lambda e: a / e**2 + lam, m=mm, diameter=cc)
        num = dud.value
        if k % 3 == 0:                  # the reported integral: int_alpha^{c/2} sqrt(A/eps^2 + Lambda) d eps (mpmath)
            worst = max(worst, _rel_ratio(dud.integral, _mp_integral(a, lam, dud.alpha, cc / 2)))
        closed = rad.dudley_inverse_square(a, lam, m=mm, diameter=cc).value
        grid = cc / 2 * torch.logspace(-12, 0, 4001, dtype=F64)
        vals = _relaxed_objective(grid, a, lam, mm, cc)
        i = int(vals.argmin())
        lo, hi = math.log(grid[max(i - 1, 0)]), math.log(grid[min(i + 1, len(grid) - 1)])
        for _ in range(100):            # golden section in log alpha (the objective is convex in alpha)
            u, v = hi - g * (hi - lo), lo + g * (hi - lo)
            fu, fv = (float(_relaxed_objective(torch.tensor(math.exp(x), dtype=F64), a, lam, mm, cc)) for x in (u, v))
            lo, hi = (lo, v) if fu < fv else (u, hi)
        best = min(float(vals.min()), float(_relaxed_objective(torch.tensor(math.exp((lo + hi) / 2), dtype=F64),
                                                                 a, lam, mm, cc)))
        worst = max(worst, num / closed, closed / best)
    # (c) A = 0 (a finite class, log N = Lambda): the objective is linear in alpha, so the closed form
    # is exactly its infimum, 12 sqrt(Lambda) c / (2 sqrt(m)) (alpha -> 0) or 4 c / 2 (alpha = c/2):
    # compared two-sided with the linear objective's two ends
    for lam, mm, cc in zip(L, m, c):
        lam = lam if lam > 0 else 1.0
        for mmm in (mm, max(1, int(9 * lam))):          # both sides of 4 = 12 sqrt(Lambda / m)
            closed = rad.dudley_inverse_square(0.0, lam, m=mmm, diameter=cc).value
            ends = min(12 * math.sqrt(lam / mmm) * cc / 2, 4 * cc / 2)
            worst = max(worst, closed / ends, ends / closed)
    return worst, 3 * len(A)


register(Claim(
    label="cor-dudley-inverse-square", covers=('genbound.rademacher.dudley_inverse_square', 'genbound.rademacher.dudley_bound'),
    statement="log N <= A/eps^2 + Lambda gives R_S <= 4 a* + 12/sqrt(m)(sqrt(A) log(c/(2a*)) + sqrt(Lambda)(c/2 - a*)), a* = 3 sqrt(A)/(sqrt(m) - 3 sqrt(Lambda))",
    chapter=CH_COV, provenance="reconstructed",
    numeric=FunctionCheck(_inv_sq_check),
    symbolic=lambda: sym_dudley.verify_sqrt_split() and sym_dudley.verify_inverse_square_convex(),
    rtol=1e-7,
    mutants=(scaled(rad, "INVERSE_SQUARE_ALPHA_COEF", 2.0, name="alpha-star-doubled",
                    what="alpha* = 6 sqrt(A)/(sqrt(m) - 6 sqrt(Lambda)): not the minimiser"),
             replaced(rad, "dudley_bound", _integral_scaled(1.001), name="integral-off",
                      what="dudley_bound reports its integral 0.1% too large (the value unchanged)")),
))


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
    return worst, len(ks)


register(Claim(
    label="cor-dudley-parametric", covers=('genbound.rademacher.dudley_parametric', 'genbound.rademacher.dudley_bound'),
    statement="log N <= k log(C/eps) gives the exact infimum at alpha* = C exp(-m/(9k)), integral in closed form (erfc)",
    chapter=CH_COV, provenance="reconstructed",
    numeric=FunctionCheck(_param_check),
    symbolic=sym_dudley.verify_parametric_antiderivative,
    rtol=1e-7,
    mutants=(scaled(rad, "PARAMETRIC_ALPHA_DENOM", 2.0, name="alpha-star-moved",
                    what="alpha* = C exp(-m/(18 k)) instead of C exp(-m/(9 k))"),),
))


# =================================================================================================
# Chapter 3: linear classes
# =================================================================================================

def maurey_test_matrices(seed: int = 0):
    """Matrices in the l_{1,1} ball of radius ``B``: random dense, sparse, spread (the worst case
    ``B/(dk) * signs``, where ``||W||_F^2`` is smallest), and one interior point. Yields ``(name, W, B)``."""
    gen = torch.Generator().manual_seed(int(seed))
    W = torch.randn(6, 5, generator=gen, dtype=F64)
    yield "dense, on the sphere", 2.0 * W / W.abs().sum(), 2.0
    S = torch.zeros(8, 8, dtype=F64)
    S[0, 0], S[3, 5] = 0.7, -0.3
    yield "2-sparse", S, 1.0
    sgn = torch.randint(0, 2, (10, 10), generator=gen).to(F64) * 2 - 1
    yield "spread (worst case)", 3.0 * sgn / 100, 3.0
    yield "interior", 0.4 * W / W.abs().sum(), 1.0


MAUREY_DRAWS = 4000  #: draws per (matrix, K, atom set) in the check of lem-maurey
MCOVER_DRAWS = 2000  #: Maurey draws per instance in the check of lem-maurey-matrix-cover
SUP_DRAWS = 2000  #: Maurey draws per instance in the check of lem-sup-norm-maurey
SUP_PLAN = [(10, 5, 1.0, 1.0, 0.5), (200, 20, 2.0, 1.0, 0.8), (1000, 50, 1.0, 1.0, 0.3),
            (50, 8, 1.0, 1.0, 0.05)]  #: (n, d, B, a, eps)
ATT_PLAN = [(2, 1000, 100), (8, 400, 60), (64, 64, 30), (1024, 4, 6)]  #: (T, trials, ascent steps)


def maurey_law_table(seed: int = 0, *, Ks=(1, 4, 16, 64), n_draws: int = MAUREY_DRAWS):
    """Simulated ``E ||W - W_K||_F^2`` against the law, for each matrix and ``K``, both atom sets.
    Returns a list of dicts (name, K, zero_atom, mean, stderr, law, bound ``B^2/K``)."""
    rows = []
    for j, (name, W, B) in enumerate(maurey_test_matrices(seed)):
        for zero in (True, False):
            for K in Ks:
                Wk = cov.maurey_sparsify(W, B, K, n_draws=n_draws, seed=seed * 7919 + 97 * j + K + 13 * zero,
                                         zero_atom=zero)
                err = ((Wk - W) ** 2).sum((-2, -1))
                rows.append({"matrix": name, "K": K, "zero_atom": zero, "mean": float(err.mean()),
                             "stderr": float(err.std() / math.sqrt(n_draws)),
                             "law": float(cov.maurey_expected_error(W, B, K, zero_atom=zero)),
                             "min": float(err.min()), "bound": B**2 / K,
                             "exist": float((B**2 - (W**2).sum()) / K)})
    return rows


def _maurey_check(seed):
    worst = 0.0
    rows = maurey_law_table(seed)
    for r in rows:
        half = 4 * r["stderr"] + 1e-12 * r["law"]  # four standard errors (plus round-off when the error is constant)
        lo, hi = r["mean"] - half, r["mean"] + half
        worst = max(worst, lo / r["law"], r["law"] / hi, r["min"] / r["exist"])
    return worst, len(rows) * MAUREY_DRAWS


register(Claim(
    label="lem-maurey", covers=('genbound.covering.maurey_expected_error',),
    statement="w in conv{g_i}, ||g_i|| <= c: E||w - (1/K) sum_r g_{i_r}||^2 = (E||g||^2 - ||w||^2)/K <= (c^2 - ||w||^2)/K",
    chapter=CH_LIN, provenance="standard",
    numeric=FunctionCheck(_maurey_check),
    symbolic=lambda: sym_maurey.verify_variance_identity() and sym_maurey.verify_zero_atom_law(),
    mutants=(scaled(cov, "maurey_expected_error", 0.5, name="law-halved",
                    what="maurey_expected_error returns half of (E||g||^2 - ||w||^2)/K"),),
))


def _mcover_check(seed):
    """The law the proof uses, in its norm: with ``K = log N / log(2 d k)`` atoms (read off
    :func:`genbound.covering.maurey_log_cover`), ``E ||W - W_K||_F^2 <= B^2 / K <= eps^2 / R^2``; the mean over
    :data:`MCOVER_DRAWS` draws (minus four standard errors) times ``R^2/eps^2`` must be at most 1. Then (b) the
    best draw is a cover element: ``R ||W - W_K||_op <= eps``. On the spread matrix, where ``||W||_F`` is
    smallest, the law is within ``1/(d k)`` of ``B^2/K``; ``eps`` is chosen so that ``B^2 R^2/eps^2`` is an
    integer (no slack from the ceiling)."""
    gen = torch.Generator().manual_seed(int(seed))
    worst, n = 0.0, 0
    for name, W, B in maurey_test_matrices(seed):
        for R, K0 in [(1.0, 4), (2.0, 9), (0.5, 25)]:
            eps = B * R / math.sqrt(K0)
            logn = cov.maurey_log_cover(B, R, eps, W.shape[0], W.shape[1])
            K = max(1, round(logn / math.log(2 * W.numel())))
            Wk = cov.maurey_sparsify(W, B, K, n_draws=MCOVER_DRAWS,
                                     seed=int(torch.randint(0, 2**31, (1,), generator=gen)), zero_atom=False)
            err2 = ((Wk - W) ** 2).sum((-2, -1))
            low = float(err2.mean() - 4 * err2.std() / math.sqrt(MCOVER_DRAWS))
            op = torch.linalg.matrix_norm(Wk - W, ord=2)
            worst = max(worst, low * R**2 / eps**2, float(R * op.min() / eps))
            n += MCOVER_DRAWS
    return worst, n


register(Claim(
    label="lem-maurey-matrix-cover",
    statement="||W||_{1,1} <= B, inputs ||x||_2 <= R: log N_unif(eps, op) <= ceil(B^2 R^2/eps^2) log(2 d k)",
    chapter=CH_LIN, provenance="reconstructed",
    numeric=FunctionCheck(_mcover_check),
    symbolic=sym_maurey.verify_cover_scale,
    mutants=(scaled(cov, "maurey_log_cover", 0.5, name="cover-halved",
                    what="maurey_log_cover returns half of ceil(B^2 R^2/eps^2) log(2dk): too few atoms"),),
))


def _supnorm_check(seed):
    """Three parts, each a ratio that must stay at most 1.

    (a) The union bound the proof uses, at the code's ``K`` (read off
    :func:`genbound.covering.sup_norm_maurey_log_cover`): ``2 n exp(-K eps^2/(2 a^2 B^2)) < 1``; it is close
    to 1 when ``eps`` is small. (b) The per-point law behind Hoeffding's step: ``E (w_K.x - w.x)^2 =
    (E (g.x)^2 - (w.x)^2)/K <= a^2 B^2 / K`` (mean over :data:`SUP_DRAWS` draws minus four standard
    errors), tight at a corner of the ``l_inf`` ball. (c) The best draw is a sup-norm cover element."""
    gen = torch.Generator().manual_seed(int(seed))
    worst, n = 0.0, 0
    for npts, d, B, a, eps in SUP_PLAN:
        X = (2 * torch.rand(npts, d, generator=gen, dtype=F64) - 1) * a
        X[0] = a  # one point at a corner of the l_inf ball
        X[1] = a * torch.sign(torch.randn(d, generator=gen, dtype=F64))   # another corner
        w = torch.randn(1, d, generator=gen, dtype=F64)
        w = B * w / w.abs().sum()
        K = round(cov.sup_norm_maurey_log_cover(B, a, eps, npts, d) / math.log(2 * d))
        union = 2 * npts * math.exp(-K * eps**2 / (2 * a**2 * B**2))
        wk = cov.maurey_sparsify(w, B, K, n_draws=SUP_DRAWS, seed=int(torch.randint(0, 2**31, (1,), generator=gen)))
        err = torch.einsum("nd,sd->sn", X, (wk - w)[:, 0, :])                   # (draws, points)
        low = err.pow(2).mean(0) - 4 * err.pow(2).std(0) / math.sqrt(SUP_DRAWS)
        law = float((low * K / (a * B) ** 2).max())
        worst = max(worst, union, law, float(err.abs().amax(-1).min() / eps))
        n += SUP_DRAWS
    return worst, n


register(Claim(
    label="lem-sup-norm-maurey",
    statement="||w||_1 <= B, ||x_i||_inf <= a on n points: log N_inf(eps) <= (floor(2 B^2 a^2 log(2n)/eps^2) + 1) log(2d)",
    chapter=CH_LIN, provenance="reconstructed",
    numeric=FunctionCheck(_supnorm_check),
    symbolic=sym_rad.verify_sup_norm_atoms,
    mutants=(scaled(cov, "SUP_NORM_HOEFFDING_COEF", 0.5, name="hoeffding-coef-halved",
                    what="K = floor(B^2 a^2 log(2n)/eps^2) + 1: the 2 of Hoeffding's exponent halved"),),
))


def zhang_packing_lower(a: float, b: float, eps: float, n: int) -> float:
    """A provable lower bound on ``log N_inf(eps)`` for ``{x -> w.x : ||w||_2 <= b}`` on some ``n`` points of
    norm ``a``: ``k log 2`` with ``k = min(n, ceil((ab/eps)^2) - 1)`` (sign patterns ``+-b/sqrt(k)`` on the
    points ``a e_1, ..., a e_k`` are ``2ab/sqrt(k) > 2 eps`` apart in sup norm)."""
    k = min(n, max(math.ceil((a * b / eps) ** 2) - 1, 0))
    return k * math.log(2)


def _zhang_check(seed):
    gen = torch.Generator().manual_seed(int(seed))
    worst, n = 0.0, 0
    for _ in range(400):
        a, b = (10 ** (2 * torch.rand(2, generator=gen, dtype=F64) - 1)).tolist()
        eps = float(10 ** (2 * torch.rand(1, generator=gen, dtype=F64) - 1.5)) * a * b
        npts = int(10 ** (4 * torch.rand(1, generator=gen)))
        worst = max(worst, zhang_packing_lower(a, b, eps, npts) / cov.zhang_log_cover(b, a, eps, npts))
        n += 1
    return worst, n


register(Claim(
    label="lem-zhang-cover",
    statement="(recalled, unverified constants) log N_inf({w.x : ||w||_2<=b}, eps, n pts ||x||_2<=a) <= 36 (ab/eps)^2 log(2 ceil(4ab/eps+2) n + 1)",
    chapter=CH_LIN, provenance="recalled",
    numeric=FunctionCheck(_zhang_check),
    loose_reason="only a lower bound on the true covering number is computable (k log 2 from 2^k separated "
                 "sign patterns); the recalled constant 36 and the log factor put the bound 100x above it",
    mutants=(replaced(cov, "zhang_log_cover",
                      lambda old: (lambda b, a, eps, n: old(b, a, eps, n) * (eps / (a * b)) ** 2),
                      name="radius-factor-dropped",
                      what="the (ab/eps)^2 factor dropped: the cover no longer grows with the radius"),),
))


def _alloc_sample(gen, n):
    J = 3
    return {"c": 10 ** (3 * torch.rand(n, J, generator=gen, dtype=F64) - 1),
            "a": 10 ** (2 * torch.rand(n, J, generator=gen, dtype=F64) - 1),
            "u": torch.rand(n, J, generator=gen, dtype=F64) + 0.05,
            "eps": 10 ** (2 * torch.rand(n, generator=gen, dtype=F64) - 1)}


def _alloc_project(x):
    return {**x, "u": x["u"].abs().clamp(min=1e-6)}


def _alloc_ratio(c, a, u, eps):
    e = eps.unsqueeze(-1) * u / (a * u).sum(-1, keepdim=True)     # any feasible split: sum a_j e_j = eps
    value = (c / e**2).sum(-1)
    return cov.allocation_value(c, 1.0, weights=a) / eps**2 / value


def _alloc_attained(seed):
    """The split of :func:`genbound.covering.allocate_scales` is feasible and attains
    :func:`genbound.covering.allocation_value` (both directions of the ratio)."""
    gen = torch.Generator().manual_seed(int(seed))
    x = _alloc_sample(gen, 60)
    worst = 0.0
    for c, a, eps in zip(x["c"], x["a"], x["eps"]):
        e, _ = cov.allocate_scales(c, float(eps), weights=a)
        attained = float((c / e**2).sum())
        claimed = float(cov.allocation_value(c, float(eps), weights=a))
        worst = max(worst, attained / claimed, claimed / attained, float((a * e).sum() / eps))
    return worst, 60


register(Claim(
    label="lem-allocation",
    statement="min { sum_j c_j/eps_j^2 : sum_j a_j eps_j <= eps } = (sum_j c_j^{1/3} a_j^{2/3})^3 / eps^2",
    chapter=CH_LIN, provenance="reconstructed",
    numeric=AllOf((InequalityCheck(_alloc_sample, _alloc_ratio, _alloc_project, trials=3000, starts=16,
                                   steps=200, lr=0.05, search=("u",)),
                   FunctionCheck(_alloc_attained))),
    symbolic=lambda: sym_alloc.verify_allocation(3) and sym_alloc.verify_second_order(),
    mutants=(scaled(cov, "allocation_value", 2.0, name="value-doubled",
                    what="allocation_value returns 2 (sum c^{1/3} a^{2/3})^3 / eps^2: above some feasible split"),
             scaled(cov, "allocation_value", 0.5, name="value-halved",
                    what="allocation_value returns half the minimum: not attained by any split")),
))


# =================================================================================================
# Chapter 4: softmax and attention
# =================================================================================================
_SM_T = 8


def _sm_sample(gen, n):
    y = torch.randn(n, _SM_T, generator=gen, dtype=F64) * 10 ** (3 * torch.rand(n, 1, generator=gen, dtype=F64) - 2)
    dx = torch.randn(n, _SM_T, generator=gen, dtype=F64) * 10 ** (4 * torch.rand(n, 1, generator=gen, dtype=F64) - 4)
    return {"x": y + dx, "y": y}


def _sm_linf_ratio(x, y):
    num = (torch.softmax(x, -1) - torch.softmax(y, -1)).abs().sum(-1)
    return num / (float(sym_soft.KAPPA_LINF_L1) * (x - y).abs().amax(-1)).clamp(min=_TINY)


def _sm_l2_ratio(x, y):
    num = torch.linalg.vector_norm(torch.softmax(x, -1) - torch.softmax(y, -1), dim=-1)
    return num / (float(sym_soft.KAPPA_L2) * torch.linalg.vector_norm(x - y, dim=-1)).clamp(min=_TINY)


register(Claim(
    label="lem-softmax-linf-l1", covers=('genbound.symbolic.softmax.KAPPA_LINF_L1', 'genbound.bounds.trauger_tewari.KAPPA_DEFAULT'),
    statement="||softmax(x) - softmax(y)||_1 <= ||x - y||_inf (kappa = 1, tight; Edelman et al. use 2)",
    chapter=CH_SOFT, provenance="reconstructed",
    numeric=InequalityCheck(_sm_sample, _sm_linf_ratio, trials=4000, starts=32, steps=200, lr=0.01),
    symbolic=sym_soft.verify_linf_l1_identity,
    mutants=(scaled(sym_soft, "KAPPA_LINF_L1", 0.5, name="kappa-halved", what="kappa = 1/2 instead of 1"),),
))

register(Claim(
    label="lem-softmax-l2", covers=('genbound.symbolic.softmax.KAPPA_L2',),
    statement="||softmax(x) - softmax(y)||_2 <= (1/2) ||x - y||_2",
    chapter=CH_SOFT, provenance="reconstructed",
    numeric=InequalityCheck(_sm_sample, _sm_l2_ratio, trials=4000, starts=32, steps=200, lr=0.01),
    symbolic=sym_soft.verify_l2_half,
    mutants=(scaled(sym_soft, "KAPPA_L2", 0.5, name="constant-halved", what="1/4 instead of 1/2"),),
))


def self_attention(Z: torch.Tensor, W_qk: torch.Tensor, W_v: torch.Tensor) -> torch.Tensor:
    """``SA(Z)_i = sum_t softmax_t(z_i^T W_qk z_t) W_v^T z_t`` for ``Z`` of shape ``(..., T, d)``
    (the reconstructed self-attention of the digest, no ``1/sqrt(d)``: it is absorbed in ``W_qk``)."""
    scores = Z @ W_qk @ Z.transpose(-1, -2)
    return torch.softmax(scores, -1) @ (Z @ W_v)


def attention_lipschitz_constant(S_v, S_qk, B, kappa=1.0):
    """``S_V (1 + 2 kappa B^2 S_QK)``; the ``2`` is :data:`genbound.symbolic.softmax.SCORE_OCCURRENCES`, derived
    from the head's derivative (:func:`genbound.symbolic.softmax.attention_lipschitz`)."""
    return S_v * (1 + sym_soft.SCORE_OCCURRENCES * kappa * B**2 * S_qk)


def _att_make(T, d=4, dv=3):
    def sample(gen, n):
        B = 0.3 + 2.7 * torch.rand(n, generator=gen, dtype=F64)
        Z = torch.randn(n, T, d, generator=gen, dtype=F64)
        Z = Z / torch.linalg.vector_norm(Z, dim=-1, keepdim=True) * B.view(-1, 1, 1) * torch.rand(n, T, 1, generator=gen, dtype=F64)
        dZ = torch.randn(n, T, d, generator=gen, dtype=F64) * 10 ** (2 * torch.rand(n, 1, 1, generator=gen, dtype=F64) - 3)
        return {"Z": Z, "Zp": Z + dZ, "B": B,
                "Wqk": torch.randn(n, d, d, generator=gen, dtype=F64) / math.sqrt(d),
                "Wv": torch.randn(n, d, dv, generator=gen, dtype=F64) / math.sqrt(d)}

    def project(x):
        out = dict(x)
        for key in ("Z", "Zp"):
            nrm = torch.linalg.vector_norm(x[key], dim=-1, keepdim=True)
            out[key] = x[key] * torch.clamp(x["B"].view(-1, 1, 1) / nrm.clamp(min=_TINY), max=1.0)
        return out

    def ratio(Z, Zp, B, Wqk, Wv):
        diff = torch.linalg.vector_norm(self_attention(Z, Wqk, Wv) - self_attention(Zp, Wqk, Wv), dim=-1).amax(-1)
        dz = torch.linalg.vector_norm(Z - Zp, dim=-1).amax(-1)
        S_qk = torch.linalg.matrix_norm(Wqk, ord=2)
        S_v = torch.linalg.matrix_norm(Wv, ord=2)
        L = _THIS.attention_lipschitz_constant(S_v, S_qk, B, float(sym_soft.KAPPA_LINF_L1))
        return diff / (L * dz).clamp(min=_TINY)

    return sample, ratio, project


def _att_checks():
    out = []
    for T, trials, steps in ATT_PLAN:
        s, r, p = _att_make(T)
        out.append(InequalityCheck(s, r, p, trials=trials, starts=min(8, trials), steps=steps, lr=0.02))
    return tuple(out)


register(Claim(
    label="lem-attention-maxrow-lipschitz", covers=('genbound.claims.toolkit.attention_lipschitz_constant', 'genbound.symbolic.softmax.SCORE_OCCURRENCES'),
    statement="rows <= B: ||SA(Z) - SA(Z')||_row <= S_V (1 + 2 kappa B^2 S_QK) ||Z - Z'||_row, kappa = 1, for every T",
    chapter=CH_SOFT, provenance="reconstructed",
    numeric=AllOf(_att_checks()),
    symbolic=sym_soft.verify_attention_lipschitz_form,
    mutants=(scaled(_THIS, "attention_lipschitz_constant", 0.5, name="rhs-halved",
                    what="attention_lipschitz_constant returns half of S_V (1 + 2 kappa B^2 S_QK)"),),
))


def no_global_lipschitz_instance(B: float, delta: float):
    """The two-token construction of :prf:ref:`prop-no-global-lipschitz`: ``z_1 = (B, 0)``, ``z_2 = 0``,
    ``z_2' = (0, delta)``, ``W_qk = e_1 e_2^T``, ``W_v = I``. Returns
    ``(observed ratio ||SA(Z) - SA(Z')||_row / ||Z - Z'||_row, lower bound B^2/4 (1 - B^2 delta^2/12),
    upper bound 1 + 2 B^2)``."""
    Z = torch.tensor([[B, 0.0], [0.0, 0.0]], dtype=F64)
    Zp = torch.tensor([[B, 0.0], [0.0, delta]], dtype=F64)
    Wqk = torch.tensor([[0.0, 1.0], [0.0, 0.0]], dtype=F64)
    Wv = torch.eye(2, dtype=F64)
    diff = torch.linalg.vector_norm(self_attention(Z, Wqk, Wv) - self_attention(Zp, Wqk, Wv), dim=-1).amax()
    observed = float(diff / delta)
    return observed, _THIS.no_global_lower(B, delta), float(attention_lipschitz_constant(1.0, 1.0, B))


def no_global_lower(B: float, delta: float) -> float:
    """``B^2/4 (1 - B^2 delta^2/12)``: :func:`genbound.symbolic.softmax.no_global_lower_bound`, evaluated."""
    dl = sym_soft.sp.Symbol("delta", positive=True)
    return float(sym_soft.no_global_lower_bound().subs({sym_soft.B: B, dl: delta}))


def _noglobal_check(seed):
    worst, n = 0.0, 0
    for B in [0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 100.0]:
        for delta in [1e-1 / B, 1e-2 / B, 1e-3 / B]:
            obs, low, up = no_global_lipschitz_instance(B, delta)
            worst = max(worst, low / obs, obs / up)
            n += 1
    return worst, n


register(Claim(
    label="prop-no-global-lipschitz", covers=('genbound.claims.toolkit.no_global_lipschitz_instance',),
    statement="on rows <= B the best max-row Lipschitz constant of self-attention is >= B^2/4 (for S_V = S_QK = 1): no global constant",
    chapter=CH_SOFT, provenance="reconstructed",
    numeric=FunctionCheck(_noglobal_check),
    symbolic=sym_soft.verify_sigmoid_lower,
    mutants=(scaled(_THIS, "no_global_lower", 2.0, name="lower-doubled",
                    what="the local constant claimed to be at least B^2/2 (1 - B^2 delta^2/12)"),),
))


# =================================================================================================
# Two-sided: every published right-hand side equals its statement (sympy), to relative 1e-12
# =================================================================================================
#: Relative tolerance of the equality checks below.
EQUALITY_RTOL = 1e-12


@register_cache
@lru_cache(maxsize=4)
def part1_equalities(seed: int = 0, n: int = 60) -> dict[str, float]:
    """Largest relative difference, per published function, between the function and its statement
    evaluated from sympy on ``n`` random arguments (log-uniform over several decades). A one-sided
    inequality check cannot see a right side made *larger* (a loosened constant); these can.

    Keys: ``massart`` (:func:`genbound.rademacher.massart_bound` against
    :func:`genbound.symbolic.rademacher.massart_bound` over ``m``), ``l1``, ``l2``, ``mcdiarmid``, ``gap``,
    ``maurey``, ``sup_norm``, ``zhang``, ``euclid``, ``allocation``."""
    import random

    sp = sym_rad.sp
    rng = random.Random(seed)
    u = lambda lo, hi: 10 ** rng.uniform(lo, hi)  # noqa: E731
    f_mas = sp.lambdify((sym_rad.r, sym_rad.N, sym_rad.m), sym_rad.massart_bound() / sym_rad.m, "math")
    f_l1 = sp.lambdify((sym_rad.B, sym_rad.colnorm, sym_rad.d, sym_rad.m), sym_rad.l1_linear_bound(), "math")
    S = sp.Symbol("S", positive=True)
    f_l2 = sp.lambdify((sym_rad.B, S, sym_rad.m), sym_rad.B * sp.sqrt(S) / sym_rad.m, "math")
    f_mcd = sp.lambdify((sym_rad.t, S), sp.exp(-sym_rad.chernoff_exponent_coef() * sym_rad.t**2 / S), "math")
    f_gap = sp.lambdify((sym_rad.R, sym_rad.m, sym_rad.delta, sym_rad.b), sym_rad.generalization_gap(), "math")
    Bm, Rm, em, di, do = sp.symbols("B R epsilon d_in d_out", positive=True)
    f_mau = sp.lambdify((Bm, Rm, em, di, do), sp.ceiling(Bm**2 * Rm**2 / em**2) * sp.log(2 * di * do), "math")
    Ksym = sym_rad.sup_norm_atoms()
    Kn, Ka, Ke = (sp.Symbol(x, positive=True) for x in ("n", "a", "epsilon"))
    f_sup = sp.lambdify((sym_rad.B, Ka, Ke, Kn, sym_rad.d), (sp.floor(Ksym) + 1) * sp.log(2 * sym_rad.d), "math")
    from ..symbolic import trauger_tewari as sym_tt

    za, zb, ze, zn = sp.symbols("a b eta n", positive=True)
    f_zh = sp.lambdify((za, zb, ze, zn), sym_tt.zhang_log_cover(za, zb, ze, zn), "math")
    _f_eu = sp.lambdify((Rm, em, sym_rad.d), sym_rad.d * sp.log(1 + 2 * Rm / em), "mpmath")

    def f_eu(*a):                       # log(1 + x) in 30 digits (in floats it loses digits for small x)
        import mpmath

        with mpmath.workdps(30):
            return float(_f_eu(*(mpmath.mpf(x) for x in a)))
    cs, as_, sol = sym_alloc.lagrange_solution(3)
    f_av = sp.lambdify((*cs, *as_, sym_alloc.eps), sym_alloc.optimal_value(3), "math")
    f_split = sp.lambdify((*cs, *as_, sym_alloc.eps), [sol[e] for e in sorted(sol, key=str)], "math")
    rel = lambda a, b: abs(a - b) / max(abs(b), 1e-300)  # noqa: E731
    out = dict.fromkeys(("massart", "l1", "l2", "mcdiarmid", "gap", "maurey", "sup_norm", "zhang", "euclid",
                         "allocation", "exact_linear"), 0.0)
    gen = torch.Generator().manual_seed(int(seed))
    for _ in range(n):
        Nn, mm, dd = rng.randint(2, 9), rng.randint(1, 12), rng.randint(1, 9)
        A = torch.randn(Nn, mm, generator=gen, dtype=F64) * u(-2, 2)
        r_ = float(torch.linalg.vector_norm(A, dim=-1).max())
        out["massart"] = max(out["massart"], rel(float(rad.massart_bound(A)), f_mas(r_, Nn, mm)))
        X = torch.randn(mm, dd, generator=gen, dtype=F64) * u(-2, 2)
        Bv = u(-2, 2)
        col = float(torch.linalg.vector_norm(X, dim=-2).max())
        out["l1"] = max(out["l1"], rel(float(rad.l1_linear_massart_bound(X, radius=Bv)), f_l1(Bv, col, dd, mm)))
        out["l2"] = max(out["l2"], rel(float(rad.l2_linear_bound(X, radius=Bv)), f_l2(Bv, float((X**2).sum()), mm)))
        if mm <= 10:                     # the exact empirical Rademacher average, against all 2^m signs
            sg = _signs(mm)
            for nrm, ordv in (("l2", 2), ("l1", math.inf)):
                brute = float(Bv * torch.linalg.vector_norm(sg @ X, ord=ordv, dim=-1).mean() / mm)
                got = float(rad.empirical_rademacher_linear(X, radius=Bv, norm=nrm, n_draws=None,
                                                            device="cpu").value)
                out["exact_linear"] = max(out["exact_linear"], rel(got, brute))
        t_, s_ = u(-3, 0), u(-4, 0)
        tens = float(rad.mcdiarmid_tail(torch.tensor(t_, dtype=F64), torch.tensor(s_, dtype=F64)))
        out["mcdiarmid"] = max(out["mcdiarmid"], rel(rad.mcdiarmid_tail(t_, s_), f_mcd(t_, s_)), rel(tens, f_mcd(t_, s_)))
        R_, M_, dl, b_ = u(-4, 0), rng.randint(1, 10**9), u(-6, -0.01), u(-1, 1)
        out["gap"] = max(out["gap"], rel(rad.generalization_gap_bound(R_, m=M_, delta=dl, b=b_), f_gap(R_, M_, dl, b_)))
        Bv, Rv, ev, d1, d2 = u(-2, 2), u(-2, 2), u(-2, 1), rng.randint(1, 64), rng.randint(1, 64)
        out["maurey"] = max(out["maurey"], rel(cov.maurey_log_cover(Bv, Rv, ev, d1, d2), f_mau(Bv, Rv, ev, d1, d2)))
        nn = rng.randint(1, 10**6)
        out["sup_norm"] = max(out["sup_norm"], rel(cov.sup_norm_maurey_log_cover(Bv, Rv, ev, nn, d1),
                                                   f_sup(Bv, Rv, ev, nn, d1)))
        out["zhang"] = max(out["zhang"], rel(cov.zhang_log_cover(Bv, Rv, ev, nn), f_zh(Rv, Bv, ev, nn)),
                           rel(ed_mod.zhang_log_cover(Rv, Bv, ev, nn), f_zh(Rv, Bv, ev, nn)))
        out["euclid"] = max(out["euclid"], rel(cov.euclidean_ball_log_cover(Rv, ev, d1), f_eu(Rv, ev, d1)))
        cc = [u(-3, 3) for _ in range(3)]
        aa = [u(-1, 1) for _ in range(3)]
        ej, val = cov.allocate_scales(cc, ev, weights=aa)
        want = f_split(*cc, *aa, ev)
        out["allocation"] = max(out["allocation"], rel(val, f_av(*cc, *aa, ev)),
                                *(rel(float(x), w) for x, w in zip(ej, want)),
                                rel(float(cov.allocation_value(cc, ev, weights=aa)), f_av(*cc, *aa, ev)))
    return out


def _equality_check(name):
    names = (name,) if isinstance(name, str) else tuple(name)

    def fn(seed):
        out = part1_equalities(seed)
        return max(out[k] for k in names) / EQUALITY_RTOL, 60
    return fn


#: claim label -> (key of :func:`part1_equalities`, published functions it covers)
_EQUALITIES = {
    "lem-massart": ("massart", ("genbound.rademacher.massart_bound", "genbound.rademacher.rademacher_finite_exact")),
    "cor-l1-linear-rademacher": ("l1", ("genbound.rademacher.l1_linear_massart_bound",)),
    "cor-l2-linear-rademacher": ("l2", ("genbound.rademacher.l2_linear_bound",)),
    "lem-mcdiarmid": ("mcdiarmid", ("genbound.rademacher.mcdiarmid_tail",)),
    "thm-rademacher-generalization": ("gap", ("genbound.rademacher.generalization_gap_bound",)),
    "lem-maurey-matrix-cover": ("maurey", ("genbound.covering.maurey_log_cover", "genbound.covering.maurey_sparsify")),
    "lem-sup-norm-maurey": ("sup_norm", ("genbound.covering.sup_norm_maurey_log_cover",)),
    "lem-zhang-cover": ("zhang", ("genbound.covering.zhang_log_cover", "genbound.bounds.edelman.zhang_log_cover")),
    "thm-dudley": (("euclid", "exact_linear"), ("genbound.rademacher.dudley_bound",
                                                "genbound.rademacher.dudley_objective",
                                                "genbound.covering.euclidean_ball_log_cover",
                                                "genbound.rademacher.empirical_rademacher_linear")),
    "lem-allocation": ("allocation", ("genbound.covering.allocate_scales", "genbound.covering.allocation_value")),
}


def _add_equalities():
    """Each claim above also checks its published right side for equality with the statement (two-sided)."""
    from dataclasses import replace as dc_replace

    from . import _REGISTRY

    for label, entry in _EQUALITIES.items():
        key, covers = entry
        c = _REGISTRY[label]
        numeric = FunctionCheck(_equality_check(key)) if c.numeric is None else AllOf(
            (c.numeric, FunctionCheck(_equality_check(key))))
        _REGISTRY[label] = dc_replace(c, numeric=numeric, covers=tuple(c.covers) + covers)


_add_equalities()
