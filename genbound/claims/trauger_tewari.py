"""Claims of Part II: uniform covers, the sequence-length-independent bounds, and the log T baseline.

Chapters: ``book/part2/tt_covers.md``, ``single_layer.md``, ``multilayer_masked.md``,
``edelman_baseline.md``. Perturbation inequalities are checked by random instances plus projected
gradient ascent on the ratio (weights, perturbations and sequences all move); the bound side is computed
with :func:`genbound.bounds.trauger_tewari.sensitivities_raw`, the same code the bound functions use.
:func:`uniform_T_ratios` runs the public bound functions on :class:`genbound.nets.ReferenceTransformer`
models for sequence lengths up to 1024.
"""

from __future__ import annotations

import math
import sys
from functools import lru_cache

import torch

from .. import covering as cov
from ..bounds import edelman as ed_mod
from ..bounds import trauger_tewari as tt_mod
from ..bounds.trauger_tewari import LayerRadii, layer_radii_from_model
from ..nets import ReferenceTransformer, augment, forward_effective
from ..symbolic import trauger_tewari as sym
from . import AllOf, Claim, FunctionCheck, InequalityCheck, register, register_cache, replaced, scaled


CH_COVERS = "book/part2/tt_covers.md"
CH_SINGLE = "book/part2/single_layer.md"
CH_MULTI = "book/part2/multilayer_masked.md"
CH_EDELMAN = "book/part2/edelman_baseline.md"
F64 = torch.float64
_THIS = sys.modules[__name__]  # mutants patch the right-hand-side functions defined here


def _sensitivities_times(part: str, factor: float):
    """Mutant maker: ``sensitivities_raw`` with every ``rho`` (``part="rho"``) or every layer Lipschitz
    constant (``part="lipschitz"``) multiplied by ``factor``."""
    def make(old):
        def new(*args, **kwargs):
            rho, Bs, lips = old(*args, **kwargs)
            if part == "rho":
                rho = {k: v * factor for k, v in rho.items()}
            else:
                lips = [v * factor for v in lips]
            return rho, Bs, lips
        return new
    return make


RHO_HALVED = replaced(tt_mod, "sensitivities_raw", _sensitivities_times("rho", 0.5), name="rho-halved",
                      what="every sensitivity rho_j of the perturbation bound halved")




def _op(M: torch.Tensor) -> torch.Tensor:
    return torch.linalg.matrix_norm(M, ord=2)


def _opf(M: torch.Tensor) -> float:
    return float(_op(M.detach()))


def _randn(gen, *shape, scale=1.0):
    return scale * torch.randn(*shape, generator=gen, dtype=F64)


def _scales(gen, n, *tail, lo=-1.0, hi=0.7):
    """Per-instance log-uniform scales in ``[10^lo, 10^hi]`` broadcastable to ``(n, *tail)``."""
    return 10 ** (lo + (hi - lo) * torch.rand(n, *([1] * len(tail)), generator=gen, dtype=F64))


# ---------------------------------------------------------------------------------------------- chapter 1
def _norm_sample(gen, n):
    A = _randn(gen, n, 6, 4)
    kind = torch.randint(0, 4, (n, 1, 1), generator=gen)
    flat = torch.sign(A)                                     # equal magnitudes: tight last link
    rank1 = _randn(gen, n, 6, 1) @ _randn(gen, n, 1, 4)      # tight first link
    col = A * (torch.arange(4) == 0)                          # one output unit
    A = torch.where(kind == 0, A, torch.where(kind == 1, flat, torch.where(kind == 2, rank1, col)))
    return {"A": A}


def _norm_ratio(A):
    op = torch.linalg.matrix_norm(A, ord=2)
    fro = torch.linalg.matrix_norm(A, ord="fro")
    l21 = torch.linalg.vector_norm(A, dim=-2).sum(-1)
    l11 = A.abs().sum((-2, -1))
    links = torch.stack([op / fro, fro / l21, l21 / l11, l11 / (_THIS.norm_price_factor(A.shape[-2]) * l21)], -1)
    return links.amax(-1)


def norm_price_factor(d_in: int) -> float:
    """``sqrt(d_in)``: the price of the last link ``||A||_{1,1} <= sqrt(d_in) ||A||_{2,1}`` (Cauchy-Schwarz)."""
    return math.sqrt(d_in)


register(Claim(
    label="lem-tt-norm-price",
    statement="||A||_op <= ||A||_F <= ||A||_{2,1} <= ||A||_{1,1} <= sqrt(d_in) ||A||_{2,1} (column convention)",
    chapter=CH_COVERS, provenance="standard",
    numeric=InequalityCheck(_norm_sample, _norm_ratio, trials=2000, starts=8, steps=60),
    mutants=(scaled(_THIS, "norm_price_factor", 0.5, name="sqrt-din-halved",
                    what="||A||_{1,1} <= sqrt(d_in)/2 ||A||_{2,1}"),),
))


def maurey_draw(W: torch.Tensor, B: torch.Tensor, K: int, draws: int, gen: torch.Generator) -> torch.Tensor:
    """Maurey's empirical method for the ``||.||_{1,1}`` ball of radius ``B`` (batched over ``W``).

    ``W = sum_ij |W_ij|/B * (B sign(W_ij) E_ij) + (1 - ||W||_{1,1}/B) * 0``, the zero written as
    ``(+B E_11 - B E_11)/2``. Draws ``K`` atoms i.i.d. from these weights, ``draws`` times, and returns
    all averages, shape ``(draws, *W.shape)``; every average lies in the ball.
    """
    n = W.shape[0]
    flat = W.reshape(n, -1)
    rest = (1 - flat.abs().sum(-1) / B).clamp(min=0)
    probs = torch.cat([flat.abs() / B[:, None], rest[:, None] / 2, rest[:, None] / 2], -1)
    idx = torch.multinomial(probs.repeat(draws, 1), K, replacement=True, generator=gen)   # (draws*n, K)
    D = flat.shape[-1]
    sign = torch.cat([torch.sign(flat), torch.ones(n, 1, dtype=F64), -torch.ones(n, 1, dtype=F64)], -1)
    sign = sign.repeat(draws, 1)
    pos = torch.where(idx >= D, torch.zeros_like(idx), idx)
    val = torch.gather(sign, 1, idx) * B.repeat(draws)[:, None] / K
    out = torch.zeros(draws * n, D, dtype=F64).scatter_add_(1, pos, val)
    return out.reshape(draws, *W.shape)


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
        R = 1.3 ** input_power
        for K0 in (1, 3, 10, 40):
            n = 48
            W = _randn(gen, n, *shape_fn())
            kind = torch.arange(n) % 3
            W = torch.where((kind == 1).reshape(n, *[1] * (W.ndim - 1)), torch.sign(W), W)   # flat: worst case
            sparse = (torch.rand(W.shape, generator=gen, dtype=F64) < 0.2).to(F64)
            W = torch.where((kind == 2).reshape(n, *[1] * (W.ndim - 1)), W * sparse, W)
            l11 = W.abs().reshape(n, -1).sum(-1)
            B = l11 * (1 + (torch.arange(n) % 2) * torch.rand(n, generator=gen, dtype=F64))  # tight or slack
            B = torch.where(B > 0, B, torch.ones_like(B))
            dims = W.shape[1:] if W.ndim == 3 else (W.shape[1], 1)
            Ks, eps = [], []
            for b in B.tolist():
                e = b * R / math.sqrt(K0)
                Ks.append(max(1, round(cov.maurey_log_cover(b, R, e, *dims) / math.log(2 * dims[0] * dims[1]))))
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


COVER_HALVED = scaled(cov, "maurey_log_cover", 0.5, name="cover-halved",
                      what="maurey_log_cover returns half of ceil(B^2 R^2/eps^2) log(2dk): too few atoms")


register(Claim(
    label="lem-tt-cover-readout",
    statement="{h -> w.h : ||w||_1 <= B_w} on ||h||_2 <= R: log N_unif(eps) <= ceil(R^2 B_w^2/eps^2) log(2k)",
    chapter=CH_COVERS, provenance="reconstructed",
    numeric=FunctionCheck(_maurey_ratio_fn(lambda: (7,), lambda D: torch.linalg.vector_norm(D, dim=-1))),
    mutants=(COVER_HALVED,),
))

register(Claim(
    label="lem-tt-cover-value",
    statement="{x -> W^T x : ||W||_{1,1} <= B} on ||x||_2 <= B_X, l2 outputs: "
              "log N_unif(eps) <= ceil(B_X^2 B^2/eps^2) log(2 d k), certified by ||W - W_hat||_op <= eps/B_X",
    chapter=CH_COVERS, provenance="reconstructed",
    numeric=FunctionCheck(_maurey_ratio_fn(lambda: (5, 4), _op)),
    mutants=(COVER_HALVED,),
))


def _qk_sup(D):
    # sup_{||x||,||z|| <= 1} x^T D z = ||D||_op, attained at the top singular pair: evaluate it there
    U, S, Vh = torch.linalg.svd(D)
    return torch.einsum("...i,...ij,...j->...", U[..., :, 0], D, Vh[..., 0, :]).abs()


register(Claim(
    label="lem-tt-cover-qk",
    statement="{(x, z) -> x^T W z : ||W||_{1,1} <= B_QK} on ||x||_2, ||z||_2 <= B_X: "
              "log N_unif(eps) <= ceil(B_X^4 B_QK^2/eps^2) log(2 d^2), uniformly over all positions and T",
    chapter=CH_COVERS, provenance="reconstructed",
    numeric=FunctionCheck(_maurey_ratio_fn(lambda: (5, 5), _qk_sup, input_power=2)),
    mutants=(COVER_HALVED,),
))


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


register(Claim(
    label="lem-tt-cover-extreme",
    statement="sup_{||x||_1 <= B_X} ||(W - W_hat)^T x||_inf = B_X max_ij |W - W_hat|_ij, so a uniform cover on the "
              "l1 ball is a cover at the d k coordinates (then Zhang's bound with n = d k)",
    chapter=CH_COVERS, provenance="reconstructed",
    numeric=InequalityCheck(_extreme_sample, _extreme_ratio, _extreme_project, trials=2000, starts=16, steps=80,
                            search=("D", "x")),
    mutants=(scaled(_THIS, "extreme_point_bound", 0.5, name="rhs-halved",
                    what="sup over the l1 ball taken as B_X max |W - W_hat| / 2"),),
))


# ---------------------------------------------------------------------------- perturbation machinery
def _net_sample(gen, n, *, L, H, d, T, K, dense, bias, perturb=0.3):
    """Effective maps of a network and of a perturbed copy, plus sequences of length ``T``."""
    din = d + (1 if bias else 0)
    s = _scales(gen, n, 1, 1, 1, 1, lo=-0.7, hi=0.3)
    p = {"QK": _randn(gen, n, L, H, din, din) * s, "V": _randn(gen, n, L, H, din, d) * s / math.sqrt(d),
         "w": _randn(gen, n, din, K) / math.sqrt(d)}
    if dense:
        p["C"] = _randn(gen, n, L, din, d) / math.sqrt(d)
    eps = _scales(gen, n, 1, 1, 1, 1, lo=-3, hi=0) * perturb
    for k in list(p):
        e = eps if p[k].ndim == 5 else eps[..., 0] if p[k].ndim == 4 else eps[..., 0, 0]
        p[k + "_hat"] = p[k] + e * _randn(gen, *p[k].shape)
    X = _randn(gen, n, T, d) * _scales(gen, n, 1, 1, lo=-0.5, hi=0.5)
    # some sequences with repeated tokens (peaked or flat attention)
    rep = (torch.arange(n) % 4 == 0)[:, None, None]
    p["X"] = torch.where(rep, X[:, :1].expand_as(X) + 0.01 * X, X)
    return p


def _perturbation_ratio(p, *, bias, row_norm, positions="cls", act="relu", kappa=1.0):
    """``||f - f_hat||_2 / sum_j rho_j ||W_j - W_hat_j||_op`` for the hypotheses of
    :prf:ref:`lem-tt-multilayer-perturbation` (spectral radii from the weights; proper ones take the max
    with the cover element's norm)."""
    QK, V, w, X = p["QK"], p["V"], p["w"], p["X"]
    C = p.get("C")
    L, H = QK.shape[1], QK.shape[2]
    f = forward_effective(QK, V, C, w, X, bias=bias, activation=act, row_norm=row_norm, all_rows=True)
    fh = forward_effective(p["QK_hat"], p["V_hat"], p.get("C_hat"), p["w_hat"], X, bias=bias, activation=act,
                           row_norm=row_norm, all_rows=True)
    out = torch.einsum("bti,bik->btk", augment(f, bias), w)
    outh = torch.einsum("bti,bik->btk", augment(fh, bias), p["w_hat"])
    diff = torch.linalg.vector_norm(out - outh, dim=-1)             # (n, T)
    lhs = diff[:, -1] if positions == "cls" else diff.amax(-1)
    B_X = torch.linalg.vector_norm(X, dim=-1).amax(-1)
    spec, eta = [], {}
    for l in range(L):
        S_QK = [_op(QK[:, l, h]) for h in range(H)]
        S_V = [torch.maximum(_op(V[:, l, h]), _op(p["V_hat"][:, l, h])) if (not row_norm and l < L - 1)
               else _op(V[:, l, h]) for h in range(H)]
        S_C = None if C is None else torch.maximum(_op(C[:, l]), _op(p["C_hat"][:, l]))
        spec.append((S_QK, S_V, S_C))
        for h in range(H):
            eta[f"QK[{l + 1},{h + 1}]"] = _op(QK[:, l, h] - p["QK_hat"][:, l, h])
            eta[f"V[{l + 1},{h + 1}]"] = _op(V[:, l, h] - p["V_hat"][:, l, h])
        if C is not None:
            eta[f"C[{l + 1}]"] = _op(C[:, l] - p["C_hat"][:, l])
    eta["w"] = _op(w - p["w_hat"])
    B_w = _op(p["w_hat"])
    rho, _, _ = tt_mod.sensitivities_raw(spec, B_X=B_X, B_w=B_w, kappa=kappa, bias=bias, row_norm=row_norm)
    bound = sum(rho[k] * eta[k] for k in rho)
    return lhs / bound


SINGLE_LONG_T = 1024


def _single_sample(gen, n):
    p = _net_sample(gen, n, L=1, H=2, d=4, T=12, K=1, dense=False, bias=False)
    X = _randn(gen, n, SINGLE_LONG_T, 4) * _scales(gen, n, 1, 1, lo=-0.5, hi=0.5)
    rep = (torch.arange(n) % 3 == 0)[:, None, None]          # long runs of one token plus a few others
    p["X_long"] = torch.where(rep, X[:, :1].expand_as(X) + 0.01 * X, X)
    return p


def cls_forward(QK, V, w, X, act=torch.relu):
    """One layer read at the last row only, ``O(T d^2)``: ``sigma(sum_h softmax(x_cls QK_h X^T) X V_h) w``
    (no dense map, no bias); equal to :func:`genbound.nets.forward_effective` for that class (a test checks)."""
    x = X[:, -1]                                                      # (n, d)
    s = torch.einsum("ni,nhij,ntj->nht", x, QK[:, 0], X)
    a = torch.softmax(s, dim=-1)
    u = torch.einsum("nht,nti,nhid->nd", a, X, V[:, 0])
    return torch.einsum("nd,ndk->nk", act(u), w)


def _single_ratio(**p):
    """Worst of a short sequence (T = 12) and a long one (T = 1024), both searched adversarially."""
    short = _perturbation_ratio(p, bias=False, row_norm=False)
    X = p["X_long"]
    lhs = torch.linalg.vector_norm(cls_forward(p["QK"], p["V"], p["w"], X)
                                   - cls_forward(p["QK_hat"], p["V_hat"], p["w_hat"], X), dim=-1)
    H = p["QK"].shape[2]
    spec = [([_op(p["QK"][:, 0, h]) for h in range(H)], [_op(p["V"][:, 0, h]) for h in range(H)], None)]
    B_X = torch.linalg.vector_norm(X, dim=-1).amax(-1)
    rho, _, _ = tt_mod.sensitivities_raw(spec, B_X=B_X, B_w=_op(p["w_hat"]))
    bound = rho["w"] * _op(p["w"] - p["w_hat"])
    for h in range(H):
        bound = bound + rho[f"QK[1,{h + 1}]"] * _op(p["QK"][:, 0, h] - p["QK_hat"][:, 0, h])
        bound = bound + rho[f"V[1,{h + 1}]"] * _op(p["V"][:, 0, h] - p["V_hat"][:, 0, h])
    return torch.maximum(short, lhs / bound)


register(Claim(
    label="lem-tt-single-perturbation",
    statement="one layer, H heads, no dense map: |f(X) - f_hat(X)| <= rho_w ||w - w_hat|| + sum_h rho_V ||V_h - V_hat_h||_op "
              "+ sum_h rho_QK^h ||W_QK^h - W_hat_QK^h||_op with rho_w = L_sigma B_X sum_h S_V^h, rho_V = B_w L_sigma B_X, "
              "rho_QK^h = B_w L_sigma S_V^h kappa B_X^3 (kappa = 1), for every X of every length (checked at T = 12 "
              "and T = 1024)",
    chapter=CH_SINGLE, provenance="reconstructed",
    numeric=InequalityCheck(_single_sample, _single_ratio, trials=200, starts=6, steps=30, lr=0.03),
    symbolic=sym.verify_single_layer_factorisation,
    mutants=(RHO_HALVED,),
))


def _lip_sample(gen, n):
    d, T = 4, 10
    p = _net_sample(gen, n, L=1, H=2, d=d, T=T, K=1, dense=True, bias=True)
    p["Z2"] = p["X"] + _scales(gen, n, 1, 1, lo=-3, hi=0) * _randn(gen, n, T, d)
    return {k: p[k] for k in ("QK", "V", "C", "X", "Z2")}


def _lip_ratio(QK, V, C, X, Z2):
    w = torch.zeros(X.shape[0], X.shape[-1] + 1, 1, dtype=F64)
    outs = [forward_effective(QK, V, C, w, Z, bias=True, row_norm=True, all_rows=True) for Z in (X, Z2)]
    lhs = torch.linalg.vector_norm(outs[0] - outs[1], dim=-1).amax(-1)
    B = torch.maximum(torch.linalg.vector_norm(X, dim=-1).amax(-1), torch.linalg.vector_norm(Z2, dim=-1).amax(-1))
    H = QK.shape[2]
    spec = [([_op(QK[:, 0, h]) for h in range(H)], [_op(V[:, 0, h]) for h in range(H)], _op(C[:, 0]))]
    _, _, lips = tt_mod.sensitivities_raw(spec, B_X=B, B_w=1.0, bias=True, row_norm=True)
    return lhs / (lips[0] * torch.linalg.vector_norm(X - Z2, dim=-1).amax(-1))


register(Claim(
    label="lem-tt-layer-lipschitz",
    statement="one layer (H heads, sigma, dense map, biases, Pi) is Lipschitz in the max-row norm on rows of norm <= B "
              "with constant L_sigma S_C sum_h S_V^h (1 + 2 kappa (B^2+1) S_QK^h), independent of T",
    chapter=CH_MULTI, provenance="reconstructed",
    numeric=InequalityCheck(_lip_sample, _lip_ratio, trials=400, starts=8, steps=40, lr=0.05),
    mutants=(replaced(tt_mod, "sensitivities_raw", _sensitivities_times("lipschitz", 0.5),
                      name="lipschitz-halved", what="every layer's Lipschitz constant halved"),),
))


def _multi_sample(gen, n):
    return _net_sample(gen, n, L=2, H=2, d=3, T=6, K=2, dense=True, bias=True)


def _multi_ratio(**p):
    return torch.maximum(_perturbation_ratio(p, bias=True, row_norm=False),
                         _perturbation_ratio(p, bias=True, row_norm=True))


register(Claim(
    label="lem-tt-multilayer-perturbation",
    statement="L layers: ||f(X) - f_hat(X)|| <= sum_j rho_j ||W_j - W_hat_j||_op with the unrolled sensitivities "
              "(products of per-layer Lipschitz constants), for every X of every length; with and without Pi",
    chapter=CH_MULTI, provenance="reconstructed",
    numeric=InequalityCheck(_multi_sample, _multi_ratio, trials=300, starts=6, steps=30, lr=0.03),
    symbolic=lambda: sym.verify_unrolling(2) and sym.verify_unrolling(3, 1, dense=False, bias=False, row_norm=True),
    mutants=(RHO_HALVED,),
))


def _masked_sample(gen, n):
    p = _net_sample(gen, n, L=2, H=1, d=3, T=6, K=4, dense=True, bias=False)
    p["y"] = torch.randint(0, 4, (n,), generator=gen)
    return p


def _margin(v, y):
    """Multiclass margin ``v_y - max_{i != y} v_i`` for ``v``: ``(n, T, K)``, ``y``: ``(n,)``."""
    idx = y[:, None, None].expand(v.shape[0], v.shape[1], 1)
    vy = v.gather(-1, idx)[..., 0]
    mask = torch.nn.functional.one_hot(y, v.shape[-1]).bool()[:, None, :].expand_as(v)
    return vy - v.masked_fill(mask, -float("inf")).amax(-1)


def _masked_ratio(y, **p):
    r1 = _perturbation_ratio(p, bias=False, row_norm=True, positions="all")
    f = forward_effective(p["QK"], p["V"], p["C"], p["w"], p["X"], row_norm=True, all_rows=True) @ p["w"]
    fh = forward_effective(p["QK_hat"], p["V_hat"], p["C_hat"], p["w_hat"], p["X"], row_norm=True,
                           all_rows=True) @ p["w_hat"]
    r2 = ((_margin(f, y) - _margin(fh, y)).abs() / (float(sym.MARGIN_LIPSCHITZ_MULTICLASS) * (f - fh).abs().amax(-1))
          .clamp(min=1e-300)).amax(-1)
    return torch.maximum(r1, r2)


register(Claim(
    label="thm-tt-masked",
    statement="masked-token prediction at any (random) position j with readout W_out (d x V): the perturbation bound of "
              "the multi-layer class holds at every row, and the multiclass margin is 2-Lipschitz in l_inf, so the "
              "multi-layer bound holds with (B_w, log 2d) -> (B_out, log 2dV) and loss constant 2/gamma; no T",
    chapter=CH_MULTI, provenance="reconstructed",
    numeric=InequalityCheck(_masked_sample, _masked_ratio, trials=300, starts=6, steps=30, lr=0.03,
                            search=("QK", "V", "C", "w", "QK_hat", "V_hat", "C_hat", "w_hat", "X")),
    mutants=(scaled(sym, "MARGIN_LIPSCHITZ_MULTICLASS", 0.5, name="margin-lipschitz-halved",
                    what="the multiclass margin taken as 1-Lipschitz in l_inf (it is 2-Lipschitz)"),),
))


# ------------------------------------------------------------------------------ covering theorems
def _constructive_cover_ratio(seed, *, L, H, dense, bias, row_norm, d=4, out_dim=1, n_models=6):
    """Build the cover element of :prf:ref:`thm-tt-multilayer` for random networks and check (a) the
    certificate ``sum rho_j ||W_j - W_hat_j||_op <= eps``, (b) ``|f - f_hat| <= eps`` on random sequences of
    several lengths, (c) ``sum_j K_j log_atoms_j <= A/eps^2 + Lambda``. Returns ``(worst ratio, trials)``."""
    gen = torch.Generator().manual_seed(seed)
    worst, trials = 0.0, 0
    for i in range(n_models):
        net = ReferenceTransformer(d, n_layers=L, n_heads=H, dense=dense, bias=bias, row_norm=row_norm,
                                   out_dim=out_dim, seed=seed * 100 + i)
        with torch.no_grad():
            for prm in net.parameters():
                prm.add_(0.3 * torch.randn(prm.shape, generator=gen, dtype=F64))
        with torch.no_grad():
            E = net.effective_weights()
        layers = layer_radii_from_model(net)
        B_X = 1.5
        B_w = float(E.w.detach().abs().sum())
        cover = tt_mod.tt_log_cover(layers, B_X=B_X, B_w=B_w, d=d, out_dim=out_dim, bias=bias, row_norm=row_norm)
        sens = tt_mod.tt_sensitivities(layers, B_X=B_X, B_w=B_w, bias=bias, row_norm=row_norm)
        # choose eps so that the largest Maurey atom count is between 4 and 2000 (log-uniform)
        k0 = max(cover.atoms_per_term(1.0).values())
        target = float(10 ** (0.6 + 2.7 * torch.rand(1, generator=gen)))
        eps = math.sqrt(max(k0, 1) / target)
        K = cover.atoms_per_term(eps)
        mats = {"w": E.w}
        for l in range(L):
            for h in range(H):
                mats[f"QK[{l + 1},{h + 1}]"] = E.QK[l, h]
                mats[f"V[{l + 1},{h + 1}]"] = E.V[l, h]
            if dense:
                mats[f"C[{l + 1}]"] = E.C[l]
        rad = {t.name: t.radius for t in cover.terms}
        fac = {t.name: t.factor for t in cover.terms}
        hats, cert = {}, 0.0
        for name, W in mats.items():
            W = W.detach()
            B = torch.tensor([max(rad[name], 1e-300)], dtype=F64)
            cands = maurey_draw(W[None], B, K[name], 8, gen)[:, 0]
            errs = _op(W[None] - cands)
            Wh = cands[int(errs.argmin())]
            if fac[name] == 2.0:          # proper cover: shrink the centre back into the spectral ball
                S = _opf(W)
                Wh = Wh * min(1.0, S / max(_opf(Wh), 1e-300))
            hats[name] = Wh
            cert += float(sens.rho[name]) * _opf(W - Wh)
        # (b): the network with the cover element's maps, on sequences of several lengths
        QKh = torch.stack([torch.stack([hats[f"QK[{l + 1},{h + 1}]"] for h in range(H)]) for l in range(L)])
        Vh = torch.stack([torch.stack([hats[f"V[{l + 1},{h + 1}]"] for h in range(H)]) for l in range(L)])
        Ch = torch.stack([hats[f"C[{l + 1}]"] for l in range(L)]) if dense else None
        gap = 0.0
        for T in (1, 7, 64):
            X = torch.randn(4, T, d, generator=gen, dtype=F64)
            X = B_X * X / torch.linalg.vector_norm(X, dim=-1, keepdim=True).clamp(min=1.0) * 0.999
            ex = lambda t: None if t is None else t.expand(4, *t.shape)
            with torch.no_grad():
                f = forward_effective(ex(E.QK), ex(E.V), ex(E.C), ex(E.w), X, bias=bias, row_norm=row_norm)
                fh = forward_effective(ex(QKh), ex(Vh), ex(Ch), ex(hats["w"]), X, bias=bias, row_norm=row_norm)
            gap = max(gap, float(torch.linalg.vector_norm(f - fh, dim=-1).max()))
        count = sum(K[t.name] * t.log_atoms for t in cover.terms)
        worst = max(worst, cert / eps, gap / eps, count / cover(eps))
        trials += 1
    return worst, trials


COVER_A_HALVED = scaled(tt_mod, "allocation_value", 0.5, name="complexity-halved",
                        what="the allocated complexity A = (sum_j c_j^{2/3})^3 halved in log N <= A/eps^2 + Lambda")


register(Claim(
    label="thm-tt-single-layer",
    statement="one layer, no dense map: log N_unif(F, eps) <= C_1^2/eps^2 + Lambda_Sigma with "
              "C_1 = [sum_j (rho_j B_j sqrt(Lambda_j))^{2/3}]^{3/2} (no T, no m); then Dudley and the Rademacher "
              "generalization bound",
    chapter=CH_SINGLE, provenance="reconstructed",
    numeric=FunctionCheck(lambda s: _constructive_cover_ratio(s, L=1, H=2, dense=False, bias=False, row_norm=False)),
    symbolic=sym.verify_single_layer_factorisation,
    mutants=(COVER_A_HALVED,),
))

register(Claim(
    label="thm-tt-multilayer",
    statement="L layers (dense maps, optional Pi, biases): log N_unif(F, eps) <= [sum_j (f_j rho_j B_j sqrt(Lambda_j))^{2/3}]^3"
              "/eps^2 + Lambda_Sigma with proper-cover factors f_j in {1, 2}; no T, no m",
    chapter=CH_MULTI, provenance="reconstructed",
    numeric=FunctionCheck(lambda s: max(
        _constructive_cover_ratio(s, L=2, H=2, dense=True, bias=True, row_norm=False, n_models=6),
        _constructive_cover_ratio(s + 1, L=2, H=1, dense=True, bias=False, row_norm=True, n_models=6))),
    symbolic=lambda: sym.verify_unrolling(2, 2, dense=True, bias=True, row_norm=False),
    mutants=(COVER_A_HALVED,),
))


# --------------------------------------------------------------------------- uniform over T
UNIFORM_T_LENGTHS = (1, 8, 128, 1024)
#: ``(steps, learning rate, longest T)`` of the adversarial ascent on the sequences in prop-tt-uniform-T (a
#: backward pass through two layers at T = 1024 costs about 7 s a step on two cores: that length is checked
#: on the random families only)
UNIFORM_T_ASCENT = (8, 0.3, 128)


def uniform_T_ratios(seed: int = 0, *, lengths=UNIFORM_T_LENGTHS, n_models: int = 4, batch: int = 3,
                     ascent_steps: int = UNIFORM_T_ASCENT[0], ascent_lr: float = UNIFORM_T_ASCENT[1],
                     ascent_max_T: int = UNIFORM_T_ASCENT[2]) -> dict[int, float]:
    """Worst ratio ``|f(X) - f_hat(X)| / bound`` per sequence length ``T``, where ``bound`` is
    :func:`genbound.bounds.trauger_tewari.tt_sensitivities` (no ``T`` argument) applied to the norms of random
    :class:`~genbound.nets.ReferenceTransformer` models and of perturbed copies.

    Sequences: Gaussian rows, repeated tokens with one outlier, and rows on the sphere of radius ``B_X``,
    then ``ascent_steps`` steps of projected gradient ascent (Adam, ``ascent_lr``) on the sequences (rows
    kept in the ``B_X`` ball) at every ``T <= ascent_max_T`` (:data:`UNIFORM_T_ASCENT`); longer sequences
    are checked on the random families only. Cached per arguments; returns a new dict each call.
    """
    return dict(_uniform_T_ratios(int(seed), tuple(int(T) for T in lengths), int(n_models), int(batch),
                                  int(ascent_steps), float(ascent_lr), int(ascent_max_T)))


@register_cache
@lru_cache(maxsize=8)
def _uniform_T_ratios(seed, lengths, n_models, batch, ascent_steps, ascent_lr, ascent_max_T):
    gen = torch.Generator().manual_seed(seed)
    out = {int(T): 0.0 for T in lengths}
    configs = [dict(n_layers=1, n_heads=2, bias=True), dict(n_layers=2, n_heads=2, row_norm=True, bias=True),
               dict(n_layers=2, n_heads=1, dense=False), dict(n_layers=1, n_heads=2, dense=True, out_dim=2)]
    for i in range(n_models):
        kw = configs[i % len(configs)]
        net = ReferenceTransformer(6, seed=seed * 1000 + i, **kw)
        hat = ReferenceTransformer(6, seed=seed * 1000 + i, **kw)
        with torch.no_grad():
            for (name, p), q in zip(net.named_parameters(), hat.parameters()):
                p.mul_(1.5)
                # perturb everything, only the readout, or only the first layer's attention maps
                move = (i % 3 == 0) or (i % 3 == 1 and name in ("w", "b_w")) or (i % 3 == 2 and "layers.0.W_" in name)
                q.copy_(p + (0.05 if move else 0.0) * torch.randn(p.shape, generator=gen, dtype=F64))
        with torch.no_grad():
            En, Eh = net.effective_weights(), hat.effective_weights()
        rn, rh = layer_radii_from_model(net), layer_radii_from_model(hat)
        # both networks in one class: radii = max of the two
        layers = [LayerRadii(tuple(map(max, a.B_QK, b.B_QK)), tuple(map(max, a.S_QK, b.S_QK)),
                             tuple(map(max, a.B_V, b.B_V)), tuple(map(max, a.S_V, b.S_V)),
                             None if a.B_C is None else max(a.B_C, b.B_C),
                             None if a.S_C is None else max(a.S_C, b.S_C)) for a, b in zip(rn, rh)]
        B_X = 2.0
        B_w = max(_opf(En.w), _opf(Eh.w))
        sens = tt_mod.tt_sensitivities(layers, B_X=B_X, B_w=B_w, bias=net.bias, row_norm=net.row_norm)
        eta = {"w": _opf(En.w - Eh.w)}
        for l in range(net.n_layers):
            for h in range(net.n_heads):
                eta[f"QK[{l + 1},{h + 1}]"] = _opf(En.QK[l, h] - Eh.QK[l, h])
                eta[f"V[{l + 1},{h + 1}]"] = _opf(En.V[l, h] - Eh.V[l, h])
            if net.dense:
                eta[f"C[{l + 1}]"] = _opf(En.C[l] - Eh.C[l])
        bound = sum(sens.rho[k] * eta[k] for k in sens.rho)
        for T in lengths:
            X = torch.randn(batch, T, 6, generator=gen, dtype=F64)
            X[1] = X[1, :1] + 0.0 * X[1]
            X[1, -1] = torch.randn(6, generator=gen, dtype=F64)
            X[2] = X[2] / torch.linalg.vector_norm(X[2], dim=-1, keepdim=True)
            X = B_X * X / torch.linalg.vector_norm(X, dim=-1, keepdim=True).clamp(min=1.0)
            # adversarial: a few projected gradient-ascent steps on the sequences themselves
            X = X.requires_grad_(True)
            opt = torch.optim.Adam([X], lr=ascent_lr, maximize=True)
            steps = ascent_steps if T <= ascent_max_T else 0
            for step in range(steps + 1):
                gap = torch.linalg.vector_norm(net(X) - hat(X), dim=-1)
                out[int(T)] = max(out[int(T)], float(gap.detach().max()) / bound)
                if step == steps:
                    break
                opt.zero_grad()
                gap.sum().backward()
                opt.step()
                with torch.no_grad():
                    X.mul_(B_X / torch.linalg.vector_norm(X, dim=-1, keepdim=True).clamp(min=B_X))
    return out


register(Claim(
    label="prop-tt-uniform-T",
    statement="on random ReferenceTransformer models and perturbed copies, |f(X) - f_hat(X)| <= the T-free perturbation "
              "bound for sequences of every length T in {1, 8, 128, 1024}",
    chapter=CH_MULTI, provenance="reconstructed",
    numeric=FunctionCheck(lambda s: (max(uniform_T_ratios(s).values()), 4 * 3 * len(UNIFORM_T_LENGTHS))),
    mutants=(RHO_HALVED,),
))


# ------------------------------------------------------------------------------ Edelman baseline
def _edelman_sample(gen, n):
    p = _net_sample(gen, n, L=1, H=2, d=4, T=8, K=1, dense=True, bias=True)
    # m = 6 sequences per instance: reshape the batch of sequences
    p["X"] = p["X"][:, None].repeat(1, 6, 1, 1) + 0.5 * _randn(gen, n, 6, 8, 4)
    return p


def _edelman_parts(QK, V, C, w, Xs):
    """Per sample (i) and head: scores at the [CLS] row, pooled rows p_h, u, sigma(u), z~ (all with bias)."""
    Za = augment(Xs, True)                                               # (n, m, T, din)
    s = torch.einsum("nmi,nhij,nmtj->nmht", Za[:, :, -1], QK[:, 0], Za)
    a = torch.softmax(s, -1)
    P = torch.einsum("nmht,nmti->nmhi", a, Za)                            # pooled (augmented) rows per head
    u = torch.einsum("nmhi,nhid->nmd", P, V[:, 0])
    y = torch.einsum("nmi,nid->nmd", augment(torch.relu(u), True), C[:, 0])
    return s, P, u, y


def _edelman_ratio(**p):
    QK, V, C, w, X = p["QK"], p["V"], p["C"], p["w"], p["X"]
    s, P, u, y = _edelman_parts(QK, V, C, w, X)
    sh, Ph, uh, yh = _edelman_parts(p["QK_hat"], p["V_hat"], p["C_hat"], p["w_hat"], X)
    f = torch.einsum("nmi,nik->nmk", augment(y, True), w)
    fh = torch.einsum("nmi,nik->nmk", augment(yh, True), p["w_hat"])
    rms = lambda t: (t**2).mean(-1).sqrt()                               # over the sample
    lhs = rms(torch.linalg.vector_norm(f - fh, dim=-1))
    B_X = torch.linalg.vector_norm(X, dim=-1).amax((-2, -1))
    return lhs / _THIS.edelman_chain_bound(p, s, sh, Ph, uh, yh, B_X)


def edelman_chain_bound(p, s, sh, Ph, uh, yh, B_X):
    """The right side of :prf:ref:`lem-edelman-perturbation` on a batch (see :func:`_edelman_parts`)."""
    QK, V, C, w = p["QK"], p["V"], p["C"], p["w"]
    rms = lambda t: (t**2).mean(-1).sqrt()                               # over the sample
    H = QK.shape[2]
    S_w, S_C = _op(w), _op(C[:, 0])
    Bt = (B_X**2 + 1).sqrt()
    bound = rms(torch.linalg.vector_norm(augment(yh, True) @ (w - p["w_hat"]), dim=-1))
    dC = torch.einsum("nmi,nid->nmd", augment(torch.relu(uh), True), (C - p["C_hat"])[:, 0])
    bound = bound + S_w * rms(torch.linalg.vector_norm(dC, dim=-1))
    for h in range(H):
        S_V = _op(V[:, 0, h])
        eta_inf = (s[:, :, h] - sh[:, :, h]).abs().amax((-2, -1))
        bound = bound + S_w * S_C * S_V * Bt * eta_inf                   # rho_QK (kappa = 1, L_sigma = 1)
        dV = torch.einsum("nmi,nid->nmd", Ph[:, :, h], (V - p["V_hat"])[:, 0, h])
        eta_V = rms(torch.linalg.vector_norm(dV, dim=-1))
        bound = bound + S_w * S_C * eta_V                                # rho_V
    return bound


register(Claim(
    label="lem-edelman-perturbation",
    statement="one layer at the [CLS] row, data-dependent chain: rho(f, f_hat) <= sum_h rho_QK^h max_{i,t}|s - s_hat| "
              "+ sum_h rho_V rho(p_hat_h (V_h - V_hat_h)) + S_w rho([sigma(u_hat), 1](C - C_hat)) + rho(z_hat (w - w_hat)), "
              "rho = RMS over the m samples; only the true spectral norms S_V, S_C, S_w enter",
    chapter=CH_EDELMAN, provenance="reconstructed",
    numeric=InequalityCheck(_edelman_sample, _edelman_ratio, trials=300, starts=6, steps=30, lr=0.03),
    mutants=(scaled(_THIS, "edelman_chain_bound", 0.5, name="rhs-halved",
                    what="the data-dependent chain bound halved"),),
))


def bft_maurey_draw(X: torch.Tensor, A: torch.Tensor, a: float, K: int, draws: int, gen: torch.Generator):
    """Maurey's method in the form of Bartlett, Foster and Telgarsky (2017, Lemma 3.2, ``p = q = 2``):
    ``X A = sum_ij alpha_ij V_ij`` with atoms ``V_ij = ||X||_F / ||X e_i|| X e_i e_j^T`` (all of Frobenius
    norm ``||X||_F``) and weights ``alpha_ij = A_ij ||X e_i|| / ||X||_F``, whose l1 norm is at most
    ``||A||_{2,1} <= a`` (Cauchy-Schwarz per column). Draws ``K`` atoms ``a sign(alpha) V_ij`` with
    probabilities ``|alpha_ij| / a`` (the rest split between ``+-a V_11``), ``draws`` times, and returns
    the matrices ``A_K`` with ``X A_K`` the averages, shape ``(draws, *A.shape)``.
    ``E ||X (A - A_K)||_F^2 <= a^2 ||X||_F^2 / K``."""
    col = torch.linalg.vector_norm(X, dim=0)                              # ||X e_i||
    fro = float(torch.linalg.vector_norm(col))
    live = col > 0
    scale = torch.where(live, fro / col.clamp(min=1e-300), torch.zeros_like(col))   # A-space atom size
    alpha = A * col[:, None] / max(fro, 1e-300)
    flat = alpha.reshape(-1)
    rest = max(1.0 - float(flat.abs().sum()) / a, 0.0)
    i0 = int(torch.nonzero(live)[0]) * A.shape[1] if bool(live.any()) else 0
    probs = torch.cat([flat.abs() / a, torch.tensor([rest / 2, rest / 2], dtype=F64)]).clamp(min=0)
    idx = torch.multinomial(probs, K * draws, replacement=True, generator=gen).reshape(draws, K)
    D = flat.numel()
    sign = torch.cat([torch.sign(flat), torch.tensor([1.0, -1.0], dtype=F64)])
    pos = torch.where(idx >= D, torch.full_like(idx, i0), idx)
    val = sign[idx] * a * scale.repeat_interleave(A.shape[1])[pos] / K
    out = torch.zeros(draws, D, dtype=F64).scatter_add_(1, pos, val)
    return out.reshape(draws, *A.shape)


EDELMAN_DRAWS = 200  #: Maurey draws per map in the constructive check of thm-edelman-type


def _edelman_constructive_ratio(seed, *, n_models=4, m=16, H=2, d=4):
    """Build the cover element of :prf:ref:`thm-edelman-type` along the proof's tree for random one-layer
    networks (dense map, biases) on ``m`` sequences, and check, as for :prf:ref:`thm-tt-multilayer`:
    (a) ``sum_j rho_j eta_j <= eps`` (the certificate of :prf:ref:`lem-edelman-perturbation`), (b) the RMS
    over the sample of ``|f - f_hat|`` is at most ``eps``, (c) the atoms used, ``sum_j K_j log(2 d_in d_out)``,
    are at most the maps' part of the cover, (d) for each map the law the proof uses, ``E eta_j^2 <=
    (a_j R_j / sqrt K_j)^2`` with ``R_j^2`` the mean squared row of its inputs (mean over
    :data:`EDELMAN_DRAWS` draws less four standard errors). The score part (Zhang's cover) cannot be
    built (its constants are recalled): its centre is the true ``W_QK``, i.e. ``eta_QK = 0``."""
    gen = torch.Generator().manual_seed(seed)
    worst, trials = 0.0, 0
    for i in range(n_models):
        T = (4, 16)[i % 2]
        p = _net_sample(gen, 1, L=1, H=H, d=d, T=T, K=1, dense=True, bias=True)
        QK, V, C, w = p["QK"], p["V"], p["C"], p["w"]
        X = _randn(gen, 1, m, T, d)
        B_X = 1.5
        X = B_X * X / torch.linalg.vector_norm(X, dim=-1, keepdim=True).clamp(min=B_X)
        s, P, u, y = _edelman_parts(QK, V, C, w, X)
        f = torch.einsum("nmi,nik->nmk", augment(y, True), w)[0, :, 0]
        l21 = lambda M: float(torch.linalg.vector_norm(M, dim=-2).sum())
        lay = ed_mod.EdelmanLayerRadii(tuple(float(torch.linalg.matrix_norm(QK[0, 0, h])) for h in range(H)),
                                       tuple(l21(V[0, 0, h]) for h in range(H)),
                                       tuple(_opf(V[0, 0, h]) for h in range(H)), l21(C[0, 0]), _opf(C[0, 0]))
        cover = ed_mod.edelman_log_cover(lay, B_X=B_X, B_w21=l21(w[0]), S_w=_opf(w[0]), d=d, m=m, T=T, bias=True)
        rho = ed_mod.edelman_sensitivities(lay, B_X=B_X, S_w=_opf(w[0]), bias=True)
        terms = {t.name: t for t in cover.terms}
        # eps such that the largest atom count is between about 4 and 400
        target = float(10 ** (0.6 + 2.0 * torch.rand(1, generator=gen)))
        sc1 = cover.scales(1.0)
        kmax = max((t.factor * t.rho * t.radius / sc1[t.name]) ** 2 for t in cover.terms)
        eps = math.sqrt(kmax / target)
        sc = cover.scales(eps)

        def build(name, inputs, A):
            """Best of the draws for one map on its inputs; returns (A_hat, eta, law ratio, K)."""
            t = terms[name]
            K = max(1, math.ceil((t.factor * t.rho * t.radius / sc[name]) ** 2 - 1e-12))
            cands = bft_maurey_draw(inputs, A, t.radius, K, EDELMAN_DRAWS, gen)
            err = torch.linalg.vector_norm(torch.einsum("mi,sid->smd", inputs, A[None] - cands), dim=-1)
            eta2 = err.pow(2).mean(-1)                                      # squared RMS over the sample
            low = float(eta2.mean() - 4 * eta2.std() / math.sqrt(EDELMAN_DRAWS))
            bound = t.radius**2 * float(inputs.pow(2).sum(-1).mean()) / K
            Ah = cands[int(eta2.argmin())]
            if t.factor == 2.0:            # proper cover: shrink the centre back into the spectral ball
                S = _opf(A)
                Ah = Ah * min(1.0, S / max(_opf(Ah), 1e-300))
            eta = float(torch.linalg.vector_norm(inputs @ (A - Ah), dim=-1).pow(2).mean().sqrt())
            return Ah, eta, (low / bound if bound > 0 else 0.0), K

        cert, laws, count = 0.0, [], 0.0
        Vh = V.clone()
        for h in range(H):
            Vh[0, 0, h], eta, law, K = build(f"V[{h + 1}]", P[0, :, h], V[0, 0, h])
            cert += rho[f"V[{h + 1}]"] * eta
            laws.append(law)
            count += K * terms[f"V[{h + 1}]"].log_atoms
        uh = torch.einsum("mhi,hid->md", P[0], Vh[0, 0])
        zc = augment(torch.relu(uh), True)
        Ch, eta, law, K = build("C", zc, C[0, 0])
        cert, count = cert + rho["C"] * eta, count + K * terms["C"].log_atoms
        laws.append(law)
        yh = zc @ Ch
        zw = augment(yh, True)
        wh, eta, law, K = build("w", zw, w[0])
        cert, count = cert + rho["w"] * eta, count + K * terms["w"].log_atoms
        laws.append(law)
        fh = (zw @ wh)[:, 0]
        gap = float((f - fh).pow(2).mean().sqrt())
        maps_part = sum(t.c**2 / sc[t.name] ** 2 + t.log_atoms for t in cover.terms)
        worst = max(worst, cert / eps, gap / eps, count / maps_part, *laws)
        trials += 1
    return worst, trials


def _edelman_allocation_check(seed):
    """The Edelman-type cover evaluates each part at a split ``eps_j`` with ``sum eps_j = eps``; check the split
    is valid (ratio ``sum eps_j / eps``) and that more tokens never give a smaller cover."""
    from ..bounds.edelman import EdelmanLayerRadii, edelman_log_cover

    gen = torch.Generator().manual_seed(seed)
    worst, trials = 0.0, 0
    for _ in range(40):
        u = (10 ** (2 * torch.rand(6, generator=gen, dtype=F64) - 1)).tolist()
        lay = EdelmanLayerRadii((u[0], u[1]), (u[2], u[3]), (u[2] / 2, u[3]), u[4], u[5])
        eps = float(10 ** (2 * torch.rand(1, generator=gen) - 1))
        prev = 0.0
        for T in (1, 10, 1000):
            cov = edelman_log_cover(lay, B_X=1.0, B_w21=1.0, S_w=1.0, d=8, m=100, T=T, bias=True)
            sc = cov.scales(eps)
            worst = max(worst, sum(sc.values()) / eps, prev / cov(eps))
            prev = cov(eps)
            trials += 1
    return worst, trials


register(Claim(
    label="thm-edelman-type",
    statement="one layer on m sequences of length T: log N(F, eps, rho) <= sum_h Zhang(B~^2, ||W_QK^h||_F, eps_h/rho_QK^h, n = m T) "
              "+ sum_j ceil(c_j^2/eps_j^2) log(2 d_in d_out) for any split sum eps_j = eps; grows like log(mT)",
    chapter=CH_EDELMAN, provenance="reconstructed",
    numeric=AllOf((FunctionCheck(_edelman_constructive_ratio), FunctionCheck(_edelman_allocation_check))),
    symbolic=lambda: _edelman_sensitivities_match(),
    mutants=(replaced(ed_mod, "allocation_split",
                      lambda old: (lambda radii, eps: {k: 2 * v for k, v in old(radii, eps).items()}),
                      name="split-doubled", what="the scales eps_j of the cover add up to 2 eps"),),
))


def _edelman_sensitivities_match() -> bool:
    """The numeric :func:`genbound.bounds.edelman.edelman_sensitivities` equals the sympy expressions of
    :func:`genbound.symbolic.trauger_tewari.edelman_single_layer_sensitivities` at random positive points."""
    gen = torch.Generator().manual_seed(7)
    expr = sym.edelman_single_layer_sensitivities(2, dense=True, bias=True)
    for _ in range(5):
        v = (0.1 + 3 * torch.rand(6, generator=gen, dtype=F64)).tolist()
        lay = ed_mod.EdelmanLayerRadii((1.0, 1.0), (1.0, 1.0), (v[0], v[1]), 1.0, v[2])
        num = ed_mod.edelman_sensitivities(lay, B_X=v[3], S_w=v[4], L_sigma=v[5], kappa=1.0, bias=True)
        subs = {sym.sp.Symbol("S_V1_1", positive=True): v[0], sym.sp.Symbol("S_V1_2", positive=True): v[1],
                sym.sp.Symbol("S_C1", positive=True): v[2], sym.B_X: v[3], sym.sp.Symbol("S_w", positive=True): v[4],
                sym.L_sigma: v[5], sym.kappa: 1.0}
        names = {"QK1": "QK[1]", "QK2": "QK[2]", "V1": "V[1]", "V2": "V[2]", "C": "C", "w": "w"}
        for k, e in expr.items():
            want = float(e.subs(subs))
            if abs(num[names[k]] - want) > 1e-12 * max(1.0, abs(want)):
                return False
    return True
