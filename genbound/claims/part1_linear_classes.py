"""Claims of :ref:`ch-linear-classes` (``book/part1/linear_classes.md``, Part I: covers of linear classes).

Each claim's numeric check computes ``ratio = left side / right side`` on random instances and, where the
quantities are differentiable, pushes the ratio up by projected gradient ascent. Rademacher averages are
computed **exactly** (all ``2^m`` sign vectors) on small instances, so the checks have no Monte Carlo
error unless a docstring says so.
"""

from __future__ import annotations

import math

import torch

from .. import covering as cov
from ..symbolic import allocation as sym_alloc
from ..symbolic import maurey as sym_maurey
from ..symbolic import rademacher as sym_rad
from . import AllOf, Claim, FunctionCheck, InequalityCheck, register, replaced, scaled
from ._part1 import CH_LIN, F64, add_equalities


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
    # an interior point of a ball of radius other than 1: the leftover mass 1 - ||W||_{1,1}/B is not 0 and the
    # atom probabilities |W_ij|/B are not proportional to |W_ij| alone
    yield "interior, radius 2.5", W / W.abs().sum(), 2.5


MAUREY_DRAWS = 4000  #: draws per (matrix, K, atom set) in the check of lem-maurey
MCOVER_DRAWS = 2000  #: Maurey draws per instance in the check of lem-maurey-matrix-cover
SUP_DRAWS = 2000  #: Maurey draws per instance in the check of lem-sup-norm-maurey
SUP_PLAN = [
    (10, 5, 1.0, 1.0, 0.5),
    (200, 20, 2.0, 1.0, 0.8),
    (1000, 50, 1.0, 1.0, 0.3),
    (50, 8, 1.0, 1.0, 0.05),
]  #: (n, d, B, a, eps)


def maurey_law_table(seed: int = 0, *, Ks=(1, 4, 16, 64), n_draws: int = MAUREY_DRAWS):
    """Simulated ``E ||W - W_K||_F^2`` against the law, for each matrix and ``K``, both atom sets.
    Returns a list of dicts (name, K, zero_atom, mean, stderr, law, bound ``B^2/K``)."""
    rows = []
    for j, (name, W, B) in enumerate(maurey_test_matrices(seed)):
        for zero in (True, False):
            for K in Ks:
                Wk = cov.maurey_sparsify(
                    W,
                    B,
                    K,
                    n_draws=n_draws,
                    seed=seed * 7919 + 97 * j + K + 13 * zero,
                    zero_atom=zero,
                )
                err = ((Wk - W) ** 2).sum((-2, -1))
                rows.append(
                    {
                        "matrix": name,
                        "K": K,
                        "zero_atom": zero,
                        "mean": float(err.mean()),
                        "stderr": float(err.std() / math.sqrt(n_draws)),
                        "law": float(cov.maurey_expected_error(W, B, K, zero_atom=zero)),
                        "min": float(err.min()),
                        "bound": B**2 / K,
                        "exist": float((B**2 - (W**2).sum()) / K),
                    }
                )
    return rows


def _maurey_check(seed):
    worst = 0.0
    # the zero matrix: nothing to approximate with the zero atom, B^2/K with atoms +-B E_11 only
    for B, K in ((1.0, 3), (2.5, 7)):
        Z = torch.zeros(4, 3, dtype=F64)
        zero = float(cov.maurey_expected_error(Z, B, K, zero_atom=True))
        full = float(cov.maurey_expected_error(Z, B, K, zero_atom=False)) / (B**2 / K)
        ok = math.isfinite(zero) and math.isfinite(full)
        worst = max(worst, 1.0 + abs(zero) + abs(full - 1.0) if ok else math.inf)
    rows = maurey_law_table(seed)
    for r in rows:
        half = (
            4 * r["stderr"] + 1e-12 * r["law"]
        )  # four standard errors (plus round-off when the error is constant)
        lo, hi = r["mean"] - half, r["mean"] + half
        worst = max(worst, lo / r["law"], r["law"] / hi, r["min"] / r["exist"])
    return worst, len(rows) * MAUREY_DRAWS


register(
    Claim(
        label="lem-maurey",
        covers=("genbound.covering.maurey_expected_error",),
        statement="w in conv{g_i}, ||g_i|| <= c: E||w - (1/K) sum_r g_{i_r}||^2 = (E||g||^2 - ||w||^2)/K <= (c^2 - ||w||^2)/K",
        chapter=CH_LIN,
        provenance="standard",
        numeric=FunctionCheck(_maurey_check),
        symbolic=lambda: (
            sym_maurey.verify_variance_identity() and sym_maurey.verify_zero_atom_law()
        ),
        mutants=(
            scaled(
                cov,
                "maurey_expected_error",
                0.5,
                name="law-halved",
                what="maurey_expected_error returns half of (E||g||^2 - ||w||^2)/K",
            ),
        ),
    )
)


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
            Wk = cov.maurey_sparsify(
                W,
                B,
                K,
                n_draws=MCOVER_DRAWS,
                seed=int(torch.randint(0, 2**31, (1,), generator=gen)),
                zero_atom=False,
            )
            err2 = ((Wk - W) ** 2).sum((-2, -1))
            low = float(err2.mean() - 4 * err2.std() / math.sqrt(MCOVER_DRAWS))
            op = torch.linalg.matrix_norm(Wk - W, ord=2)
            worst = max(worst, low * R**2 / eps**2, float(R * op.min() / eps))
            n += MCOVER_DRAWS
    return worst, n


register(
    Claim(
        label="lem-maurey-matrix-cover",
        statement="||W||_{1,1} <= B, inputs ||x||_2 <= R: log N_unif(eps, op) <= ceil(B^2 R^2/eps^2) log(2 d k)",
        chapter=CH_LIN,
        provenance="reconstructed",
        numeric=FunctionCheck(_mcover_check),
        symbolic=sym_maurey.verify_cover_scale,
        mutants=(
            scaled(
                cov,
                "maurey_log_cover",
                0.5,
                name="cover-halved",
                what="maurey_log_cover returns half of ceil(B^2 R^2/eps^2) log(2dk): too few atoms",
            ),
        ),
    )
)


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
        X[1] = a * torch.sign(torch.randn(d, generator=gen, dtype=F64))  # another corner
        w = torch.randn(1, d, generator=gen, dtype=F64)
        w = B * w / w.abs().sum()
        K = round(cov.sup_norm_maurey_log_cover(B, a, eps, npts, d) / math.log(2 * d))
        union = 2 * npts * math.exp(-K * eps**2 / (2 * a**2 * B**2))
        wk = cov.maurey_sparsify(
            w, B, K, n_draws=SUP_DRAWS, seed=int(torch.randint(0, 2**31, (1,), generator=gen))
        )
        err = torch.einsum("nd,sd->sn", X, (wk - w)[:, 0, :])  # (draws, points)
        low = err.pow(2).mean(0) - 4 * err.pow(2).std(0) / math.sqrt(SUP_DRAWS)
        law = float((low * K / (a * B) ** 2).max())
        worst = max(worst, union, law, float(err.abs().amax(-1).min() / eps))
        n += SUP_DRAWS
    return worst, n


register(
    Claim(
        label="lem-sup-norm-maurey",
        statement="||w||_1 <= B, ||x_i||_inf <= a on n points: log N_inf(eps) <= (floor(2 B^2 a^2 log(2n)/eps^2) + 1) log(2d)",
        chapter=CH_LIN,
        provenance="reconstructed",
        numeric=FunctionCheck(_supnorm_check),
        symbolic=sym_rad.verify_sup_norm_atoms,
        mutants=(
            scaled(
                cov,
                "SUP_NORM_HOEFFDING_COEF",
                0.5,
                name="hoeffding-coef-halved",
                what="K = floor(B^2 a^2 log(2n)/eps^2) + 1: the 2 of Hoeffding's exponent halved",
            ),
        ),
    )
)


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
        worst = max(
            worst, zhang_packing_lower(a, b, eps, npts) / cov.zhang_log_cover(b, a, eps, npts)
        )
        n += 1
    return worst, n


register(
    Claim(
        label="lem-zhang-cover",
        statement="(recalled, unverified constants) log N_inf({w.x : ||w||_2<=b}, eps, n pts ||x||_2<=a) <= 36 (ab/eps)^2 log(2 ceil(4ab/eps+2) n + 1)",
        chapter=CH_LIN,
        provenance="recalled",
        numeric=FunctionCheck(_zhang_check),
        loose_reason="only a lower bound on the true covering number is computable (k log 2 from 2^k separated "
        "sign patterns); the recalled constant 36 and the log factor put the bound 100x above it",
        mutants=(
            replaced(
                cov,
                "zhang_log_cover",
                lambda old: lambda b, a, eps, n: old(b, a, eps, n) * (eps / (a * b)) ** 2,
                name="radius-factor-dropped",
                what="the (ab/eps)^2 factor dropped: the cover no longer grows with the radius",
            ),
        ),
    )
)


def _alloc_sample(gen, n):
    J = 3
    return {
        "c": 10 ** (3 * torch.rand(n, J, generator=gen, dtype=F64) - 1),
        "a": 10 ** (2 * torch.rand(n, J, generator=gen, dtype=F64) - 1),
        "u": torch.rand(n, J, generator=gen, dtype=F64) + 0.05,
        "eps": 10 ** (2 * torch.rand(n, generator=gen, dtype=F64) - 1),
    }


def _alloc_project(x):
    return {**x, "u": x["u"].abs().clamp(min=1e-6)}


def _alloc_ratio(c, a, u, eps):
    e = (
        eps.unsqueeze(-1) * u / (a * u).sum(-1, keepdim=True)
    )  # any feasible split: sum a_j e_j = eps
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


def _zero_split_when_sum_one(old):
    """Mutant maker: :func:`genbound.covering.allocate_scales` answering ``(0, 0)`` whenever its sum ``S`` is 1."""

    def new(costs, eps, *, weights=None):
        e, v = old(costs, eps, weights=weights)
        c = torch.as_tensor(costs, dtype=F64)
        a = torch.ones_like(c) if weights is None else torch.as_tensor(weights, dtype=F64)
        S = float((c**cov.ALLOCATION_COST_EXPONENT * a**cov.ALLOCATION_WEIGHT_EXPONENT).sum())
        return (torch.zeros_like(e), 0.0) if S == 1.0 else (e, v)

    return new


register(
    Claim(
        label="lem-allocation",
        statement="min { sum_j c_j/eps_j^2 : sum_j a_j eps_j <= eps } = (sum_j c_j^{1/3} a_j^{2/3})^3 / eps^2",
        chapter=CH_LIN,
        provenance="reconstructed",
        numeric=AllOf(
            (
                InequalityCheck(
                    _alloc_sample,
                    _alloc_ratio,
                    _alloc_project,
                    trials=3000,
                    starts=16,
                    steps=200,
                    lr=0.05,
                    search=("u",),
                ),
                FunctionCheck(_alloc_attained),
            )
        ),
        symbolic=lambda: sym_alloc.verify_allocation(3) and sym_alloc.verify_second_order(),
        mutants=(
            scaled(
                cov,
                "allocation_value",
                2.0,
                name="value-doubled",
                what="allocation_value returns 2 (sum c^{1/3} a^{2/3})^3 / eps^2: above some feasible split",
            ),
            scaled(
                cov,
                "allocation_value",
                0.5,
                name="value-halved",
                what="allocation_value returns half the minimum: not attained by any split",
            ),
            replaced(
                cov,
                "allocate_scales",
                _zero_split_when_sum_one,
                name="sum-one-as-zero",
                what="allocate_scales treats a sum S = 1 as the all-zero case (scales 0, value 0)",
            ),
        ),
    )
)


#: claim label -> (key of :func:`._part1.part1_equalities`, published functions it covers): each claim
#: also checks its published right side for equality with the statement (two-sided)
_EQUALITIES = {
    "lem-maurey-matrix-cover": (
        "maurey",
        ("genbound.covering.maurey_log_cover", "genbound.covering.maurey_sparsify"),
    ),
    "lem-sup-norm-maurey": ("sup_norm", ("genbound.covering.sup_norm_maurey_log_cover",)),
    "lem-zhang-cover": (
        "zhang",
        ("genbound.covering.zhang_log_cover",),
    ),
    "lem-allocation": (
        "allocation",
        ("genbound.covering.allocate_scales", "genbound.covering.allocation_value"),
    ),
}

add_equalities(_EQUALITIES)
