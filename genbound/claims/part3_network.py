"""Claims of :ref:`ch-sa-network` (``book/part3/network.md``): theorem P, the proved network bound, and its
steps, each checked against the production functions of :mod:`genbound.bounds.network` and
:mod:`genbound.covering` (the hybrid step on the reference transformer, the rank net, the Gaussian maximum
behind Sudakov's constant, the residual's width, the prior, the closed form and the quadrature), and the
whole bound against an independent recomputation from numpy's SVD and sympy's constants.

One concept: the claims of one chapter (the naming scheme of ``genbound.claims``).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import torch

from .. import covering as _cov
from ..bounds import network as _net
from ..symbolic import network as sn
from ..weights import TransformerWeights
from . import Claim, FunctionCheck, register, replaced, scaled
from ._part3 import DT, EQ_RTOL
from ._part3_network import (
    _hybrid_check,
    _reference_bound,
    _spec,
    _theorem_instances,
    grid_check,
)

# the chapter's demonstrations, computed beside the checks (re-exported for book/part3/network.md)
from ._part3_network import improper_violation, qk_adversarial_ratio  # noqa: E402, F401

CH = "book/part3/network.md"
UPPER_SUM_SLACK = (
    5e-3  # how far above the integral the upper Riemann sum may lie in lem-p-closed-form
)


def _scale_qk(old, factor: float):
    """``network_sensitivities`` with every query-key sensitivity times ``factor`` (a mutant)."""

    def f(*a, **k):
        out = old(*a, **k)
        H = torch.as_tensor(a[0]).shape[1]
        per = 2 * H + 2
        ls = out["log_sens"].clone()
        for i in range(ls.numel()):
            if i % per < 2 * H and (i % per) % 2 == 0:
                ls[i] += math.log(factor)
        return {**out, "log_sens": ls}

    return f


def _halve_qk(old):
    """``network_sensitivities`` with the query-key sensitivity halved (a mutant)."""
    return _scale_qk(old, 0.5)


register(
    Claim(
        label="lem-p-hybrid-step",
        statement="replacing matrix a of the reference transformer by W + Delta, with the matrices before it "
        "(hybrid order) replaced by elements within their levels and those after it unchanged, moves the "
        "output of every sequence by at most alpha_a sens_a max_t |v_t Delta| in the max-row norm, and the "
        "vectors v_t have norm at most B_a",
        chapter=CH,
        provenance="reconstructed",
        numeric=FunctionCheck(_hybrid_check),
        covers=(
            "genbound.bounds.network.network_sensitivities",
            "genbound.bounds.network.matrix_order",
        ),
        mutants=(
            replaced(
                _net,
                "network_sensitivities",
                lambda old: _scale_qk(old, 0.25),
                name="qk-sensitivity-quartered",
                what="the query-key sensitivity with a softmax constant 1/2, below the tight constant 1",
            ),
            replaced(
                _net,
                "network_sensitivities",
                lambda old: lambda *a, **k: old(*a, **{**k, "input_radius": 1.0}),
                name="input-radius-ignored",
                what="the first layer read as if its rows had norm 1",
            ),
            replaced(
                _net,
                "network_sensitivities",
                lambda old: (
                    lambda *a, **k: {
                        **old(*a, **k),
                        "log_alpha": torch.zeros_like(old(*a, **k)["log_alpha"]),
                    }
                ),
                name="no-peeling",
                what="alpha = 1 for every layer (no product over later layers)",
            ),
        ),
    )
)


def _rank_net_check(seed: int) -> tuple[float, int]:
    gen = torch.Generator().manual_seed(seed)
    base = float(sn.rank_net_base())
    worst, n = 0.0, 0
    for _ in range(200):
        rows, cols = (int(x) for x in torch.randint(1, 40, (2,), generator=gen))
        r = int(torch.randint(0, min(rows, cols) + 1, (1,), generator=gen))
        R = float(torch.empty(1).uniform_(0.01, 100, generator=gen))
        e = float(torch.empty(1).uniform_(0.001, 200, generator=gen))
        want = (rows + cols + 1) * r * max(math.log(base * R / e), 0.0)
        got = float(_cov.rank_net_log_cover(r, rows, cols, R, e))
        worst = max(worst, abs(got - want) / max(abs(want), 1e-300) if want else abs(got))
        # domination: max_t |v_t Delta| <= B ||Delta||_2 <= B ||Delta||_F on random pieces
        D = torch.randn(rows, cols, generator=gen, dtype=DT) * torch.rand(
            1, generator=gen, dtype=DT
        )
        V = torch.randn(9, rows, generator=gen, dtype=DT)
        B = float(V.norm(dim=-1).max())
        lhs = float((V @ D).norm(dim=-1).max())
        worst = max(worst, lhs / (B * _spec(D)) - 1.0, _spec(D) / float(D.norm()) - 1.0)
        n += 1
    return 1.0 + worst, n


register(
    Claim(
        label="lem-p-rank-net",
        statement="the rows x cols matrices of rank <= r and Frobenius norm <= R have an eps-net in Frobenius "
        "norm of log-size (rows + cols + 1) r log+(9 R / eps), and max_t |v_t Delta| <= B ||Delta||_2 <= "
        "B ||Delta||_F",
        chapter=CH,
        provenance="standard",
        numeric=FunctionCheck(_rank_net_check),
        rtol=EQ_RTOL,
        symbolic=lambda: float(sn.rank_net_base()) == _cov.RANK_NET_BASE,
        covers=("genbound.covering.rank_net_log_cover", "genbound.covering.rank_net_log_cover_log"),
        mutants=(
            scaled(
                _cov,
                "RANK_NET_BASE",
                7 / 9,
                name="base-7",
                what="the volumetric 7 instead of the cited 9",
            ),
            replaced(
                _cov,
                "rank_net_log_cover",
                lambda old: (
                    lambda r, rows, cols, R, e: (
                        old(r, rows, cols, R, e) * (rows + cols) / (rows + cols + 1)
                    )
                ),
                name="no-plus-one",
                what="(N + N') r parameters, the singular values left out",
            ),
        ),
    )
)


def _expected_max(M: int) -> float:
    """``E max_{i <= M} g_i`` by quadrature (mpmath, 30 digits)."""
    mpmath.mp.dps = 30
    f = lambda x: x * M * mpmath.npdf(x) * mpmath.ncdf(x) ** (M - 1)  # noqa: E731
    return float(mpmath.quad(f, [-mpmath.inf, -5, 0, 2, 4, 6, 8, mpmath.inf]))


def _rel(got: float, want: float) -> float:
    """``|got - want| / |want|``, and ``inf`` when ``got`` is not finite (a NaN must fail, not slip past max)."""
    if not math.isfinite(got):
        return math.inf
    return abs(got - want) / max(abs(want), 1e-300)


def _sudakov_check(seed: int) -> tuple[float, int]:
    Ms = sorted(
        {2, 3, 4, 5, 7, 10, 16, 30, 100, 1000, 10**4, 10**5, 10**6, 10**8, 10**10}
        | {int(x) for x in np.random.default_rng(seed).integers(2, 10**6, 6)}
    )
    worst = max(float(_cov.gaussian_max_lower_bound(M)) / _expected_max(M) for M in Ms)
    C = float(sn.sudakov_constant())  # the cover itself, against the derived constant
    for w, e in ((1.0, 1.0), (3.0, 0.5), (0.2, 7.0), (1e70, 1e-70)):
        worst = max(worst, 1.0 + _rel(float(_cov.sudakov_log_cover(w, e)), C * (w / e) ** 2))
    return worst, len(Ms)


register(
    Claim(
        label="lem-p-sudakov",
        statement="E max of M >= 2 i.i.d. standard Gaussians >= sqrt(log M / (pi log 2)) (equality at M = 2), "
        "hence an eps-packing of a set of Gaussian width w has log-size <= 2 pi log 2 (w / eps)^2",
        chapter=CH,
        provenance="recalled",
        numeric=FunctionCheck(_sudakov_check),
        symbolic=lambda: (
            abs(float(sn.sudakov_constant()) - _cov.SUDAKOV_CONSTANT) < 1e-12
            and sn.verify_gaussian_max_at_two()
        ),
        covers=(
            "genbound.covering.gaussian_max_lower_bound",
            "genbound.covering.sudakov_log_cover",
            "genbound.covering.sudakov_log_cover_log",
        ),
        mutants=(
            scaled(
                _cov,
                "SUDAKOV_CONSTANT",
                0.5,
                name="constant-halved",
                what="pi log 2 instead of 2 pi log 2",
            ),
            scaled(
                _cov,
                "gaussian_max_lower_bound",
                1.05,
                name="max-bound-raised",
                what="the Gaussian maximum's lower bound 5% too high",
            ),
        ),
    )
)


def _width_check(seed: int) -> tuple[float, int]:
    gen = torch.Generator().manual_seed(seed)
    worst, n = 0.0, 0
    for _ in range(30):
        rows, cols = (int(x) for x in torch.randint(1, 12, (2,), generator=gen))
        k = int(torch.randint(1, 30, (1,), generator=gen))
        V = torch.randn(k, rows, generator=gen, dtype=DT) * torch.rand(
            k, 1, generator=gen, dtype=DT
        )
        if bool(torch.rand(1, generator=gen) < 0.3):  # all rows alike: G has rank 1
            V = V[:1].expand(k, rows).clone()
        B = float(V.norm(dim=-1).max())
        g = torch.randn(400, k, cols, generator=gen, dtype=DT)
        G = torch.einsum("kr,skc->src", V, g)
        tau = float(torch.empty(1).uniform_(0.1, 3.0, generator=gen))
        width = tau * float(torch.linalg.matrix_norm(G, ord="nuc").mean()) / math.sqrt(k)
        worst = max(worst, width / float(_cov.spectral_ball_width(tau, B, rows, cols)))
        n += 1
    return worst, n


register(
    Claim(
        label="lem-p-residual-cover",
        statement="the Gaussian width of {(v_j R)_j / sqrt(k) : ||R||_2 <= tau}, for k row vectors of norm <= B, "
        "is at most tau B sqrt(min(rows, cols) cols)",
        chapter=CH,
        provenance="reconstructed",
        numeric=FunctionCheck(_width_check),
        loose_reason="||G||_* <= sqrt(rank) ||G||_F is attained only by a flat spectrum, and a Gaussian G's "
        "nuclear norm is about 8/(3 pi) of that at best; with few vectors G has low rank and the ratio falls "
        "to 1/sqrt(min(rows, cols))",
        covers=("genbound.covering.spectral_ball_width",),
        mutants=(
            replaced(
                _cov,
                "spectral_ball_width",
                lambda old: lambda t, B, r, c: old(t, B, r, c) / math.sqrt(min(int(r), int(c))),
                name="no-rank-factor",
                what="tau B sqrt(cols): the nuclear norm read as the Frobenius norm",
            ),
        ),
    )
)


def _prior_check(seed: int) -> tuple[float, int]:
    worst = 0.0
    for K in (0, 1, 5, 50, 1000, 10**5):
        k = torch.arange(-K, K + 1)
        total = float(_net.log_level_prior(k).exp().sum())
        want = 1.0 - 1.0 / (K + 2)  # the two tails sum to 2 * sum_{k > K} 1/(2(k+1)(k+2)) = 1/(K+2)
        worst = max(worst, abs(total - want) / want)
    return 1.0 + worst, 6


register(
    Claim(
        label="lem-p-prior",
        statement="pi(0) = 1/2, pi(k) = 1/(2(|k|+1)(|k|+2)) sums to 1 over the integers (the terms with |k| <= K "
        "to 1 - 1/(K+2)); the prior over a network's choices is the product over its matrices of "
        "(1/|P_m|) pi(spectral level) (1/R at p = 0, pi(Schatten level) at p > 0)",
        chapter=CH,
        provenance="reconstructed",
        numeric=FunctionCheck(_prior_check),
        rtol=EQ_RTOL,
        symbolic=lambda: sn.prior_total() == 1,
        covers=("genbound.bounds.network.log_level_prior", "genbound.bounds.network.level_index"),
        mutants=(
            replaced(
                _net,
                "log_level_prior",
                lambda old: lambda k: old(k) + math.log(2.0),
                name="prior-doubled",
                what="pi(k) without the 1/2: the prior sums to 2",
            ),
        ),
    )
)


def _closed_form_check(seed: int) -> tuple[float, int]:
    rng = np.random.default_rng(seed)
    worst, n = 0.0, 0
    mpmath.mp.dps = 25
    for i in range(12):
        k = int(rng.integers(1, 6))
        P = rng.integers(1, 3000, k).astype(float)
        lb = rng.uniform(
            -6.0 if i % 2 else math.log(0.25), 40.0, k
        )  # odd i: some b_a below the top (kinks)
        top = 0.25
        got = _net.p0_dudley_integral(P, lb, top)
        if not math.isfinite(got):
            return math.inf, n
        f = lambda e: mpmath.sqrt(
            sum(p * max(mpmath.log(mpmath.e**l / e), 0) for p, l in zip(P, lb))
        )  # noqa: E731
        pts = sorted({0.0, top} | {math.exp(l) for l in lb if math.exp(l) < top})
        want = float(mpmath.quad(f, pts))
        worst = max(worst, abs(got - want) / want)
        n += 1
        if i % 2 == 0:  # every b_a >= top: the quadrature path equals the closed form too
            covs = [
                lambda e, p=p, l=l: p * (math.log(1) + (l - e.log())).clamp(min=0)
                for p, l in zip(P, lb)
            ]
            # the upper Riemann sum: at least the integral, and within UPPER_SUM_SLACK of it (with
            # u_max = 4 the closed-form tail carries weight)
            for q in (
                _net.quadrature_dudley_integral(covs, P, lb, top=top),
                _net.quadrature_dudley_integral(covs, P, lb, top=top, u_max=4.0),
            ):
                within = math.isfinite(q) and q <= got * (1.0 + UPPER_SUM_SLACK)
                worst = max(worst, got / q - 1.0 if within else math.inf)
    return 1.0 + worst, n


register(
    Claim(
        label="lem-p-closed-form",
        statement="int_0^top sqrt(sum_a P_a log+(b_a/eps)) d eps equals, between consecutive b_a, sqrt(A) times "
        "differences of G(eps) = eps [sqrt(u) + (sqrt(pi)/2) erfcx(sqrt(u))], u = log(b*/eps); with every "
        "b_a >= top it is sqrt(A) top [sqrt(u0) + (sqrt(pi)/2) erfcx(sqrt(u0))]; the upper Riemann sum is at "
        f"least it and within {UPPER_SUM_SLACK:.1%} of it",
        chapter=CH,
        provenance="reconstructed",
        numeric=FunctionCheck(_closed_form_check),
        rtol=EQ_RTOL,
        symbolic=sn.verify_p0_antiderivative,
        covers=(
            "genbound.bounds.network.p0_dudley_integral",
            "genbound.bounds.network.quadrature_dudley_integral",
        ),
        mutants=(
            replaced(
                _net,
                "_gamma_32_upper",
                lambda old: lambda u: u.clamp(min=0).sqrt(),
                name="erfc-dropped",
                what="the erfc term of the antiderivative left out",
            ),
            replaced(
                _net,
                "quadrature_dudley_integral",
                lambda old: lambda *a, **k: old(*a, **k) * (1.0 - 2e-4),
                name="integral-understated",
                what="the sum 0.02 % below the integral: an estimate, no longer an upper bound",
            ),
        ),
    )
)


def _entropy_check(seed: int) -> tuple[float, int]:
    gen = torch.Generator().manual_seed(seed)
    base, C_S = float(sn.rank_net_base()), float(sn.sudakov_constant())
    split = float(
        sn.proper_cover_factor()
    )  # the radius is halved between the two pieces (the same 2)
    worst, n = 0.0, 0
    for _ in range(40):
        rows, cols = (int(x) for x in torch.randint(2, 30, (2,), generator=gen))
        R = min(rows, cols)
        p = float(torch.empty(1).uniform_(0.05, 2.0, generator=gen))
        s = float(torch.empty(1).uniform_(0.1, 10, generator=gen))
        level = float(torch.empty(1).uniform_(0.01, 2.0, generator=gen)) * R * s**p
        T = int(torch.randint(1, 600, (1,), generator=gen))
        ls = float(torch.empty(1).uniform_(-12, 20, generator=gen))
        eps = torch.logspace(-12, -0.6, 25, dtype=DT)
        got = _net.matrix_log_cover(
            eps, p=p, level=level, s=s, rows=rows, cols=cols, log_scale=ls, seq_len=T
        )
        cand = sorted({0} | {min(R, int(round(10 ** (math.log10(R) * j / 47)))) for j in range(48)})
        for e, g in zip(eps.tolist(), got.tolist()):
            x = e / math.exp(ls)
            best = math.inf
            for r in cand:
                res = 0.0 if r >= R else min(s, (level / (r + 1)) ** (1 / p))
                sp_ = split if res > 0 else 1.0
                rank = (
                    0.0
                    if r == 0
                    else (rows + cols + 1) * r * max(math.log(base * s * math.sqrt(r) * sp_ / x), 0)
                )
                resid = C_S * T * (res * math.sqrt(R * cols) * sp_ / x) ** 2
                best = min(best, rank + resid)
            worst = max(worst, abs(g - best) / max(best, 1e-300))
            n += 1
    return 1.0 + worst, n


register(
    Claim(
        label="lem-p-matrix-entropy",
        statement="for ||W||_{S_p}^p <= M and ||W||_2 <= s, the log-covering number at radius x (in units of the "
        "vectors' radius) is at most min_r [(N+N'+1) r log+(9 s sqrt(r) 2/x) + 2 pi log 2 T (2 rho_r "
        "sqrt(min(N,N') N') / x)^2], rho_r = min(s, (M/(r+1))^{1/p}) (no split and no residual at full rank)",
        chapter=CH,
        provenance="reconstructed",
        numeric=FunctionCheck(_entropy_check),
        rtol=EQ_RTOL,
        covers=("genbound.bounds.network.matrix_log_cover",),
        mutants=(
            scaled(
                _net,
                "PIECE_SPLIT",
                0.5,
                name="no-split",
                what="both pieces covered at the full radius",
            ),
            scaled(
                _cov,
                "SUDAKOV_CONSTANT",
                1e-3,
                name="residual-constant-shrunk",
                what="the residual's cover without its factors (T and the constant)",
            ),
        ),
    )
)


# -- the theorem, against an independent recomputation ------------------------------------------------------


def _theorem_check(seed: int) -> tuple[float, int]:
    worst, n = 0.0, 0
    for mats, kw in _theorem_instances(seed):
        w = TransformerWeights.from_proxy_matrices(*mats)
        r = _net.network_bound(w, **kw)
        cap, union, gap = _reference_bound(mats, **kw)
        for got, want in ((r.capacity, cap), (r.union_cost, union), (r.value, gap)):
            worst = max(worst, _rel(got, want))
        n += 1
    return 1.0 + worst, n


def _sum_of_roots(old):
    def f(P, log_b, top=None):
        return sum(old([p], [l], top) for p, l in zip(list(P), list(log_b)))

    return f


register(
    Claim(
        label="thm-p-network",
        statement="with probability >= 1 - delta, every reference transformer's ramp-loss gap is at most "
        "2 capacity/sqrt(n) + 3 sqrt((log(2/delta) + union cost)/(2n)), capacity = 12 int_0^{1/4} "
        "sqrt(sum_a H_a(eps)) d eps, each matrix covered at radius margin eps/(K kappa_a alpha_a sens_a), "
        "K = (2H+2)L, kappa = 2 for M_in; network_bound returns exactly these numbers",
        chapter=CH,
        provenance="reconstructed",
        numeric=FunctionCheck(_theorem_check),
        rtol=EQ_RTOL,
        covers=(
            "genbound.bounds.network.network_bound",
            "genbound.bounds.network.NetworkBound",
            "genbound.bounds.network.matrix_count",
            "genbound.bounds.network.total_union_cost",
            "genbound.bounds.network.dudley_top",
        ),
        mutants=(
            scaled(
                _net,
                "PROPER_COVER_FACTOR",
                0.5,
                name="proper-cover-2-dropped",
                what="M_in's cover taken improper at no cost",
            ),
            replaced(
                _net,
                "network_sensitivities",
                _halve_qk,
                name="sensitivity-halved",
                what="the query-key sensitivity halved",
            ),
            replaced(
                _net,
                "matrix_count",
                lambda old: lambda L, H: 4 * L,
                name="K-as-4L",
                what="K counted as 4L (one head per layer)",
            ),
            replaced(
                _net,
                "total_union_cost",
                lambda old: lambda c: float(sum(list(c)[: len(list(c)) // 2])),
                name="union-fewer-matrices",
                what="the union cost over half the matrices",
            ),
            replaced(
                _net,
                "dudley_top",
                lambda old: lambda: 1.0,
                name="dudley-to-1",
                what="Dudley's integral to 1 instead of 1/4",
            ),
            replaced(
                _net,
                "p0_dudley_integral",
                _sum_of_roots,
                name="sum-of-roots",
                what="the entropies' square roots summed instead of the root of their sum",
            ),
        ),
    )
)


def _grid_claim_check(seed: int) -> tuple[float, int]:
    err, sel, n = grid_check(seed)
    return max(1.0 + err, sel), n


register(
    Claim(
        label="prop-p-network-grid",
        statement="with a sequence length, network_bound's table (levels, indices, P, log b, union costs) and "
        "capacity (the upper Riemann sum, or the closed form) equal their recomputation, the capacity lies "
        "above the lower Riemann sum of a grid twice as fine, and each matrix's index minimises "
        "24 I_a + 3 sqrt(c_a / 2) over the grid, I_a its Dudley integral by the stated coarse rule and c_a its "
        "level's cost",
        chapter=CH,
        provenance="reconstructed",
        numeric=FunctionCheck(_grid_claim_check),
        rtol=1e-5,
        covers=(
            "genbound.bounds.network.network_bound",
            "genbound.bounds.network.matrix_log_cover",
        ),
        mutants=(
            replaced(
                _net,
                "_selection_score",
                lambda old: lambda i, c: old(i, 4.0 * c),
                name="level-cost-quadrupled",
                what="the index chosen with four times its level's cost",
            ),
            replaced(
                _net,
                "_selection_score",
                lambda old: lambda i, c: old(i, c / 2.0),
                name="level-cost-halved",
                what="the index chosen with half its level's cost (3 sqrt(c / 4))",
            ),
            replaced(
                _net,
                "_selection_score",
                lambda old: lambda i, c: -old(i, c),
                name="worst-index",
                what="the index that maximises the score",
            ),
            replaced(
                _cov,
                "RANK_NET_BASE",
                lambda old: old * 1.5,
                name="rank-net-base-13.5",
                what="the rank net's 9 raised to 13.5 (the entropy, P log b and the tail all move)",
            ),
        ),
    )
)
