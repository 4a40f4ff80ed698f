"""Independent float64 references for the Part III proxies of BERT-style state dicts (numpy SVDs of the
raw matrices), shared by the tests of the bounds, the families and the analysis."""

from __future__ import annotations
import math
import numpy as np
import torch


RTOL = 1e-9


COLUMNS = [
    "rank",
    "spectral_norm",
    "frobenius_norm",
    "nuclear_norm",
    "norm_21",
    "log_alpha",
    "gamma",
    "log_scale",
    "p_opt",
    "contribution",
]


def reference_matrices(sd: dict, H: int, layers: list[int], attention_scale=False, prefix=""):
    """[(layer, head, kind, dense float64 numpy matrix)] in the authors' order (extract.py)."""
    out = []
    for li, i in enumerate(layers):
        g = lambda n: np.asarray(sd[f"{prefix}encoder.layer.{i}.{n}.weight"], dtype=np.float64)  # noqa: E731
        q, k, v, o = (
            g("attention.self.query"),
            g("attention.self.key"),
            g("attention.self.value"),
            g("attention.output.dense"),
        )
        N = q.shape[1]
        dh = N // H
        for h in range(H):
            s = slice(h * dh, (h + 1) * dh)
            qk = q[s, :].T @ k[s, :]
            if attention_scale:
                qk = qk / math.sqrt(dh)
            out.append((li, h, "QK", qk))
            out.append((li, h, "V", v[s, :].T @ o.T[s, :]))
        out.append((li, -1, "M_in", g("intermediate.dense").T))
        out.append((li, -1, "M_out", g("output.dense").T))
    return out


def numpy_svdvals(W):
    return np.linalg.svd(W, compute_uv=False)


def torch_svdvals(W):
    """A full dense float64 SVD of one matrix (torch, like the authors' code; single-threaded here)."""
    return torch.linalg.svdvals(torch.from_numpy(np.ascontiguousarray(W))).numpy()


def reference_proxies(
    mats, N, L_phi=1.13, rank_tol=1e-10, mode="exact", grid_m=None, svd=numpy_svdvals
):
    """Both proxies from dense matrices; ``mode="authors"`` keeps sub-threshold values for p > 0."""
    rows = []
    for l, h, kind, W in mats:
        s = svd(W)
        rows.append(
            dict(layer=l, head=h, kind=kind, s=s, n21=float(np.linalg.norm(W, axis=0).sum()))
        )
    L = 1 + max(r["layer"] for r in rows)
    C2 = {(r["layer"], r["head"], r["kind"]): float(r["s"][0]) for r in rows}
    heads = sorted({r["head"] for r in rows if r["head"] >= 0})
    lam = []
    for l in range(L):
        hs = sum(C2[(l, h, "V")] * (1 + 4 * C2[(l, h, "QK")]) for h in heads)
        lam.append(L_phi * C2[(l, -1, "M_in")] * C2[(l, -1, "M_out")] * hs)
    log_alpha = [sum(math.log(lam[k]) for k in range(l + 1, L)) for l in range(L)]
    m = math.ceil(L + math.log(max(N, 2))) if grid_m is None else grid_m
    grid = [j / m for j in range(2 * m + 1)]
    table = {c: [] for c in COLUMNS}
    terms = []
    total = 0.0
    for r in rows:
        l, h, kind, s = r["layer"], r["head"], r["kind"], r["s"]
        cin, cout = C2[(l, -1, "M_in")], C2[(l, -1, "M_out")]
        if kind == "QK":
            gamma = 2 * C2[(l, h, "V")] * cout * cin
        elif kind == "V":
            gamma = cout * cin
        elif kind == "M_in":
            gamma = cout
        else:
            gamma = 1.0
        log_scale = max(
            math.log(gamma) + log_alpha[l] + math.log(L), math.log(np.finfo(float).tiny)
        )
        thr = rank_tol * len(s) * max(float(s[0]), 1.0)
        rank = int(np.sum(s > thr))
        kept = s[s > thr] if mode == "exact" else s[s > 0]
        row_terms = []
        for p in grid:
            M = rank if p == 0 else float(np.sum(kept**p))
            # T(p) = M^(1/(p+2)) scale^(p/(p+2)) N^((p+1)/(p+2)), through logs because scale overflows
            row_terms.append(
                math.exp((math.log(M) + p * log_scale + (p + 1) * math.log(N)) / (p + 2))
                if M > 0
                else 0.0
            )
        j = int(np.argmin(row_terms))
        terms.append(row_terms)
        total += row_terms[j]
        kept_t = s[s > thr] if mode == "exact" else s
        for c, val in (
            ("rank", rank),
            ("spectral_norm", s[0]),
            ("frobenius_norm", np.sqrt(np.sum(kept_t**2))),
            ("nuclear_norm", np.sum(kept_t)),
            ("norm_21", r["n21"]),
            ("log_alpha", log_alpha[l]),
            ("gamma", gamma),
            ("log_scale", log_scale),
            ("p_opt", grid[j]),
            ("contribution", row_terms[j]),
        ):
            table[c].append(float(val))
    ours = total + math.sqrt(L)
    # Edelman-style proxy
    log_parts = []
    for l in range(L):
        cin, cout = C2[(l, -1, "M_in")], C2[(l, -1, "M_out")]
        n21 = {(r["head"], r["kind"]): r["n21"] for r in rows if r["layer"] == l}
        xi = sum(
            (cout * cin * C2[(l, h, "V")] * n21[(h, "QK")]) ** (2 / 3)
            + (cout * cin * n21[(h, "V")]) ** (2 / 3)
            for h in heads
        )
        xi += (cout * n21[(-1, "M_in")]) ** (2 / 3) + n21[(-1, "M_out")] ** (2 / 3)
        log_parts.append(2 / 3 * log_alpha[l] + math.log(xi))
    mx = max(log_parts)
    log_sum = mx + math.log(sum(math.exp(x - mx) for x in log_parts))
    edel_log = (
        1.5 * (log_sum + math.log1p(math.exp(-log_sum)))
        if log_sum > 0
        else 1.5 * math.log1p(math.exp(log_sum))
    )
    return {
        "ours": ours,
        "edelman_log": edel_log,
        "table": table,
        "terms": np.array(terms),
        "grid": grid,
    }


def random_state_dict(L, H, dh, F, seed, std=0.3, prefix=""):
    g = torch.Generator().manual_seed(seed)
    N = H * dh
    sd = {}
    for i in range(L):
        for n, shp in (
            ("attention.self.query", (N, N)),
            ("attention.self.key", (N, N)),
            ("attention.self.value", (N, N)),
            ("attention.output.dense", (N, N)),
            ("intermediate.dense", (F, N)),
            ("output.dense", (N, F)),
        ):
            sd[f"{prefix}encoder.layer.{i}.{n}.weight"] = (
                torch.randn(*shp, generator=g, dtype=torch.float64) * std
            )
    return sd, {
        "hidden_size": N,
        "num_attention_heads": H,
        "intermediate_size": F,
        "num_hidden_layers": L,
    }


def rel(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    den = np.maximum(np.abs(a), np.abs(b))
    return float(np.max(np.where(den > 0, np.abs(a - b) / np.where(den > 0, den, 1.0), 0.0)))


def assert_matches(report, edel, ref, rtol=RTOL, columns=COLUMNS):
    assert rel(report.value, ref["ours"]) <= rtol
    assert rel(edel.log_value, ref["edelman_log"]) <= rtol
    for c in columns:
        assert rel(report.table[c].to_numpy(float), ref["table"][c]) <= rtol, c
