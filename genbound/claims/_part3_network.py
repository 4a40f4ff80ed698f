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
from ..weights import TransformerWeights
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
        if i % 4 == 3:  # one query-key map far smaller than the rest
            qk[0][0] = qk[0][0] * 1e-3
        v = [[mk(N, N) for _ in range(H)] for _ in range(L)]
        if (
            i % 4 == 2
        ):  # a value map with exactly zero columns: its rank counts only nonzero singular values
            v[0][0][:, N // 2 :] = 0.0
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


def _prior(k: int) -> float:
    return 0.5 if k == 0 else 1 / (2 * (abs(k) + 1) * (abs(k) + 2))


def _ref_matrices(mats, *, margin, input_radius, levels_per_efold) -> list[dict]:
    """Per matrix, in the hybrid order, recomputed from numpy's SVD and sympy's constants: its singular
    values, shape, rank, spectral level index ``k`` and level ``s``, and ``log_scale``
    (``log(K kappa alpha sens B / margin)``)."""
    qk, v, m_in, m_out = mats
    L, H = len(qk), len(qk[0])
    J = levels_per_efold
    svd = lambda W: np.linalg.svd(W.numpy(), compute_uv=False)  # noqa: E731
    kidx = lambda W: math.ceil(J * math.log(svd(W)[0]) - 1e-12)  # noqa: E731
    lvl = lambda W: math.exp(kidx(W) / J)  # noqa: E731
    L_phi, four = se.L_PHI, 4.0
    lam = []
    for l in range(L):
        head = sum(lvl(v[l][h]) * (1 + four * lvl(qk[l][h])) for h in range(H))
        lam.append(L_phi * lvl(m_in[l]) * lvl(m_out[l]) * head)
    alpha = [math.prod(lam[l + 1 :]) for l in range(L)]
    K = (2 * H + 2) * L
    sens = {k: sn.hybrid_sensitivity(k) for k in ("QK", "V", "M_in", "M_out")}
    out = []
    for l in range(L):
        b_l = input_radius if l == 0 else 1.0
        entries = []
        for h in range(H):
            entries += [(qk[l][h], "QK", b_l, h), (v[l][h], "V", b_l, h)]
        entries += [(m_in[l], "M_in", 1.0, -1), (m_out[l], "M_out", lvl(m_in[l]), -1)]
        for W, kind, radius, h in entries:
            subs = {
                "C_V": lvl(v[l][h]) if kind == "QK" else 0,
                "C_in": lvl(m_in[l]),
                "C_out": lvl(m_out[l]),
                "L_phi": L_phi,
                "b": b_l,
            }
            S = float(sens[kind].subs({sn.sp.Symbol(k, positive=True): x for k, x in subs.items()}))
            sv = svd(W)
            kappa = float(sn.proper_cover_factor()) if kind == "M_in" else 1.0
            rows, cols = W.shape
            out.append(
                {
                    "kind": kind,
                    "sv": sv[sv > 0],
                    "rows": rows,
                    "cols": cols,
                    "rank": int((sv > 0).sum()),
                    "k": kidx(W),
                    "s": lvl(W),
                    "log_scale": math.log(K * kappa * alpha[l] * S * radius / margin),
                }
            )
    return out


def _reference_bound(mats, *, n_samples, delta, margin, input_radius, levels_per_efold):
    """Theorem P recomputed: numpy SVD, sympy constants, mpmath quadrature; every matrix at p = 0."""
    recs = _ref_matrices(
        mats, margin=margin, input_radius=input_radius, levels_per_efold=levels_per_efold
    )
    top = float(sn.dudley_top())
    base = float(sn.rank_net_base())
    P = [(m["rows"] + m["cols"] + 1) * m["rank"] for m in recs]
    lb = [math.log(base * m["s"] * math.sqrt(m["rank"])) + m["log_scale"] for m in recs]
    union = sum(math.log(min(m["rows"], m["cols"])) - math.log(_prior(m["k"])) for m in recs)
    mpmath.mp.dps = 25
    f = lambda e: mpmath.sqrt(sum(p * max(l - mpmath.log(e), 0) for p, l in zip(P, lb)))  # noqa: E731
    pts = sorted({0.0, top} | {math.exp(x) for x in lb if math.exp(x) < top})
    cap = 12.0 * float(mpmath.quad(f, pts))
    gap = 2 * cap / math.sqrt(n_samples) + 3 * math.sqrt(
        (math.log(2 / delta) + union) / (2 * n_samples)
    )
    return cap, union, gap


def _ref_entropy(x: np.ndarray, *, p, level, s, rows, cols, T, rank) -> np.ndarray:
    """``H_a`` at operator-norm radii ``x`` (numpy), from the lemma's formula over genbound's rank set."""
    base, C_S = float(sn.rank_net_base()), float(sn.sudakov_constant())
    split = float(sn.proper_cover_factor())
    if p == 0:
        return (rows + cols + 1) * rank * np.maximum(np.log(base * s * math.sqrt(rank) / x), 0.0)
    R = min(rows, cols)
    cand = np.array(
        sorted({0} | {min(R, int(round(10 ** (math.log10(R) * j / 47)))) for j in range(48)}), float
    )
    res = np.where(cand >= R, 0.0, np.minimum(s, (level / (cand + 1)) ** (1 / p)))
    sp_ = np.where(res > 0, split, 1.0)
    xx = x[:, None]
    with np.errstate(
        divide="ignore"
    ):  # rank 0: log 0 = -inf, clipped to 0 (no directions, no cost)
        rank_part = (
            (rows + cols + 1) * cand * np.maximum(np.log(base * s * np.sqrt(cand) * sp_ / xx), 0.0)
        )
    resid = C_S * T * (res * math.sqrt(R * cols) * sp_ / xx) ** 2
    return (rank_part + resid).min(axis=1)


def _ref_riemann(covers, cells: int) -> tuple[float, float]:
    """Lower and upper Riemann sums of ``int sqrt(sum H)`` over ``[top e^-60, top]``, ``cells`` cells equal in
    ``u = log(top / eps)`` (numpy): each cell at its larger radius (lower) and at its smaller one (upper)."""
    top = float(sn.dudley_top())
    eps = top * np.exp(-np.linspace(0.0, 60.0, cells + 1))
    f, w = np.sqrt(sum(c(eps) for c in covers)), eps[:-1] - eps[1:]
    return float((f[:-1] * w).sum()), float((f[1:] * w).sum())


def _ref_select_integral(f) -> float:
    """The integral the selection rule scores with: composite Gauss-Legendre on ``u`` in ``[0, 60]``, as many
    panels and nodes as the rule states (numpy's nodes)."""
    top = float(sn.dudley_top())
    x, w = np.polynomial.legendre.leggauss(_net._GL_NODES)
    e = np.linspace(0.0, _net._U_MAX, _net._SELECT_PANELS + 1)
    u = ((e[:-1] + e[1:])[:, None] + (e[1:] - e[:-1])[:, None] * x[None, :]).ravel() / 2
    wu = ((e[1:] - e[:-1])[:, None] * w[None, :]).ravel() / 2
    eps = top * np.exp(-u)
    return float((np.sqrt(f(eps)) * eps * wu).sum())


_DEBUG = False


def grid_check(seed: int) -> tuple[float, float, int]:
    """network_bound with a sequence length against a recomputation: every table entry (levels, indices,
    P, log b, union costs) and the capacity (relative errors), and each matrix's index against the best
    by the stated score ``24 I + 3 sqrt(c / 2)`` computed independently (``chosen / best``)."""
    gen = torch.Generator().manual_seed(seed)
    err, sel, n = 0.0, 1.0, 0
    for i in range(12):
        L, H, N, d = 1 + i % 2, 1 + (i // 2) % 2, 4 + i % 2, 6
        sc = float(torch.empty(1).uniform_(0.02, 0.4 if i < 4 else 2.0, generator=gen))
        mats = (
            [[_rand_mat(gen, N, N, sc) for _ in range(H)] for _ in range(L)],
            [[_rand_mat(gen, N, N, sc) for _ in range(H)] for _ in range(L)],
            [_rand_mat(gen, N, d, sc) for _ in range(L)],
            [_rand_mat(gen, d, N, sc) for _ in range(L)],
        )
        kw = dict(
            margin=float(torch.empty(1).uniform_(0.05, 2.0, generator=gen)),
            input_radius=float(torch.empty(1).uniform_(0.3, 2.0, generator=gen)),
            levels_per_efold=int(torch.randint(2, 10, (1,), generator=gen)),
        )
        T = int(torch.randint(2, 512, (1,), generator=gen))
        if (
            i >= 4
        ):  # short sequences, wide margins: the cost term decides, near-ties between indices
            kw["margin"] = 10 ** float(torch.empty(1).uniform_(2.0, 5.0, generator=gen))
            T = int(torch.randint(2, 5, (1,), generator=gen))
        r = _net.network_bound(TransformerWeights.from_proxy_matrices(*mats), seq_len=T, **kw)
        recs = _ref_matrices(mats, **kw)
        m = math.ceil(L + math.log(max(N, 2)))
        grid = [j / m for j in range(2 * m + 1)]
        covers = []
        for row, rec in zip(r.table.to_dict("records"), recs):
            R, q = min(rec["rows"], rec["cols"]), row["p"]
            scores = {}
            for pg in grid:
                if pg == 0:
                    level, cost = rec["rank"], math.log(R)
                else:
                    kM = math.ceil(
                        kw["levels_per_efold"] * math.log(float((rec["sv"] ** pg).sum())) - 1e-12
                    )
                    level, cost = math.exp(kM / kw["levels_per_efold"]), -math.log(_prior(kM))
                f = lambda e, pg=pg, level=level, rec=rec: _ref_entropy(  # noqa: E731
                    e / math.exp(rec["log_scale"]),
                    p=pg,
                    level=level,
                    s=rec["s"],
                    rows=rec["rows"],
                    cols=rec["cols"],
                    T=T,
                    rank=rec["rank"],
                )
                scores[pg] = (
                    24 * _ref_select_integral(f) + 3 * math.sqrt(cost / 2),
                    level,
                    cost,
                    f,
                )
            _, level, cost, f = scores[min(grid, key=lambda g: abs(g - q))]
            covers.append(f)
            full = q > 0
            P = (rec["rows"] + rec["cols"] + 1) * (R if full else rec["rank"])
            lb = math.log(9 * rec["s"] * math.sqrt(R if full else rec["rank"])) + rec["log_scale"]
            union = math.log(len(grid)) + cost - math.log(_prior(rec["k"]))
            for got, want in (
                (row["spectral_level"], rec["s"]),
                (row["log_scale"], rec["log_scale"]),
                (row["level"], level),
                (row["P"], P),
                (row["log_b"], lb),
                (row["union_cost"], union),
            ):
                err = max(err, abs(got - want) / max(abs(want), 1e-300))
                if _DEBUG and abs(got - want) > 1e-9 * max(abs(want), 1e-300):
                    print(row["kind"], q, got, want)
            best = min(v[0] for v in scores.values())
            sel = max(sel, scores[min(grid, key=lambda g: abs(g - q))][0] / best)
            n += 1
        # above the certified lower sum on a grid twice as fine; the stated upper sum recomputed (the closed
        # form at p = 0 everywhere: at most the finer grid's upper sum)
        low, up = (12 * v for v in _ref_riemann(covers, 2 * _net.UPPER_SUM_CELLS))
        cap = up if r.closed_form else 12 * _ref_riemann(covers, _net.UPPER_SUM_CELLS)[1]
        dev = r.capacity / cap - 1.0 if r.closed_form else abs(r.capacity - cap) / cap
        err = max(err, dev, low / r.capacity - 1.0)
        if _DEBUG:
            print("cap", r.capacity, cap)
    return err, sel, n


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


def _hybrid_ratios(gen, *, improper: float = 1.0, split: bool = False) -> list[tuple[str, float]]:
    """Worst ratios, one per matrix position, of the hybrid step of lem-p-hybrid-step on one instance:
    earlier matrices replaced by cover-like elements (``M_in``'s scaled into its level, or ``improper`` times
    it), the matrix changed by ``Delta``, later ones unchanged; the bound reads the production sensitivities."""
    layers, B_X, X = _hybrid_instance(gen)
    L, H = len(layers), len(layers[0][0])
    flat = _flat_mats(layers)
    s = [
        _spec(W) * math.exp(float(torch.rand(1, generator=gen)) * 0.1) for W in flat
    ]  # levels >= norms
    order = _net.matrix_order(L, H)
    hat = []
    for (l, h, kind), W, lvl in zip(order, flat, s):
        E = W + _rand_mat(gen, *W.shape, 0.3 * lvl)
        if (
            kind == "M_in"
        ):  # a proper element: within the level (or, for the demonstration, outside it)
            E = E / max(_spec(E) / lvl, 1.0) * improper
        hat.append(E)
    lv = lambda k: [x for (ll, hh, kk), x in zip(order, s) if kk == k]  # noqa: E731
    sq = torch.tensor(lv("QK"), dtype=DT).view(L, H)
    svv = torch.tensor(lv("V"), dtype=DT).view(L, H)
    sens = _net.network_sensitivities(
        sq,
        svv,
        torch.tensor(lv("M_in"), dtype=DT),
        torch.tensor(lv("M_out"), dtype=DT),
        input_radius=B_X,
    )
    ratios = []
    for j, (l, h, kind) in enumerate(order):
        D = _rand_mat(
            gen, *flat[j].shape, float(torch.empty(1).uniform_(0.01, 1.0, generator=gen)) * s[j]
        )
        a = _rebuild(layers, list(hat[:j]) + [flat[j]] + flat[j + 1 :])
        b = _rebuild(layers, list(hat[:j]) + [flat[j] + D] + flat[j + 1 :])
        lhs = (
            (_forward(X, a) - _forward(X, b)).norm(dim=-1).amax(dim=-1)
        )  # max over tokens, per sequence
        Z = _forward(X, a[:l]) if l else X
        _, u, hidden = _layer_parts(Z, *a[l])
        vec = {"QK": Z, "V": Z, "M_in": u, "M_out": hidden}[kind]
        meas = (vec @ D).norm(dim=-1).amax(dim=-1)
        rhs = math.exp(float(sens["log_alpha"][j] + sens["log_sens"][j])) * meas
        radius = float(vec.norm(dim=-1).max()) / math.exp(
            float(sens["log_radius"][j])
        )  # |v_t| <= B_a
        ratios.append(
            (kind, max(float((lhs / rhs).max()), radius))
            if not split
            else (kind, float((lhs / rhs).max()))
        )
    return ratios


def _hybrid_check(seed: int) -> tuple[float, int]:
    gen = torch.Generator().manual_seed(seed)
    worst, n = 0.0, 0
    for _ in range(60):
        r = [x for _, x in _hybrid_ratios(gen)]
        worst, n = max(worst, max(r)), n + len(r)
    return max(worst, qk_adversarial_ratio()), n + 1


def improper_violation(seed: int = 0, factor: float = 3.0, trials: int = 40) -> float:
    """The worst ratio of the ``M_out`` line when ``M_in``'s element has ``factor`` times its level (the book
    shows it exceeds 1: the proper cover is needed)."""
    gen = torch.Generator().manual_seed(seed)
    worst = 0.0
    for _ in range(trials):
        worst = max([worst] + [x for k, x in _hybrid_ratios(gen, improper=factor) if k == "M_out"])
    return worst
