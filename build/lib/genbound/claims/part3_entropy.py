"""Claims of :ref:`ch-sa-entropy` (``book/part3/entropy.md``): the per-matrix term and its optimal
threshold, the range of ``c_p``, the two-piece entropy of a Schatten ball, the residual width, and the
lemma-level values of Part III two-sided against sympy and numpy.

One concept: the claims of one chapter (the naming scheme of ``genbound.claims``).
"""

from __future__ import annotations

import math
import sys

import numpy as np
import torch

from .. import schatten_entropy as se
from ..symbolic import sakai_imaizumi as sym
from ..symbolic import spectral_bound as _sb
from ..weights import KINDS as _KINDS
from . import AllOf, Claim, FunctionCheck, InequalityCheck, register, replaced, scaled
from ._part3 import (
    DT,
    EQ_RTOL,
    _F,
    _H,
    _N,
    _T,
    _Excess,
    _all,
    _ball,
    _np_logsumexp,
    _sym_numeric,
    _u,
)

CH = "book/part3/entropy.md"
_THIS = sys.modules[__name__]  # mutants patch the right-hand-side functions defined here


def _two_sided(a, b) -> float:
    """``max exp|log a - log b|``: two-sided and sign-safe (a non-positive or NaN value is an infinite ratio)."""
    a, b = torch.as_tensor(a, dtype=DT), torch.as_tensor(b, dtype=DT)
    ok = (a > 0) & (b > 0)
    r = torch.where(
        ok,
        (torch.where(ok, a, 1.0).log() - torch.where(ok, b, 1.0).log()).abs().exp(),
        torch.full_like(a, math.inf),
    )
    return float(torch.nan_to_num(r, nan=math.inf).max())


def _term_sample(gen, n):
    return {
        "logM": _u(gen, n, -3, 6) * math.log(10),
        "logS": _u(gen, n, -3, 8) * math.log(10),
        "logN": _u(gen, n, 0, math.log(4096)),
        "p": _u(gen, n, 0.01, 2.0),
        "logtau": _u(gen, n, -12, 6) * math.log(10),
    }


def _term_project(x):
    return {**x, "p": x["p"].clamp(1e-3, 2.0)}


def _closed_over_objective(logM, logS, logN, p, logtau):
    # c_p M^{1/(p+2)} S^{p/(p+2)} N^{(p+1)/(p+2)} / (sqrt(N M) tau^{-p/2} + S N tau): the package's
    # log_per_matrix_term (differentiable in p) over its threshold_objective
    closed = se.log_per_matrix_term(logM, logS, logN.exp(), p)
    obj = se.threshold_objective(logtau.exp(), logM.exp(), logS.exp(), logN.exp(), p)
    return (closed - obj.log()).exp()


def _threshold_attained(seed: int):
    gen = torch.Generator().manual_seed(seed)
    x = _term_sample(gen, 400)
    M, S, N = x["logM"].exp(), x["logS"].exp(), x["logN"].exp()
    closed = se.per_matrix_term(M, S, N, x["p"])
    num = se.numerical_threshold_minimum(M, S, N, x["p"])
    tau = se.optimal_threshold(M, S, N, x["p"])
    at = se.threshold_objective(tau, M, S, N, x["p"])
    worst = max(_two_sided(closed, num), _two_sided(at, closed))
    # a zero matrix (M = 0 is allowed): the objective is its residual S N tau and the infimum 0
    zero = torch.zeros_like(M)
    worst = max(worst, _two_sided(se.threshold_objective(tau, zero, S, N, x["p"]), S * N * tau))
    worst = max(worst, 1.0 + float(se.per_matrix_term(zero, S, N, x["p"]).abs().max()))
    return worst, 800


register(
    Claim(
        label="lem-sa-threshold-optimum",
        statement="inf_{tau>0} sqrt(N M) tau^{-p/2} + S N tau = c_p M^{1/(p+2)} S^{p/(p+2)} N^{(p+1)/(p+2)}, "
        "attained at tau* = (p sqrt(N M)/(2 S N))^{2/(p+2)}, for p in (0, 2]",
        chapter=CH,
        provenance="reconstructed",
        numeric=AllOf(
            seed_stride=7919,
            checks=(
                InequalityCheck(
                    _term_sample,
                    _closed_over_objective,
                    _term_project,
                    trials=2000,
                    starts=16,
                    steps=120,
                    lr=0.05,
                    search=("logtau", "p", "logS"),
                ),
                FunctionCheck(_threshold_attained),
            ),
        ),
        symbolic=_all(sym.verify_threshold_optimum, sym.verify_threshold_convex),
        rtol=1e-9,
        covers=(
            "genbound.schatten_entropy.log_per_matrix_term",
            "genbound.schatten_entropy.per_matrix_term",
            "genbound.schatten_entropy.threshold_objective",
            "genbound.schatten_entropy.optimal_threshold",
            "genbound.schatten_entropy.numerical_threshold_minimum",
            "genbound.schatten_entropy.log_c_p",
        ),
        mutants=(
            scaled(
                se,
                "per_matrix_term",
                0.5,
                name="term-halved",
                what="per_matrix_term returns c_p/2 M^{1/(p+2)} S^{p/(p+2)} N^{(p+1)/(p+2)}",
            ),
        ),
    )
)


def _cp_sample(gen, n):
    return {"p": _u(gen, n, 1e-6, 2.0)}


def _cp_ratio(p):
    # c_p / 2 <= 1 and 1 / c_p <= 1, with the package's c_p (differentiable in p); and the package's c_p
    # equals sympy's ((p+2)/p)(p/2)^{2/(p+2)} (two-sided, to 1e-12)
    c = se.c_p(p)
    want = torch.as_tensor(_sym_numeric()["c_p"](p.detach().numpy()), dtype=DT)
    off = 1 + 1e-9 * ((c.detach() - want).abs() / want / 1e-12 - 1).clamp(min=0)
    return torch.maximum(torch.maximum(c / 2, 1 / c), off)


register(
    Claim(
        label="lem-sa-cp-range",
        statement="1 <= c_p <= 2 for p in (0, 2]; c_p increases in p, c_p -> 1 as p -> 0 and c_2 = 2",
        chapter=CH,
        provenance="reconstructed",
        numeric=InequalityCheck(
            _cp_sample,
            _cp_ratio,
            lambda x: {"p": x["p"].clamp(1e-12, 2.0)},
            trials=2000,
            starts=16,
            steps=100,
            lr=0.05,
        ),
        symbolic=_all(sym.verify_cp_limits, sym.verify_cp_increasing),
        covers=(
            "genbound.schatten_entropy.c_p",
            "genbound.schatten_entropy.log_c_p",
        ),
        mutants=(
            scaled(se, "c_p", 2.0, name="cp-doubled", what="c_p returns 2 c_p (c_2 = 4 > 2)"),
        ),
    )
)


def _entropy_sample(gen, n):
    x = _term_sample(gen, n)
    return {
        **x,
        "logeps": _u(gen, n, -3, 0) * math.log(10),
        "logB": _u(gen, n, -1, 1) * math.log(10),
    }


def _entropy_ratio(logM, logS, logN, p, logtau, logeps, logB):
    # k_p Theta^2 eps^{-2p/(p+2)} / (M N tau^{-p} + (S N tau B / eps)^2): the package's entropy_log_covering
    # over its entropy_objective
    M, S, N, B, eps, tau = (v.exp() for v in (logM, logS, logN, logB, logeps, logtau))
    closed = se.entropy_log_covering(eps, M, S, N, p, B=B)
    obj = se.entropy_objective(eps, tau, M, S, N, p, B=B)
    return closed / obj


def _entropy_attained(seed: int):
    from scipy.integrate import quad

    gen = torch.Generator().manual_seed(seed)
    n = 200
    x = _entropy_sample(gen, n)
    M, S, N, B = x["logM"].exp(), x["logS"].exp(), x["logN"].exp(), x["logB"].exp()
    eps, p = x["logeps"].exp(), x["p"]
    closed = se.entropy_log_covering(eps, M, S, N, p, B=B)
    # minimise the two-piece objective over tau by golden section on log tau
    lo, hi = torch.full_like(M, -60.0), torch.full_like(M, 40.0)
    g = (math.sqrt(5) - 1) / 2

    def f(u):
        return se.entropy_objective(eps, u.exp(), M, S, N, p, B=B)

    for _ in range(250):
        c, d = hi - g * (hi - lo), lo + g * (hi - lo)
        left = f(c) < f(d)
        hi, lo = torch.where(left, d, hi), torch.where(left, lo, c)
    num = f((lo + hi) / 2)
    worst = _two_sided(closed, num)
    # Dudley integral: quadrature against the closed form on a few instances
    for i in range(12):
        Mi, Si, Ni, Bi, pi = (float(v[i]) for v in (M, S, N, B, p))
        Dd = 10 ** (float(x["logeps"][i]) / math.log(10) + 3)
        kp = float(se.c_p(torch.tensor(pi, dtype=DT)))
        theta = Mi ** (1 / (pi + 2)) * (Si * Bi) ** (pi / (pi + 2)) * Ni ** ((pi + 1) / (pi + 2))
        a = pi / (pi + 2)
        # substitute eps = D t: int_0^1 t^{-a} dt has an integrable singularity; quad handles it with weight
        val, _ = quad(lambda t: t ** (-a), 0, 1, limit=200)
        q = math.sqrt(kp) * theta * Dd ** (1 - a) * val
        cf = float(se.dudley_entropy_integral(Dd, Mi, Si, Ni, pi, B=Bi))
        worst = max(worst, _two_sided(torch.tensor(q), torch.tensor(cf)))
    return worst, n + 12


register(
    Claim(
        label="lem-sa-entropy-schatten",
        statement="if log N(eps) <= M N tau^{-p} + (S N tau B/eps)^2 for every tau > 0, then "
        "log N(eps) <= k_p Theta_p^2 eps^{-2p/(p+2)} with k_p = c_p, and "
        "int_0^D sqrt(log N) <= sqrt(k_p) Theta_p (p+2)/2 D^{2/(p+2)}",
        chapter=CH,
        provenance="reconstructed",
        numeric=AllOf(
            seed_stride=7919,
            checks=(
                InequalityCheck(
                    _entropy_sample,
                    _entropy_ratio,
                    _term_project,
                    trials=2000,
                    starts=16,
                    steps=120,
                    lr=0.05,
                    search=("logtau", "p"),
                ),
                FunctionCheck(_entropy_attained),
            ),
        ),
        symbolic=_all(
            sym.verify_entropy_optimum,
            sym.verify_cp_equals_kp,
            sym.verify_dudley_integral,
            sym.verify_entropy_exponent_range,
        ),
        rtol=1e-7,
        covers=(
            "genbound.schatten_entropy.entropy_log_covering",
            "genbound.schatten_entropy.entropy_objective",
            "genbound.schatten_entropy.dudley_entropy_integral",
            "genbound.schatten_entropy.c_p",
        ),
        mutants=(
            scaled(
                se,
                "entropy_log_covering",
                0.5,
                name="entropy-halved",
                what="entropy_log_covering returns k_p/2 Theta_p^2 eps^{-2p/(p+2)}",
            ),
        ),
    )
)

_WN, _WD, _WK = 10, 6, 256  # samples n, width N, Monte Carlo sign draws


def _width_signs():
    g = torch.Generator().manual_seed(12345)
    return (torch.randint(0, 2, (_WK, _WN, _WD), generator=g) * 2 - 1).to(DT)


_SIGNS = _width_signs()


def _width_sample(gen, n):
    X = torch.randn(n, _WN, _WD, generator=gen, dtype=DT)
    radius = torch.rand(n, _WN, 1, generator=gen, dtype=DT) ** 0.3
    return {"X": se.row_project(X / X.norm(dim=-1, keepdim=True) * radius * 1.0)}


def _width_ratio(X):
    # E_sigma ||X^T Sigma||_* / (N B sqrt(n)) with B = 1 (rows of X in the unit ball); tau cancels
    G = X.transpose(-1, -2).unsqueeze(1) @ _SIGNS  # (n, K, N, N)
    nuc = torch.linalg.svdvals(G).sum(-1).mean(-1)
    return nuc / _THIS.residual_width_bound(_WD, 1.0, _WN)


def residual_width_bound(N: int, B: float, n: int) -> float:
    """``N B sqrt(n)`` (per unit ``tau``): the right side of :prf:ref:`lem-sa-residual-width`."""
    return N * B * math.sqrt(n)


register(
    Claim(
        label="lem-sa-residual-width",
        statement="for rows ||x_i|| <= B: E sup_{||R||_2 <= tau} sum_i <sigma_i, x_i R> <= tau N B sqrt(n) "
        "(Rademacher vectors sigma_i in {-1,1}^N)",
        chapter=CH,
        provenance="reconstructed",
        numeric=InequalityCheck(
            _width_sample,
            _width_ratio,
            lambda x: {"X": se.row_project(x["X"])},
            trials=200,
            starts=6,
            steps=30,
            lr=0.05,
        ),
        covers=("genbound.schatten_entropy.row_project",),
        mutants=(
            scaled(
                _THIS, "residual_width_bound", 0.5, name="rhs-halved", what="tau N B sqrt(n) / 2"
            ),
        ),
    )
)


# =========================================================================== lemma-level values, two-sided


def _fn(expr, *names):
    syms = sorted(expr.free_symbols, key=lambda x: x.name)
    by = {x.name: x for x in syms}
    return sym.sp.lambdify([by[n] for n in names], expr, "numpy")


def _lemma_values_check(seed: int) -> tuple[float, int]:
    import scipy.special as ssp

    ex = _Excess()
    gen = torch.Generator().manual_seed(seed)
    n = 300
    p = torch.cat([torch.tensor([2.0, 1.0, 0.5], dtype=DT), _u(gen, n - 3, 0.01, 2.0)])
    M, Sc, Nn = (
        10 ** _u(gen, n, -3, 4),
        10 ** _u(gen, n, -3, 4),
        torch.randint(1, 800, (n,), generator=gen).to(DT),
    )
    tau, eps_, B, D = (
        10 ** _u(gen, n, -3, 2),
        10 ** _u(gen, n, -3, 0),
        10 ** _u(gen, n, -1, 1),
        10 ** _u(gen, n, -1, 1),
    )
    a = {k: v.numpy() for k, v in dict(p=p, M=M, S=Sc, N=Nn, tau=tau, eps=eps_, B=B, D=D).items()}
    ex.close(se.GELU_LIPSCHITZ, float(_sb.L_phi_two_decimals()), 1e-15, what="GELU_LIPSCHITZ")
    ex.close(se.c_p(p), _fn(sym.c_p(), "p")(a["p"]), 1e-12, what="c_p")
    ex.close(se.c_p(torch.tensor(0.0, dtype=DT)), 1.0, 1e-15, what="c_0")
    closed = _fn(sym.per_matrix_closed_form(), "M", "N", "S", "p")(a["M"], a["N"], a["S"], a["p"])
    ex.close(se.per_matrix_term(M, Sc, Nn, p), closed, 1e-12, what="per_matrix_term")
    ex.close(
        se.per_matrix_term(M, Sc, Nn, p, with_cp=False),
        closed / _fn(sym.c_p(), "p")(a["p"]),
        1e-12,
        what="per_matrix_term without c_p",
    )
    ex.close(
        se.log_per_matrix_term(M.log(), Sc.log(), Nn, p),
        np.log(closed),
        1e-12,
        scale=np.maximum(np.abs(np.log(closed)), 1.0),
        what="log_per_matrix_term",
    )
    ex.close(
        se.per_matrix_term(M.round() + 1, Sc, Nn, torch.zeros(n, dtype=DT)),
        np.sqrt((M.round() + 1).numpy() * a["N"]),
        1e-12,
        what="per_matrix_term p = 0",
    )
    ex.close(
        se.optimal_threshold(M, Sc, Nn, p),
        _fn(sym.optimal_threshold(), "M", "N", "S", "p")(a["M"], a["N"], a["S"], a["p"]),
        1e-12,
        what="optimal_threshold",
    )
    ex.close(
        se.optimal_threshold(M[:3], Sc[:3], Nn[:3], torch.zeros(3, dtype=DT)),
        np.zeros(3),
        1.0,
        scale=1.0,
        what="optimal_threshold p = 0",
    )
    ex.close(
        se.threshold_objective(tau, M, Sc, Nn, p),
        _fn(sym.threshold_objective(), "M", "N", "S", "p", "tau")(
            a["M"], a["N"], a["S"], a["p"], a["tau"]
        ),
        1e-12,
        what="threshold_objective",
    )
    ex.close(
        se.entropy_objective(eps_, tau, M, Sc, Nn, p, B=B),
        _fn(sym.entropy_objective(), "B", "M", "N", "S", "epsilon", "p", "tau")(
            a["B"], a["M"], a["N"], a["S"], a["eps"], a["p"], a["tau"]
        ),
        1e-12,
        what="entropy_objective",
    )
    ex.close(
        se.entropy_log_covering(eps_, M, Sc, Nn, p, B=B),
        _fn(sym.entropy_closed_form(), "B", "M", "N", "S", "epsilon", "p")(
            a["B"], a["M"], a["N"], a["S"], a["eps"], a["p"]
        ),
        1e-11,
        what="entropy_log_covering",
    )
    dud = (
        sym.sp.sqrt(sym.k_p())
        * sym.M ** (1 / (sym.p + 2))
        * (sym.S * sym.B) ** (sym.p / (sym.p + 2))
        * sym.N ** ((sym.p + 1) / (sym.p + 2))
        * (sym.p + 2)
        / 2
        * sym.D ** (2 / (sym.p + 2))
    )
    ex.holds(sym.verify_dudley_integral(), "sympy Dudley integral")
    ex.close(
        se.dudley_entropy_integral(D, M, Sc, Nn, p, B=B),
        _fn(dud, "B", "D", "M", "N", "S", "p")(a["B"], a["D"], a["M"], a["N"], a["S"], a["p"]),
        1e-11,
        what="dudley_entropy_integral",
    )
    # spectra-level functions against numpy on random and adversarial spectra
    ex_fn = {k: sym.sp.lambdify(_sb.p, v, "numpy") for k, v in _sb.term_exponents().items()}
    grc = _fn(sym.grid_rounding_cost(), "Lambda", "N", "k", "logS_abs", "m")
    grid = torch.arange(0, 13, dtype=DT) / 6
    for i in range(40):
        k = 2 + i % 9
        s = (10 ** _u(gen, k, -3, 2)).sort(descending=True).values
        if i % 4 == 1:
            s[k // 2 :] = 1e-14 * s[0]  # below the rank threshold
        if i % 4 == 2:
            s[:] = s[0]  # flat: ties
        sn = s.numpy()
        Nv = int(torch.randint(k, 500, (1,), generator=gen))
        scale = float(10 ** _u(gen, 1, -4, 4))
        thr = max(1e-10, float(np.finfo(np.float64).eps)) * k * max(sn.max(), 1.0)
        kept = sn[sn > thr]
        gn = grid.numpy()
        logM = np.array(
            [math.log(kept.size) if q == 0 else _np_logsumexp(q * np.log(kept)) for q in gn]
        )
        want = (
            ex_fn["M"](gn) * logM + ex_fn["S"](gn) * math.log(scale) + ex_fn["N"](gn) * math.log(Nv)
        )
        ex.close(
            se.log_term_grid(s, scale, Nv, grid),
            want,
            1e-12,
            scale=np.maximum(np.abs(want), 1.0),
            what="log_term_grid",
        )
        ex.close(
            se.log_term_grid(s, math.log(scale), Nv, grid, log_scale=True, with_cp=True),
            want + np.log(_fn(sym.c_p(), "p")(np.where(gn > 0, gn, 1.0))) * (gn > 0),
            1e-12,
            scale=np.maximum(np.abs(want), 1.0),
            what="log_term_grid with c_p",
        )
        pb, tb = se.best_p(s, scale, Nv, grid)
        j = int(np.argmin(want))
        ex.close(pb, gn[j], 1e-15, scale=1.0, what="best_p index")
        ex.close(tb, math.exp(want[j]), 1e-11, what="best_p value")
        cands = [
            math.sqrt(Nv * np.sum(kept > t)) + scale * Nv * t for t in np.concatenate([[0.0], kept])
        ]
        ex.close(
            se.spectral_count_minimum(s, scale, Nv),
            min(cands),
            1e-12,
            what="spectral_count_minimum",
        )
        ex.close(
            se.p0_scale_threshold(s, Nv),
            math.sqrt(kept.size / Nv) / kept.min(),
            1e-12,
            what="p0_scale_threshold",
        )
        mm = 1 + i % 7
        lam_ = float(np.max(np.abs(np.log(kept))))
        ex.close(
            se.grid_rounding_bound(s, scale, Nv, mm),
            grc(lam_, Nv, kept.size, abs(math.log(scale)), mm),
            1e-12,
            what="grid_rounding_bound",
        )
    # layer factors and sensitivities against sympy
    cq, cv = 10 ** _u(gen, n * 2, -2, 1).view(n, 2), 10 ** _u(gen, n * 2, -2, 1).view(n, 2)
    ci, co, lp = 10 ** _u(gen, n, -2, 1), 10 ** _u(gen, n, -2, 1), 0.5 + _u(gen, n, 0, 2)
    hl = _fn(sym.head_lipschitz(), "C_QK", "C_V")
    ex.close(se.head_lipschitz(cq, cv), hl(cq.numpy(), cv.numpy()), 1e-12, what="head_lipschitz")
    ll = _fn(sym.layer_lipschitz(2), "C_QK0", "C_QK1", "C_V0", "C_V1", "C_in", "C_out", "L_phi")
    for j in range(5):
        want = ll(
            cq[:, 0].numpy(),
            cq[:, 1].numpy(),
            cv[:, 0].numpy(),
            cv[:, 1].numpy(),
            ci.numpy(),
            co.numpy(),
            float(lp[j]),
        )
        ex.close(
            se.layer_lipschitz(cq, cv, ci, co, L_phi=float(lp[j])),
            want,
            1e-12,
            what="layer_lipschitz",
        )
        ex.close(
            se.log_layer_lipschitz(cq, cv, ci, co, L_phi=float(lp[j])),
            np.log(want),
            1e-12,
            scale=np.maximum(np.abs(np.log(want)), 1.0),
            what="log_layer_lipschitz",
        )
    S_ = _sym_numeric()
    for conv in ("derived", "authors"):
        g = se.sensitivities(cv[:, 0], ci, co, L_phi=float(lp[0]), convention=conv)
        for kk in _KINDS:
            want = (
                S_["gamma_derived"][kk](cv[:, 0].numpy(), ci.numpy(), co.numpy(), float(lp[0]))
                if conv == "derived"
                else S_["gamma_authors"][kk](cv[:, 0].numpy(), ci.numpy(), co.numpy())
            )
            ex.close(g[kk], np.broadcast_to(want, (n,)), 1e-12, what=f"sensitivities {conv} {kk}")
            if conv == "derived":
                ex.close(
                    se.gamma_derived(kk, cv[:, 0], ci, co, L_phi=float(lp[0])),
                    np.broadcast_to(want, (n,)),
                    1e-12,
                    what=f"gamma_derived {kk}",
                )
    f = 10 ** _u(gen, 5 * 7, -1, 1).view(7, 5)
    want = np.stack([np.concatenate([np.cumprod(row[::-1])[::-1][1:], [1.0]]) for row in f.numpy()])
    ex.close(se.layer_alphas(f), want, 1e-12, what="layer_alphas")
    ex.close(
        se.log_layer_alphas(f.log()),
        np.log(want),
        1e-12,
        scale=np.maximum(np.abs(np.log(want)), 1.0),
        what="log_layer_alphas",
    )
    # example spectra
    idx = np.arange(1, 51)
    ex.close(
        se.low_rank_spectrum(50, 7, 2.5),
        np.where(idx <= 7, 2.5, 0.0),
        1e-15,
        scale=1.0,
        what="low_rank",
    )
    ex.close(se.polynomial_spectrum(50, 1.3, 2.0), 2.0 * idx**-1.3, 1e-13, what="polynomial")
    ex.close(
        se.exponential_spectrum(50, 0.2, 3.0),
        3.0 * np.exp(-0.2 * (idx - 1)),
        1e-13,
        what="exponential",
    )
    ex.close(
        se.spike_floor_spectrum(50, 4, 1e-3, 2.0),
        np.where(idx <= 4, 2.0, 1e-3),
        1e-15,
        what="spike_floor",
    )
    # the default arguments the book states: sigma = sigma_1 = 1, B = 1, L_phi = 1.13
    ex.close(
        se.spike_floor_spectrum(50, 4, 1e-3),
        np.where(idx <= 4, 1.0, 1e-3),
        1e-15,
        what="spike_floor default",
    )
    ex.close(
        se.low_rank_spectrum(50, 7),
        np.where(idx <= 7, 1.0, 0.0),
        1e-15,
        scale=1.0,
        what="low_rank default",
    )
    ex.close(se.polynomial_spectrum(50, 1.3), idx**-1.3, 1e-13, what="polynomial default")
    ex.close(
        se.exponential_spectrum(50, 0.2),
        np.exp(-0.2 * (idx - 1)),
        1e-13,
        what="exponential default",
    )
    ex.close(
        se.entropy_log_covering(eps_, M, Sc, Nn, p),
        se.entropy_log_covering(eps_, M, Sc, Nn, p, B=1.0),
        1e-15,
        what="entropy B default",
    )
    ex.close(
        se.entropy_objective(eps_, tau, M, Sc, Nn, p),
        se.entropy_objective(eps_, tau, M, Sc, Nn, p, B=1.0),
        1e-15,
        what="entropy_objective B default",
    )
    ex.close(
        se.dudley_entropy_integral(D, M, Sc, Nn, p),
        se.dudley_entropy_integral(D, M, Sc, Nn, p, B=1.0),
        1e-15,
        what="dudley B default",
    )
    ex.close(
        se.layer_lipschitz(cq, cv, ci, co),
        se.layer_lipschitz(cq, cv, ci, co, L_phi=1.13),
        1e-15,
        what="L_phi default",
    )
    ex.close(
        se.gamma_derived("QK", cv[:, 0], ci, co),
        se.gamma_derived("QK", cv[:, 0], ci, co, L_phi=1.13),
        1e-15,
        what="gamma L_phi default",
    )
    # the reference model against a numpy forward (exact GELU via erf)
    X = _ball(gen, 3, _T, _N)
    lay = [
        (
            torch.randn(_H, _N, _N, generator=gen, dtype=DT),
            torch.randn(_H, _N, _N, generator=gen, dtype=DT) / 2,
            torch.randn(_N, _F, generator=gen, dtype=DT) / 2,
            torch.randn(_F, _N, generator=gen, dtype=DT) / 2,
        )
        for _ in range(2)
    ]

    def proj(Z):
        return Z / np.maximum(1.0, np.linalg.norm(Z, axis=-1, keepdims=True))

    def layer_np(Z, qk, v, mi, mo):
        heads = 0.0
        for h in range(qk.shape[0]):
            sc = Z @ qk[h] @ np.swapaxes(Z, -1, -2)
            w = np.exp(sc - sc.max(-1, keepdims=True))
            heads = heads + (w / w.sum(-1, keepdims=True)) @ Z @ v[h]
        U = proj(heads) @ mi
        return proj((U * 0.5 * (1 + ssp.erf(U / math.sqrt(2)))) @ mo)

    Z = X.numpy()
    for q, v, mi, mo in lay:
        Z = layer_np(Z, q.numpy(), v.numpy(), mi.numpy(), mo.numpy())
    ex.close(se.reference_transformer(X, lay), Z, 1e-12, scale=1.0, what="reference_transformer")
    big = torch.randn(5, 4, generator=gen, dtype=DT) * 3
    ex.close(se.row_project(big), proj(big.numpy()), 1e-15, scale=1.0, what="row_project")
    for bad in (
        lambda: se.c_p(torch.tensor(2.5, dtype=DT)),
        lambda: se.low_rank_spectrum(4, 5),
        lambda: se.gamma_derived("K", 1.0, 1.0, 1.0),
        lambda: se.sensitivities(1.0, 1.0, 1.0, convention="x"),
    ):
        ex.raises(bad, Exception, "bad input")
    return ex.ratio()


register(
    Claim(
        label="prop-sa-lemma-values",
        statement="genbound's lemma-level quantities of Part III (c_p, the per-matrix term and its threshold, the "
        "two-piece entropy and its Dudley integral, the grid terms and their minimiser, the spectral "
        "count, the p = 0 threshold, the grid-rounding bound, the layer factors, alphas and both "
        "conventions of gamma, the example spectra, the reference model) equal their sympy and numpy "
        "evaluations",
        chapter=CH,
        provenance="reconstructed",
        numeric=FunctionCheck(_lemma_values_check),
        rtol=EQ_RTOL,
        covers=tuple(
            "genbound.schatten_entropy." + x
            for x in (
                "c_p",
                "log_c_p",
                "per_matrix_term",
                "log_per_matrix_term",
                "optimal_threshold",
                "threshold_objective",
                "entropy_objective",
                "entropy_log_covering",
                "dudley_entropy_integral",
                "log_term_grid",
                "best_p",
                "spectral_count_minimum",
                "p0_scale_threshold",
                "grid_rounding_bound",
                "head_lipschitz",
                "layer_lipschitz",
                "log_layer_lipschitz",
                "sensitivities",
                "gamma_derived",
                "layer_alphas",
                "log_layer_alphas",
                "low_rank_spectrum",
                "polynomial_spectrum",
                "exponential_spectrum",
                "spike_floor_spectrum",
                "row_project",
                "attention_head",
                "reference_layer",
                "reference_transformer",
            )
        ),
        mutants=(
            replaced(
                se,
                "GAMMA_QK_FACTOR",
                lambda old: 2 * old,
                name="gamma-qk-doubled",
                what="gamma(QK) = 4 L_phi C_V C_in C_out (a loosened constant)",
            ),
            scaled(
                se,
                "log_term_grid",
                1.0 + 1e-6,
                name="grid-term-off",
                what="log T(p) off by 1e-6 relative",
            ),
            replaced(
                se,
                "row_project",
                lambda old: lambda Z: old(Z * 1.01) / 1.01,
                name="projection-radius",
                what="rows projected onto the ball of radius 1/1.01",
            ),
        ),
    )
)
