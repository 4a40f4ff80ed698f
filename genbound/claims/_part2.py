"""What the claim modules of Part II share: the perturbation machinery (random effective maps and perturbed
copies, :func:`_perturbation_ratio` with the bound side from :func:`genbound.bounds.trauger_tewari.sensitivities_raw`,
the same code the bound functions use), Maurey's empirical method (:func:`maurey_draw`), the constructive
check of the Trauger-Tewari covers, the two-sided checks of the Trauger-Tewari values against sympy, and the
mutants several chapters' claims use. The claims live in one module per chapter:
:mod:`.part2_tt_covers`, :mod:`.part2_single_layer`, :mod:`.part2_multilayer_masked`,
:mod:`.part2_edelman_baseline`.
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch

from .. import rademacher as rad_mod
from ..bounds import edelman as ed_mod
from ..bounds import trauger_tewari as tt_mod
from ..bounds.trauger_tewari import LayerRadii, layer_radii_from_model
from ..nets import ReferenceTransformer, augment, forward_effective
from ..symbolic import trauger_tewari as sym
from . import Mutant, register_cache, replaced, scaled
from . import InequalityCheck
from ..symbolic import dudley as sd
from ._core import _times

F64 = torch.float64


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


RHO_HALVED = replaced(
    tt_mod,
    "sensitivities_raw",
    _sensitivities_times("rho", 0.5),
    name="rho-halved",
    what="every sensitivity rho_j of the perturbation bound halved",
)


def _qk_rho_times(factor: float):
    """Mutant maker: ``sensitivities_raw`` with only the query-key sensitivities ``rho_QK`` times ``factor``."""

    def make(old):
        def new(*args, **kwargs):
            rho, Bs, lips = old(*args, **kwargs)
            return {k: v * factor if k.startswith("QK") else v for k, v in rho.items()}, Bs, lips

        return new

    return make


QK_RHO_QUARTERED = replaced(
    tt_mod,
    "sensitivities_raw",
    _qk_rho_times(0.25),
    name="qk-rho-quartered",
    what="the query-key sensitivities rho_QK divided by 4 (the other terms unchanged)",
)


def _op(M: torch.Tensor) -> torch.Tensor:
    return torch.linalg.matrix_norm(M, ord=2)


def _opf(M: torch.Tensor) -> float:
    return float(_op(M.detach()))


def _randn(gen, *shape, scale=1.0):
    return scale * torch.randn(*shape, generator=gen, dtype=F64)


def _scales(gen, n, *tail, lo=-1.0, hi=0.7):
    """Per-instance log-uniform scales in ``[10^lo, 10^hi]`` broadcastable to ``(n, *tail)``."""
    return 10 ** (lo + (hi - lo) * torch.rand(n, *([1] * len(tail)), generator=gen, dtype=F64))


def maurey_draw(
    W: torch.Tensor, B: torch.Tensor, K: int, draws: int, gen: torch.Generator
) -> torch.Tensor:
    """Maurey's empirical method for the ``||.||_{1,1}`` ball of radius ``B`` (batched over ``W``).

    ``W = sum_ij |W_ij|/B * (B sign(W_ij) E_ij) + (1 - ||W||_{1,1}/B) * 0``, the zero written as
    ``(+B E_11 - B E_11)/2``. Draws ``K`` atoms i.i.d. from these weights, ``draws`` times, and returns
    all averages, shape ``(draws, *W.shape)``; every average lies in the ball.
    """
    n = W.shape[0]
    flat = W.reshape(n, -1)
    rest = (1 - flat.abs().sum(-1) / B).clamp(min=0)
    probs = torch.cat([flat.abs() / B[:, None], rest[:, None] / 2, rest[:, None] / 2], -1)
    idx = torch.multinomial(
        probs.repeat(draws, 1), K, replacement=True, generator=gen
    )  # (draws*n, K)
    D = flat.shape[-1]
    sign = torch.cat(
        [torch.sign(flat), torch.ones(n, 1, dtype=F64), -torch.ones(n, 1, dtype=F64)], -1
    )
    sign = sign.repeat(draws, 1)
    pos = torch.where(idx >= D, torch.zeros_like(idx), idx)
    val = torch.gather(sign, 1, idx) * B.repeat(draws)[:, None] / K
    out = torch.zeros(draws * n, D, dtype=F64).scatter_add_(1, pos, val)
    return out.reshape(draws, *W.shape)


# ------------------------------------------------------------------ the theorems' values, two-sided
#: Relative tolerance of the equality checks of the closed-form values (Trauger-Tewari).
VALUE_RTOL = 1e-12


@register_cache
@lru_cache(maxsize=None)
def _tt_value_fn(L, H, dense, bias, row_norm, multiclass):
    """The lambdified :func:`genbound.symbolic.trauger_tewari.tt_bound_value` (built once per architecture)."""
    expr, names = sym.tt_bound_value(
        L, H, dense=dense, bias=bias, row_norm=row_norm, multiclass=multiclass
    )
    keys = tuple(names)
    return keys, sym.sp.lambdify([names[k] for k in keys], expr, modules="math")


def _tt_case(rng, L, H, dense, i):
    """Random radii (log-uniform over four decades, with ``S = B`` and ``S`` just below ``B`` in some
    instances: the proper-cover switch) and a random setting; ``m`` up to ``10^12`` so that both the
    trivial and the non-trivial regime occur."""
    u = lambda lo=-2.0, hi=1.5: 10 ** rng.uniform(lo, hi)  # noqa: E731
    mode = i % 4

    def pair():
        B = u()
        S = B if mode == 1 else B * (1 - 1e-9) if mode == 2 else u()
        return B, S

    layers = []
    for _ in range(L):
        qk = [pair() for _ in range(H)]
        v = [pair() for _ in range(H)]
        c = pair() if dense else (None, None)
        layers.append(
            LayerRadii(
                tuple(b for b, _ in qk),
                tuple(s for _, s in qk),
                tuple(b for b, _ in v),
                tuple(s for _, s in v),
                c[0],
                c[1],
            )
        )
    kw = dict(
        B_X=u(-1, 1),
        B_w=u(),
        d=rng.randint(1, 64),
        m=int(10 ** rng.uniform(0, 12)),
        delta=10 ** rng.uniform(-4, -0.01),
        margin=u(-1.5, 0.5),
        L_sigma=rng.uniform(0.5, 2.0),
        kappa=rng.uniform(0.5, 1.5),
    )
    return layers, kw


def _tt_values(layers, kw, out_dim):
    vals = {
        "B_X": kw["B_X"],
        "B_w": kw["B_w"],
        "d": kw["d"],
        "out_dim": out_dim,
        "m": kw["m"],
        "delta": kw["delta"],
        "gamma": kw["margin"],
        "L_sigma": kw["L_sigma"],
        "kappa": kw["kappa"],
    }
    for l, lay in enumerate(layers, start=1):
        for h in range(lay.n_heads):
            vals.update(
                {
                    f"B_QK[{l},{h + 1}]": lay.B_QK[h],
                    f"S_QK[{l},{h + 1}]": lay.S_QK[h],
                    f"B_V[{l},{h + 1}]": lay.B_V[h],
                    f"S_V[{l},{h + 1}]": lay.S_V[h],
                }
            )
        if lay.dense:
            vals.update({f"B_C[{l}]": lay.B_C, f"S_C[{l}]": lay.S_C})
    return vals


def tt_value_agreement(seed: int, configs, n: int = 40) -> tuple[float, int, int]:
    """Largest ``|value - reference| / reference`` of :func:`genbound.bounds.trauger_tewari.trauger_tewari_bound`
    against the lambdified :func:`genbound.symbolic.trauger_tewari.tt_bound_value`, over ``n`` random cases
    per architecture ``(L, H, dense, bias, row_norm, out_dim)``; returns ``(worst, trials, non-trivial)``."""
    import random

    rng = random.Random(seed)
    worst, trials, live = 0.0, 0, 0
    for L, H, dense, bias, row_norm, out_dim in configs:
        keys, f = _tt_value_fn(L, H, dense, bias, row_norm, out_dim > 1)
        for i in range(n):
            layers, kw = _tt_case(rng, L, H, dense, i)
            r = tt_mod.trauger_tewari_bound(
                layers, out_dim=out_dim, bias=bias, row_norm=row_norm, **kw
            )
            vals = _tt_values(layers, kw, out_dim)
            ref = f(*[vals[k] for k in keys])
            worst = max(worst, abs(r.value - ref) / abs(ref))
            trials, live = trials + 1, live + (not r.trivial)
    return worst, trials, live


TT_VALUE_CONFIGS = {
    "single": ((1, 2, False, False, False, 1), (1, 1, False, True, False, 1)),
    "multi": (
        (2, 2, True, True, False, 1),
        (2, 1, True, False, True, 1),
        (3, 1, False, False, False, 1),
    ),
    "masked": ((2, 1, True, False, True, 4), (1, 2, True, True, True, 3)),
}


def _tt_value_check(kind):
    """FunctionCheck body: the value agreement as a ratio ``worst / VALUE_RTOL`` (equality to ``1e-12``
    relative is a ratio ``<= 1``, in both directions)."""

    def fn(seed):
        worst, trials, _ = tt_value_agreement(seed, TT_VALUE_CONFIGS[kind])
        return worst / VALUE_RTOL, trials

    return fn


#: Loosened statements the equality checks must reject (a one-sided check would pass them).
COVER_CONSTANT_DOUBLED = replaced(
    tt_mod.CoverTerm,
    "c",
    lambda old: property(lambda self: 2 * old.fget(self)),
    name="cover-constant-doubled",
    what="every cover constant c_j = f rho B sqrt(log atoms) doubled (a looser bound)",
)
CONFIDENCE_3_TO_4 = replaced(
    rad_mod,
    "GAP_CONFIDENCE_COEF",
    lambda old: 4.0,
    name="confidence-3-to-4",
    what="3 sqrt(log(2/delta)/(2m)) replaced by 4 sqrt(log(2/delta)/(2m)) (a looser bound)",
)


TT_COVERS = (
    "genbound.bounds.trauger_tewari.trauger_tewari_bound",
    "genbound.bounds.trauger_tewari.tt_log_cover",
    "genbound.bounds.trauger_tewari.tt_sensitivities",
    "genbound.bounds.trauger_tewari.sensitivities_raw",
    "genbound.covering.allocation_value",
    "genbound.rademacher.dudley_inverse_square",
    "genbound.rademacher.generalization_gap_bound",
)


# ---------------------------------------------------------------------------- perturbation machinery
def _net_sample(gen, n, *, L, H, d, T, K, dense, bias, perturb=0.3):
    """Effective maps of a network and of a perturbed copy, plus sequences of length ``T``."""
    din = d + (1 if bias else 0)
    s = _scales(gen, n, 1, 1, 1, 1, lo=-0.7, hi=0.3)
    p = {
        "QK": _randn(gen, n, L, H, din, din) * s,
        "V": _randn(gen, n, L, H, din, d) * s / math.sqrt(d),
        "w": _randn(gen, n, din, K) / math.sqrt(d),
    }
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


#: The kinds of matrix of a Part II network, in the keys of :func:`_net_sample`.
MATRIX_KINDS = ("QK", "V", "C", "w")


def keep_one_moving(p, kind, gen):
    """``p`` with one matrix of kind ``kind`` moved per instance and every other one at its true value:
    each hat equals its matrix except one ``kind`` matrix (a random head and layer), so that its
    sensitivity is the only term of the right side. Adds the mask ``"moving"`` (boolean, not searched)."""
    n, lead = p[kind].shape[0], p[kind].shape[1:-2]
    units = math.prod(lead)
    pick = torch.randint(0, units, (n,), generator=gen)
    mask = torch.zeros(n, units, dtype=torch.bool)
    mask[torch.arange(n), pick] = True
    return _hold_still({**p, "moving": mask.reshape(n, *lead, 1, 1)}, kind)


def _hold_still(x, kind):
    out = dict(x)
    for k in MATRIX_KINDS:
        if k not in x:
            continue
        moved = torch.where(x["moving"], x[k + "_hat"], x[k]) if k == kind else x[k]
        out[k + "_hat"] = moved.clone()
    return out


def score_path_sample(gen, n, *, H, d, T, K, dense, bias, m=None):
    """One-layer instances where the query-key sensitivity is attained to first order: the last (read) row is
    ``x = r u`` and the other rows are ``+-x`` in equal numbers, ``W_QK = 0`` (uniform attention) and its
    cover element ``W_QK + e [u,0]^T [u,0]`` moves every score by ``+-e r^2``, so the attention moves its mass
    by exactly the score change (``kappa = 1``) between rows ``2 r`` apart; the value, dense and readout maps
    are rank one along the moved direction (their spectral norms are attained, the ReLU passes). With the
    biases the ratio is ``r / sqrt(r^2 + 1)`` (``r`` up to 10). Only head 1's query-key map moves (mask
    ``"moving"``, as :func:`keep_one_moving`). ``m``: that many copies of the sequence (an Edelman sample).
    The keys are those of :func:`_net_sample` with ``L = 1``."""
    din = d + (1 if bias else 0)
    u = torch.nn.functional.normalize(_randn(gen, n, d), dim=-1)
    r = _scales(gen, n, lo=0.0, hi=1.0)
    sign = torch.ones(T, dtype=F64)
    sign[torch.randperm(T - 1, generator=gen)[: T // 2]] = -1.0  # last row +1, balanced for even T
    X = r[:, None, None] * sign[None, :, None] * u[:, None, :]
    ua = torch.cat([u, torch.zeros(n, din - d, dtype=F64)], -1)  # (n, din)
    e1 = torch.zeros(d, dtype=F64)
    e1[0] = 1.0
    sc = lambda: _scales(gen, n, 1, 1, lo=-0.5, hi=0.5)  # noqa: E731
    # 1e-3 noise everywhere: distinct singular values (the SVD's gradient is finite for the search)
    QK = 1e-3 * _randn(gen, n, 1, H, din, din)
    V = 1e-3 * _randn(gen, n, 1, H, din, d)
    V[..., 0] = (
        0.0  # the first output unit is head 1's alone: 0 before the move, so the ReLU passes
    )
    V[:, 0, 0] += sc() * ua[:, :, None] * e1[None, None, :]
    p = {"QK": QK, "V": V}
    if dense:
        C = 1e-3 * _randn(gen, n, 1, din, d)
        C[:, 0, 0, 0] = sc()[:, 0, 0]
        p["C"] = C
    w = 1e-3 * _randn(gen, n, din, K)
    w[:, 0, 0] = sc()[:, 0, 0]
    p["w"] = w
    for k in list(p):
        p[k + "_hat"] = p[k].clone()
    e = _scales(gen, n, 1, 1, lo=-4.0, hi=-2.0) / (r * r)[:, None, None]
    p["QK_hat"][:, 0, 0] = QK[:, 0, 0] + e * ua[:, :, None] * ua[:, None, :]
    mask = torch.zeros(n, 1, H, 1, 1, dtype=torch.bool)
    mask[:, 0, 0] = True
    p["moving"] = mask
    p["X"] = X if m is None else X[:, None].repeat(1, m, 1, 1)
    return p


def score_path_check(sample, ratio, **search):
    """The :class:`~genbound.claims.InequalityCheck` of ``sample`` (a :func:`score_path_sample`) with the
    search held to moves of the query-key map alone."""

    return InequalityCheck(sample, ratio, lambda x: _hold_still(x, "QK"), **search)


def one_matrix_checks(sample, ratio, kinds, project=None, **search):
    """One :class:`~genbound.claims.InequalityCheck` per matrix kind in ``kinds``: instances of ``sample`` in
    which only that kind moves (:func:`keep_one_moving`), with an adversarial search that keeps it so (every
    other hat is projected back onto its matrix after each step). Each sensitivity is tested where it is the
    whole right side, so a constant wrong in one term alone cannot hide behind the others."""

    def check(kind):
        def smp(gen, n):
            return keep_one_moving(sample(gen, n), kind, gen)

        def proj(x):
            return _hold_still(x if project is None else project(x), kind)

        return InequalityCheck(smp, ratio, proj, **search)

    return tuple(check(k) for k in kinds)


def _perturbation_ratio(p, *, bias, row_norm, positions="cls", act="relu", kappa=1.0):
    """``||f - f_hat||_2 / sum_j rho_j ||W_j - W_hat_j||_op`` for the hypotheses of
    :prf:ref:`lem-tt-multilayer-perturbation` (spectral radii from the weights; proper ones take the max
    with the cover element's norm)."""
    QK, V, w, X = p["QK"], p["V"], p["w"], p["X"]
    C = p.get("C")
    L, H = QK.shape[1], QK.shape[2]
    f = forward_effective(
        QK, V, C, w, X, bias=bias, activation=act, row_norm=row_norm, all_rows=True
    )
    fh = forward_effective(
        p["QK_hat"],
        p["V_hat"],
        p.get("C_hat"),
        p["w_hat"],
        X,
        bias=bias,
        activation=act,
        row_norm=row_norm,
        all_rows=True,
    )
    out = torch.einsum("bti,bik->btk", augment(f, bias), w)
    outh = torch.einsum("bti,bik->btk", augment(fh, bias), p["w_hat"])
    diff = torch.linalg.vector_norm(out - outh, dim=-1)  # (n, T)
    lhs = diff[:, -1] if positions == "cls" else diff.amax(-1)
    B_X = torch.linalg.vector_norm(X, dim=-1).amax(-1)
    spec, eta = [], {}
    for l in range(L):
        S_QK = [_op(QK[:, l, h]) for h in range(H)]
        S_V = [
            torch.maximum(_op(V[:, l, h]), _op(p["V_hat"][:, l, h]))
            if (not row_norm and l < L - 1)
            else _op(V[:, l, h])
            for h in range(H)
        ]
        S_C = None if C is None else torch.maximum(_op(C[:, l]), _op(p["C_hat"][:, l]))
        spec.append((S_QK, S_V, S_C))
        for h in range(H):
            eta[f"QK[{l + 1},{h + 1}]"] = _op(QK[:, l, h] - p["QK_hat"][:, l, h])
            eta[f"V[{l + 1},{h + 1}]"] = _op(V[:, l, h] - p["V_hat"][:, l, h])
        if C is not None:
            eta[f"C[{l + 1}]"] = _op(C[:, l] - p["C_hat"][:, l])
    eta["w"] = _op(w - p["w_hat"])
    B_w = _op(p["w_hat"])
    rho, _, _ = tt_mod.sensitivities_raw(
        spec, B_X=B_X, B_w=B_w, kappa=kappa, bias=bias, row_norm=row_norm
    )
    bound = sum(rho[k] * eta[k] for k in rho)
    return lhs / bound


# ------------------------------------------------------------------------------ covering theorems
def _constructive_cover_ratio(seed, *, L, H, dense, bias, row_norm, d=4, out_dim=1, n_models=6):
    """Build the cover element of :prf:ref:`thm-tt-multilayer` for random networks and check (a) the
    certificate ``sum rho_j ||W_j - W_hat_j||_op <= eps``, (b) ``|f - f_hat| <= eps`` on random sequences of
    several lengths, (c) ``sum_j K_j log_atoms_j <= A/eps^2 + Lambda``. Returns ``(worst ratio, trials)``."""
    gen = torch.Generator().manual_seed(seed)
    worst, trials = 0.0, 0
    for i in range(n_models):
        net = ReferenceTransformer(
            d,
            n_layers=L,
            n_heads=H,
            dense=dense,
            bias=bias,
            row_norm=row_norm,
            out_dim=out_dim,
            seed=seed * 100 + i,
        )
        with torch.no_grad():
            for prm in net.parameters():
                prm.add_(0.3 * torch.randn(prm.shape, generator=gen, dtype=F64))
        with torch.no_grad():
            E = net.effective_weights()
        layers = layer_radii_from_model(net)
        B_X = 1.5
        B_w = float(E.w.detach().abs().sum())
        cover = tt_mod.tt_log_cover(
            layers, B_X=B_X, B_w=B_w, d=d, out_dim=out_dim, bias=bias, row_norm=row_norm
        )
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
            if fac[name] == 2.0:  # proper cover: shrink the centre back into the spectral ball
                S = _opf(W)
                Wh = Wh * min(1.0, S / max(_opf(Wh), 1e-300))
            hats[name] = Wh
            cert += float(sens.rho[name]) * _opf(W - Wh)
        # (b): the network with the cover element's maps, on sequences of several lengths
        QKh = torch.stack(
            [torch.stack([hats[f"QK[{l + 1},{h + 1}]"] for h in range(H)]) for l in range(L)]
        )
        Vh = torch.stack(
            [torch.stack([hats[f"V[{l + 1},{h + 1}]"] for h in range(H)]) for l in range(L)]
        )
        Ch = torch.stack([hats[f"C[{l + 1}]"] for l in range(L)]) if dense else None
        gap = 0.0
        for T in (1, 7, 64):
            X = torch.randn(4, T, d, generator=gen, dtype=F64)
            X = B_X * X / torch.linalg.vector_norm(X, dim=-1, keepdim=True).clamp(min=1.0) * 0.999
            ex = lambda t: None if t is None else t.expand(4, *t.shape)
            with torch.no_grad():
                f = forward_effective(
                    ex(E.QK), ex(E.V), ex(E.C), ex(E.w), X, bias=bias, row_norm=row_norm
                )
                fh = forward_effective(
                    ex(QKh), ex(Vh), ex(Ch), ex(hats["w"]), X, bias=bias, row_norm=row_norm
                )
            gap = max(gap, float(torch.linalg.vector_norm(f - fh, dim=-1).max()))
        count = sum(K[t.name] * t.log_atoms for t in cover.terms)
        worst = max(worst, cert / eps, gap / eps, count / cover(eps))
        trials += 1
    return worst, trials


COVER_A_HALVED = scaled(
    tt_mod,
    "allocation_value",
    0.5,
    name="complexity-halved",
    what="the allocated complexity A = (sum_j c_j^{2/3})^3 halved in log N <= A/eps^2 + Lambda",
)


# ------------------------------------------------------------------------------ capacities
@register_cache
@lru_cache(maxsize=None)
def _capacity_fn():
    """``(capacity(A, Lambda, c), log_factor(A, m, c))`` lambdified from
    :func:`genbound.symbolic.dudley.capacity_derivation` (the log factor floored at 1)."""

    cap, ell, _ = sd.capacity_derivation()
    fc = sym.sp.lambdify((sd.A, sd.Lam, sd.c), cap, modules="math")
    fl = sym.sp.lambdify((sd.A, sd.m, sd.c), ell, modules="math")
    return fc, lambda A, m, c: 1.0 if A == 0 else max(1.0, fl(A, m, c))


def _rel(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


def _patch_both(name, factor):
    """Mutant patches: ``name`` scaled by ``factor`` where the bounds call it and where Part I defines it."""

    return tuple(
        (owner, name, lambda old: _times(old, factor)) for owner in (tt_mod, ed_mod, rad_mod)
    )


CAPACITY_MUTANTS = (
    Mutant(
        "capacity-halved",
        "capacity 6 (sqrt(A) + (c/2) sqrt(Lambda)): half the derived constant",
        _patch_both("inverse_square_capacity", 0.5),
    ),
    Mutant(
        "capacity-doubled",
        "capacity 24 (sqrt(A) + (c/2) sqrt(Lambda)): a looser constant",
        _patch_both("inverse_square_capacity", 2.0),
    ),
    Mutant(
        "log-factor-halved", "the log factor halved", _patch_both("inverse_square_log_factor", 0.5)
    ),
)
