"""What the claims of :ref:`ch-sa-network` share: the reference transformer with the vectors each matrix acts
on, random instances, and theorem P recomputed independently (numpy's SVD, sympy's constants, mpmath's
quadrature), sharing no code with :mod:`genbound.bounds.network`.

One concept: the independent side of the chapter's checks.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import torch

from .. import schatten_entropy as se
from ..bounds import network as _net
from ..symbolic import network as sn
from ._part3 import DT


def _gelu(x):
    return torch.nn.functional.gelu(x)


def _layer_parts(Z, qk, v, m_in, m_out):
    """One reference layer, with the vectors each matrix acts on: ``(out, u, hidden)``."""
    heads = sum(se.attention_head(Z, qk[h], v[h]) for h in range(len(qk)))
    u = se.row_project(heads)
    hidden = _gelu(u @ m_in)
    return se.row_project(hidden @ m_out), u, hidden


def _forward(X, layers):
    for lay in layers:
        X = _layer_parts(X, *lay)[0]
    return X


def _rand_mat(gen, r, c, scale):
    return torch.randn(r, c, generator=gen, dtype=DT) * scale / math.sqrt(max(r, c))


def _spec(W):
    return float(torch.linalg.matrix_norm(W, ord=2))


def _hybrid_instance(gen):
    L = int(torch.randint(1, 4, (1,), generator=gen))
    H = int(torch.randint(1, 3, (1,), generator=gen))
    N, d = 5, 7
    sc = float(torch.empty(1).uniform_(0.5, 3.0, generator=gen))
    layers = [
        (
            [_rand_mat(gen, N, N, sc) for _ in range(H)],
            [_rand_mat(gen, N, N, sc) for _ in range(H)],
            _rand_mat(gen, N, d, sc),
            _rand_mat(gen, d, N, sc),
        )
        for _ in range(L)
    ]
    B_X = float(torch.empty(1).uniform_(0.3, 2.0, generator=gen))
    X = torch.randn(3, 6, N, generator=gen, dtype=DT)
    X = X / X.norm(dim=-1, keepdim=True) * B_X * torch.rand(3, 6, 1, generator=gen, dtype=DT) ** 0.3
    return layers, B_X, X


def _flat_mats(layers):
    out = []
    for qk, v, m_in, m_out in layers:
        for h in range(len(qk)):
            out += [qk[h], v[h]]
        out += [m_in, m_out]
    return out


def _rebuild(layers, flat):
    it, out = iter(flat), []
    for qk, _v, _mi, _mo in layers:
        H = len(qk)
        heads = [(next(it), next(it)) for _ in range(H)]
        out.append(([a for a, _ in heads], [b for _, b in heads], next(it), next(it)))
    return out


def _theorem_instances(seed: int):
    gen = torch.Generator().manual_seed(seed)
    out = []
    for i in range(8):
        L = 1 + i % 3
        H = 1 + (i // 3) % 3
        N, d = 4 + i % 3, 6 + i % 4
        sc = float(torch.empty(1).uniform_(0.2, 20.0, generator=gen))
        mk = lambda r, c: _rand_mat(gen, r, c, sc)  # noqa: E731
        qk = [[mk(N, N) for _ in range(H)] for _ in range(L)]
        if (
            i % 4 == 3
        ):  # a low-rank query-key map (exactly rank 1 in the dense SVD is not guaranteed: kept full)
            qk[0][0] = qk[0][0] * 1e-3
        v = [[mk(N, N) for _ in range(H)] for _ in range(L)]
        m_in = [mk(N, d) for _ in range(L)]
        m_out = [mk(d, N) for _ in range(L)]
        kw = dict(
            n_samples=int(10 ** float(torch.empty(1).uniform_(3, 14, generator=gen))),
            delta=float(torch.empty(1).uniform_(0.001, 0.5, generator=gen)),
            margin=float(torch.empty(1).uniform_(0.05, 3.0, generator=gen)),
            input_radius=float(torch.empty(1).uniform_(0.2, 3.0, generator=gen)),
            levels_per_efold=int(torch.randint(1, 12, (1,), generator=gen)),
        )
        out.append(((qk, v, m_in, m_out), kw))
    return out


def _reference_bound(mats, *, n_samples, delta, margin, input_radius, levels_per_efold):
    """Theorem P recomputed: numpy SVD, sympy constants, mpmath quadrature; every matrix at p = 0."""
    qk, v, m_in, m_out = mats
    L, H = len(qk), len(qk[0])
    J = levels_per_efold
    lvl = lambda W: math.exp(
        math.ceil(J * math.log(np.linalg.svd(W.numpy(), compute_uv=False)[0]) - 1e-12) / J
    )  # noqa: E731
    kidx = lambda W: math.ceil(J * math.log(np.linalg.svd(W.numpy(), compute_uv=False)[0]) - 1e-12)  # noqa: E731
    prior = lambda k: 0.5 if k == 0 else 1 / (2 * (abs(k) + 1) * (abs(k) + 2))  # noqa: E731
    L_phi, four = se.L_PHI, 4.0
    lam = []
    for l in range(L):
        head = sum(lvl(v[l][h]) * (1 + four * lvl(qk[l][h])) for h in range(H))
        lam.append(L_phi * lvl(m_in[l]) * lvl(m_out[l]) * head)
    alpha = [math.prod(lam[l + 1 :]) for l in range(L)]
    K = (2 * H + 2) * L
    top = float(sn.dudley_top())
    sens = {k: sn.hybrid_sensitivity(k) for k in ("QK", "V", "M_in", "M_out")}
    P, lb, union = [], [], 0.0
    for l in range(L):
        b_l = input_radius if l == 0 else 1.0
        entries = []
        for h in range(H):
            entries += [(qk[l][h], "QK", b_l), (v[l][h], "V", b_l)]
        entries += [(m_in[l], "M_in", 1.0), (m_out[l], "M_out", lvl(m_in[l]))]
        for W, kind, radius in entries:
            subs = {
                "C_V": 0,
                "C_in": lvl(m_in[l]),
                "C_out": lvl(m_out[l]),
                "L_phi": L_phi,
                "b": b_l,
            }
            if kind == "QK":
                hh = [x for x in range(H) if qk[l][x] is W][0]
                subs["C_V"] = lvl(v[l][hh])
            S = float(
                sens[kind].subs({sn.sp.Symbol(k, positive=True): val for k, val in subs.items()})
            )
            sv = np.linalg.svd(W.numpy(), compute_uv=False)
            r = int((sv > 0).sum())
            rows, cols = W.shape
            kappa = float(sn.proper_cover_factor()) if kind == "M_in" else 1.0
            b = (
                float(sn.rank_net_base())
                * lvl(W)
                * math.sqrt(r)
                * radius
                * K
                * kappa
                * alpha[l]
                * S
                / margin
            )
            P.append((rows + cols + 1) * r)
            lb.append(math.log(b))
            union += math.log(min(rows, cols)) - math.log(prior(kidx(W)))
    mpmath.mp.dps = 25
    f = lambda e: mpmath.sqrt(sum(p * max(l - mpmath.log(e), 0) for p, l in zip(P, lb)))  # noqa: E731
    pts = sorted({0.0, top} | {math.exp(x) for x in lb if math.exp(x) < top})
    cap = 12.0 * float(mpmath.quad(f, pts))
    gap = 2 * cap / math.sqrt(n_samples) + 3 * math.sqrt(
        (math.log(2 / delta) + union) / (2 * n_samples)
    )
    return cap, union, gap


def qk_adversarial_ratio(delta: float = 1e-4) -> float:
    """The query-key line of lem-p-hybrid-step on a built instance where it binds within the softmax's factor 2
    and the feed-forward block's ``L_phi``: two antipodal tokens at the balanced point of head 1, a third token
    that head 2 turns into a constant offset placing GELU in its linear range, norms below the projections.
    The ratio is about ``1 / (2 L_phi) = 0.44``."""
    e1, e2 = torch.eye(3, dtype=DT)[0], torch.eye(3, dtype=DT)[1]
    X = torch.stack([e1, -e1, e2]).unsqueeze(0)  # b = 1
    K = 60.0
    qk1 = -K * torch.outer(e1, e2)  # token 1 ignores token 3; tokens 1 and 2 tie
    v1 = torch.outer(e1, e1)  # C_V = 1
    qk2, v2 = (
        torch.zeros(3, 3, dtype=DT),
        2.7 * torch.outer(e2, e2),
    )  # head 2: (1/3)(2.7) e2 for every token
    c = 6.0 / math.sqrt(2.0)
    m_in = torch.tensor([[c, -c], [c, c], [0.0, 0.0]], dtype=DT)  # 6 times a rotation on (e1, e2)
    m_out = torch.tensor([[1.0, 1.0, 0.0], [-1.0, 1.0, 0.0]], dtype=DT) / math.sqrt(2.0) / 6.0
    layers = [([qk1, qk2], [v1, v2], m_in, m_out)]
    D = delta * torch.outer(e1, e1)
    b = [([qk1 + D, qk2], [v1, v2], m_in, m_out)]
    lhs = float((_forward(X, layers) - _forward(X, b)).norm(dim=-1).amax())
    lv = [_spec(W) for W in (qk1, v1, qk2, v2, m_in, m_out)]
    sens = _net.network_sensitivities(
        torch.tensor([[lv[0], lv[2]]], dtype=DT),
        torch.tensor([[lv[1], lv[3]]], dtype=DT),
        torch.tensor([lv[4]], dtype=DT),
        torch.tensor([lv[5]], dtype=DT),
        input_radius=1.0,
    )
    meas = float((X[0] @ D).norm(dim=-1).max())
    return lhs / (math.exp(float(sens["log_alpha"][0] + sens["log_sens"][0])) * meas)
