"""Claims of :ref:`ch-tt-covers` (``book/part2/tt_covers.md``): the norm chain and the uniform covers of
the read-out, value and query-key maps (Maurey's empirical method, checked by building the cover element),
and the extreme-point reduction to Zhang's bound.
"""

from __future__ import annotations

import math
import sys

import torch

from .. import covering as cov
from . import Claim, FunctionCheck, InequalityCheck, register, scaled
from ._part2 import F64, _op, _randn, _scales, maurey_draw

CH = "book/part2/tt_covers.md"
_THIS = sys.modules[__name__]  # mutants patch the right-hand-side functions defined here


def _norm_sample(gen, n):
    A = _randn(gen, n, 6, 4)
    kind = torch.randint(0, 4, (n, 1, 1), generator=gen)
    flat = torch.sign(A)  # equal magnitudes: tight last link
    rank1 = _randn(gen, n, 6, 1) @ _randn(gen, n, 1, 4)  # tight first link
    col = A * (torch.arange(4) == 0)  # one output unit
    A = torch.where(kind == 0, A, torch.where(kind == 1, flat, torch.where(kind == 2, rank1, col)))
    return {"A": A}


def _norm_ratio(A):
    op = torch.linalg.matrix_norm(A, ord=2)
    fro = torch.linalg.matrix_norm(A, ord="fro")
    l21 = torch.linalg.vector_norm(A, dim=-2).sum(-1)
    l11 = A.abs().sum((-2, -1))
    links = torch.stack(
        [op / fro, fro / l21, l21 / l11, l11 / (_THIS.norm_price_factor(A.shape[-2]) * l21)], -1
    )
    return links.amax(-1)


def norm_price_factor(d_in: int) -> float:
    """``sqrt(d_in)``: the price of the last link ``||A||_{1,1} <= sqrt(d_in) ||A||_{2,1}`` (Cauchy-Schwarz)."""
    return math.sqrt(d_in)


register(
    Claim(
        label="lem-tt-norm-price",
        covers=("genbound.claims.part2_tt_covers.norm_price_factor", "genbound.nets.matrix_norms"),
        statement="||A||_op <= ||A||_F <= ||A||_{2,1} <= ||A||_{1,1} <= sqrt(d_in) ||A||_{2,1} (column convention)",
        chapter=CH,
        provenance="standard",
        numeric=InequalityCheck(_norm_sample, _norm_ratio, trials=2000, starts=8, steps=60),
        mutants=(
            scaled(
                _THIS,
                "norm_price_factor",
                0.5,
                name="sqrt-din-halved",
                what="||A||_{1,1} <= sqrt(d_in)/2 ||A||_{2,1}",
            ),
        ),
    )
)


COVER_DRAWS = 400  #: Maurey draws per matrix in the checks of the three uniform covers


def _maurey_ratio_fn(shape_fn, sup_fn, input_power=1):
    """The law the proofs use, in their norm, against the cover's atom count.

    For random, flat (the worst case: ``||W||_F`` smallest) and sparse matrices in the ``l_{1,1}`` ball
    of radius ``B`` (tight or slack), inputs of radius ``R = 1.3`` (``R^2`` for the query-key form,
    ``input_power=2``) and accuracies ``eps`` with ``B^2 R^2 / eps^2`` an integer, ``K`` is read off
    :func:`genbound.covering.maurey_log_cover` (``ceil(B^2 R^2/eps^2) log(2dk)`` divided by ``log(2dk)``). The
    ratios: (a) ``E ||W - W_K||_F^2 R^2 / eps^2`` (mean over :data:`COVER_DRAWS` draws minus four standard
    errors; the proof's ``E <= B^2/K <= eps^2/R^2``), (b) ``R sup_fn(W - W_K) / eps`` for the best draw (the
    cover element exists). A constant off by two in the atom count moves (a) by two."""

    def fn(seed):
        gen = torch.Generator().manual_seed(seed)
        worst, trials = 0.0, 0
        R = 1.3**input_power
        for K0 in (1, 3, 10, 40):
            n = 48
            W = _randn(gen, n, *shape_fn())
            kind = torch.arange(n) % 3
            W = torch.where(
                (kind == 1).reshape(n, *[1] * (W.ndim - 1)), torch.sign(W), W
            )  # flat: worst case
            sparse = (torch.rand(W.shape, generator=gen, dtype=F64) < 0.2).to(F64)
            W = torch.where((kind == 2).reshape(n, *[1] * (W.ndim - 1)), W * sparse, W)
            l11 = W.abs().reshape(n, -1).sum(-1)
            B = l11 * (
                1 + (torch.arange(n) % 2) * torch.rand(n, generator=gen, dtype=F64)
            )  # tight or slack
            B = torch.where(B > 0, B, torch.ones_like(B))
            dims = W.shape[1:] if W.ndim == 3 else (W.shape[1], 1)
            Ks, eps = [], []
            for b in B.tolist():
                e = b * R / math.sqrt(K0)
                Ks.append(
                    max(
                        1,
                        round(
                            cov.maurey_log_cover(b, R, e, *dims) / math.log(2 * dims[0] * dims[1])
                        ),
                    )
                )
                eps.append(e)
            eps = torch.tensor(eps, dtype=F64)
            for K in sorted(set(Ks)):
                sel = torch.tensor([k == K for k in Ks])
                What = maurey_draw(W[sel], B[sel], K, COVER_DRAWS, gen)
                D = W[sel][None] - What
                err2 = D.pow(2).reshape(COVER_DRAWS, int(sel.sum()), -1).sum(-1)
                low = err2.mean(0) - 4 * err2.std(0) / math.sqrt(COVER_DRAWS)
                law = low * R**2 / eps[sel] ** 2
                best = R * sup_fn(D).amin(0) / eps[sel]
                worst = max(worst, float(law.max()), float(best.max()))
            trials += n
        return worst, trials

    return fn


COVER_HALVED = scaled(
    cov,
    "maurey_log_cover",
    0.5,
    name="cover-halved",
    what="maurey_log_cover returns half of ceil(B^2 R^2/eps^2) log(2dk): too few atoms",
)


register(
    Claim(
        label="lem-tt-cover-readout",
        covers=("genbound.covering.maurey_log_cover",),
        statement="{h -> w.h : ||w||_1 <= B_w} on ||h||_2 <= R: log N_unif(eps) <= ceil(R^2 B_w^2/eps^2) log(2k)",
        chapter=CH,
        provenance="reconstructed",
        numeric=FunctionCheck(
            _maurey_ratio_fn(lambda: (7,), lambda D: torch.linalg.vector_norm(D, dim=-1))
        ),
        mutants=(COVER_HALVED,),
    )
)

register(
    Claim(
        label="lem-tt-cover-value",
        covers=("genbound.covering.maurey_log_cover",),
        statement="{x -> W^T x : ||W||_{1,1} <= B} on ||x||_2 <= B_X, l2 outputs: "
        "log N_unif(eps) <= ceil(B_X^2 B^2/eps^2) log(2 d k), certified by ||W - W_hat||_op <= eps/B_X",
        chapter=CH,
        provenance="reconstructed",
        numeric=FunctionCheck(_maurey_ratio_fn(lambda: (5, 4), _op)),
        mutants=(COVER_HALVED,),
    )
)


def _qk_sup(D):
    # sup_{||x||,||z|| <= 1} x^T D z = ||D||_op, attained at the top singular pair: evaluate it there
    U, S, Vh = torch.linalg.svd(D)
    return torch.einsum("...i,...ij,...j->...", U[..., :, 0], D, Vh[..., 0, :]).abs()


register(
    Claim(
        label="lem-tt-cover-qk",
        covers=("genbound.covering.maurey_log_cover",),
        statement="{(x, z) -> x^T W z : ||W||_{1,1} <= B_QK} on ||x||_2, ||z||_2 <= B_X: "
        "log N_unif(eps) <= ceil(B_X^4 B_QK^2/eps^2) log(2 d^2), uniformly over all positions and T",
        chapter=CH,
        provenance="reconstructed",
        numeric=FunctionCheck(_maurey_ratio_fn(lambda: (5, 5), _qk_sup, input_power=2)),
        mutants=(COVER_HALVED,),
    )
)


def _extreme_sample(gen, n):
    D = _randn(gen, n, 5, 3) * _scales(gen, n, 5, 3)
    x = _randn(gen, n, 5)
    B = 0.1 + 3 * torch.rand(n, generator=gen, dtype=F64)
    return {"D": D, "x": x, "B": B}


def _extreme_project(p):
    x, B = p["x"], p["B"].abs() + 1e-9
    s = (x.abs().sum(-1) / B).clamp(min=1.0)
    return {**p, "x": x / s[:, None], "B": B}


def extreme_point_bound(D, B):
    """``B_X max_ij |D_ij|``: the right side of :prf:ref:`lem-tt-cover-extreme`."""
    return B * D.abs().amax((-2, -1))


def _extreme_ratio(D, x, B):
    lhs = torch.einsum("nij,ni->nj", D, x).abs().amax(-1)
    return lhs / _THIS.extreme_point_bound(D, B)


register(
    Claim(
        label="lem-tt-cover-extreme",
        covers=("genbound.claims.part2_tt_covers.extreme_point_bound",),
        statement="sup_{||x||_1 <= B_X} ||(W - W_hat)^T x||_inf = B_X max_ij |W - W_hat|_ij, so a uniform cover on the "
        "l1 ball is a cover at the d k coordinates (then Zhang's bound with n = d k)",
        chapter=CH,
        provenance="reconstructed",
        numeric=InequalityCheck(
            _extreme_sample,
            _extreme_ratio,
            _extreme_project,
            trials=2000,
            starts=16,
            steps=80,
            search=("D", "x"),
        ),
        mutants=(
            scaled(
                _THIS,
                "extreme_point_bound",
                0.5,
                name="rhs-halved",
                what="sup over the l1 ball taken as B_X max |W - W_hat| / 2",
            ),
        ),
    )
)
