"""Claims of :ref:`ch-schatten` (``book/part3/schatten.md``; Part III, Schatten quasi-norms).

One concept: the claims of one chapter (the naming scheme of ``genbound.claims``).
"""

from __future__ import annotations

import math
import sys

import torch

from .. import norms as _norms
from ..symbolic import schatten as sym
from . import AllOf, Claim, InequalityCheck, register, scaled

_THIS = sys.modules[__name__]  # mutants patch the right-hand-side functions defined here

CH = "book/part3/schatten.md"
_K = 12  # singular values per random instance


def _spectra(gen: torch.Generator, n: int) -> dict[str, torch.Tensor]:
    """Random spectra of mixed shapes: flat, decaying, low rank with a floor, and heavy tailed."""
    u = torch.rand(n, _K, generator=gen, dtype=torch.float64)
    kind = torch.randint(0, 4, (n, 1), generator=gen)
    scale = 10 ** (4 * torch.rand(n, 1, generator=gen, dtype=torch.float64) - 2)
    idx = torch.arange(1, _K + 1, dtype=torch.float64)
    flat = 0.5 + u
    poly = idx ** (-3 * u[:, :1])
    floor = torch.where(idx <= 3, 1.0 + u, 1e-3 * u)
    heavy = u**6
    s = torch.where(
        kind == 0, flat, torch.where(kind == 1, poly, torch.where(kind == 2, floor, heavy))
    )
    return {
        "s": scale * s,
        "p": 2 * torch.rand(n, generator=gen, dtype=torch.float64),
        "tau": scale[:, 0] * torch.rand(n, generator=gen, dtype=torch.float64) * 1.5 + 1e-6,
    }


def _project(x: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {
        **x,
        "s": x["s"].abs().clamp(min=1e-12),
        "p": x["p"].clamp(0.0, 2.0),
        "tau": x["tau"].abs().clamp(min=1e-9),
    }


def _spow(s: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """``||W||_{S_p}^p`` with one ``p`` per instance: :func:`genbound.norms.log_schatten_power_at` (every
    positive value kept, ``rank_tol = 0``; differentiable)."""
    return _norms.log_schatten_power_at(s, p, rank_tol=0.0).exp()


def counting_bound(s, p, tau):
    """``tau^{-p} ||W||_{S_p}^p``: the right side of :prf:ref:`lem-spectral-counting`."""
    return tau ** (-p) * _spow(s, p)


def residual_bound(s, p, tau):
    """``tau^{2-p} ||W||_{S_p}^p``: the right side of :prf:ref:`lem-truncation-residual`."""
    return tau ** (2 - p) * _spow(s, p)


def order_rhs(s, p):
    """``||W||_{S_p}``, the right side of :prf:ref:`lem-schatten-order`: :func:`genbound.norms.schatten_norm_at`."""
    return _norms.schatten_norm_at(s, p, rank_tol=0.0)


def rank_factor(rank):
    """``sqrt(rank W)``: the factor of the last link of :prf:ref:`lem-norm-chain`."""
    return rank.sqrt()


STABLE_RANK_LOWER = 1.0  #: the lower end of :prf:ref:`lem-stable-rank`


def _counting_ratio(s, p, tau):
    count = (s > tau.unsqueeze(-1)).to(s.dtype).sum(-1)
    return count / _THIS.counting_bound(s, p, tau)


def _residual_ratio(s, p, tau):
    small = torch.where(s <= tau.unsqueeze(-1), s, torch.zeros_like(s))
    return (small**2).sum(-1) / _THIS.residual_bound(s, p, tau)


def _order_ratio(s, p, tau):
    # ||W||_{S_q} <= ||W||_{S_p} for p <= q; use q = p + (2 - p) * tau/(1 + tau) in (p, 2]
    q = p + (2 - p) * tau / (1 + tau)
    p_ = p.clamp(min=1e-3)
    first = _norms.schatten_norm_at(s, q, rank_tol=0.0) / _THIS.order_rhs(s, p_)
    # second statement: for ||W||_2 <= 1, p -> ||W||_{S_p}^p is non-increasing: sum s^q <= sum s^p
    t = s / _norms.spectral_norm(s).unsqueeze(-1)
    second = _spow(t, q) / _spow(t, p_)
    return torch.maximum(first, second)


def _chain_ratio(s, p, tau):
    # all three links: ||W||_2 <= ||W||_F <= ||W||_* <= sqrt(rank) ||W||_F, rank = number of s_i > 0
    rank = _norms.schatten_power_at(s, torch.zeros_like(s[..., 0]), rank_tol=0.0)
    fro, nuc, op = _norms.frobenius_norm(s), _norms.nuclear_norm(s), _norms.spectral_norm(s)
    links = torch.stack([op / fro, fro / nuc, nuc / (_THIS.rank_factor(rank) * fro)])
    return links.amax(0)


def _stable_rank_ratio(s, p, tau):
    # both ends: 1 <= ||W||_F^2 / ||W||_2^2 <= rank
    rank = _norms.schatten_power_at(s, torch.zeros_like(s[..., 0]), rank_tol=0.0)
    sr = _norms.stable_rank(s, rank_tol=0.0)
    return torch.maximum(sr / rank, _THIS.STABLE_RANK_LOWER / sr)


def _low_rank(gen, n):
    """Spectra with one dominant value, or all equal: the extremal cases of the first links and of the
    lower end of the stable rank."""
    x = _spectra(gen, n)
    u = torch.rand(n, _K, generator=gen, dtype=torch.float64)
    spike = torch.where(torch.arange(_K) == 0, torch.ones_like(u), 1e-4 * u)
    x["s"] = (
        torch.where((torch.arange(n) % 2 == 0)[:, None], spike, torch.ones_like(u)) * x["s"][:, :1]
    )
    return x


register(
    Claim(
        label="lem-spectral-counting",
        statement="#{i : sigma_i > tau} <= tau^{-p} ||W||_{S_p}^p for every tau > 0 and p in [0, 2]",
        chapter=CH,
        provenance="standard",
        numeric=InequalityCheck(_spectra, _counting_ratio, _project),
        symbolic=sym.verify_markov_step,
        covers=("genbound.norms.log_schatten_power_at",),
        mutants=(
            scaled(
                _THIS, "counting_bound", 0.5, name="rhs-halved", what="tau^{-p} ||W||_{S_p}^p / 2"
            ),
        ),
    )
)

register(
    Claim(
        label="lem-truncation-residual",
        statement="sum_{sigma_i <= tau} sigma_i^2 <= tau^{2-p} ||W||_{S_p}^p for tau > 0 and p in [0, 2]",
        chapter=CH,
        provenance="standard",
        numeric=InequalityCheck(_spectra, _residual_ratio, _project),
        symbolic=sym.verify_power_split,
        covers=("genbound.norms.log_schatten_power_at",),
        mutants=(
            scaled(
                _THIS, "residual_bound", 0.5, name="rhs-halved", what="tau^{2-p} ||W||_{S_p}^p / 2"
            ),
        ),
    )
)

register(
    Claim(
        label="lem-schatten-order",
        statement="||W||_{S_q} <= ||W||_{S_p} whenever 0 < p <= q <= 2; if ||W||_2 <= 1, p -> ||W||_{S_p}^p "
        "is non-increasing on [0, 2]",
        chapter=CH,
        provenance="standard",
        numeric=InequalityCheck(_spectra, _order_ratio, _project),
        symbolic=sym.verify_decreasing_in_p,
        covers=(
            "genbound.norms.schatten_norm_at",
            "genbound.norms.log_schatten_power_at",
            "genbound.norms.spectral_norm",
        ),
        mutants=(
            scaled(
                _THIS,
                "order_rhs",
                0.5,
                name="rhs-halved",
                what="||W||_{S_p} taken as half its value",
            ),
        ),
    )
)

register(
    Claim(
        label="lem-norm-chain",
        statement="||W||_2 <= ||W||_F <= ||W||_* <= sqrt(rank W) ||W||_F",
        chapter=CH,
        provenance="standard",
        numeric=AllOf(
            (
                InequalityCheck(_spectra, _chain_ratio, _project),
                InequalityCheck(_low_rank, _chain_ratio, _project, trials=500, starts=4, steps=20),
            )
        ),
        covers=(
            "genbound.norms.spectral_norm",
            "genbound.norms.frobenius_norm",
            "genbound.norms.nuclear_norm",
            "genbound.norms.schatten_power_at",
        ),
        mutants=(
            scaled(
                _THIS,
                "rank_factor",
                0.5,
                name="sqrt-rank-halved",
                what="||W||_* <= sqrt(rank)/2 ||W||_F",
            ),
        ),
    )
)

register(
    Claim(
        label="lem-stable-rank",
        statement="1 <= stable rank ||W||_F^2 / ||W||_2^2 <= rank W for W != 0",
        chapter=CH,
        provenance="standard",
        numeric=AllOf(
            (
                InequalityCheck(_spectra, _stable_rank_ratio, _project),
                InequalityCheck(
                    _low_rank, _stable_rank_ratio, _project, trials=500, starts=4, steps=20
                ),
            )
        ),
        covers=("genbound.norms.stable_rank", "genbound.norms.schatten_power_at"),
        mutants=(
            scaled(
                _THIS, "STABLE_RANK_LOWER", 2.0, name="lower-end-doubled", what="stable rank >= 2"
            ),
        ),
    )
)


# =========================================================================== computed spectra and norms
# Two-sided checks: every value genbound.spectra / genbound.norms returns equals an independent evaluation
# (numpy's LAPACK SVD and norms of the dense matrix, the stated formulas in numpy). Each comparison has its
# own tolerance ``tol`` (relative to the scale named); the check's ratio is ``1 + EQ_RTOL * excess`` with
# ``excess = max error / (tol * scale)``, so the claim passes exactly when every comparison is within its
# tolerance, and a constant loosened or tightened by any factor above ``1 + tol`` fails.

import numpy as np  # noqa: E402

from .. import spectra as _sv  # noqa: E402
from . import FunctionCheck, replaced  # noqa: E402
from ._part3 import EQ_RTOL, _Excess  # noqa: E402

_U = 2.0**-53
_EPS64 = float(np.finfo(np.float64).eps)
_BOOK_RANK_TOL = 1e-10  #: the default relative rank tolerance the book states (ch-schatten)
_BOOK_CERT_RTOL = 1e-10  #: the default certified accuracy the book states
_BOOK_GRAM_CHUNK = 256  #: rows per Gram chunk (the chunk enters the rounding count k)
_BOOK_EIGH_FACTOR = 2.0  #: c in the eigensolver's backward error c n eps ||G||


def _np_svd(W):
    return np.linalg.svd(np.asarray(W, dtype=np.float64), compute_uv=False)


def _np_threshold(s, size, rank_tol=_BOOK_RANK_TOL, eps=_EPS64):
    tol = max(rank_tol, eps) if rank_tol else 0.0
    return tol * size * max(float(np.max(s)) if s.size else 0.0, 1.0)


def _test_matrices(gen: torch.Generator):
    """Random and adversarial matrices: Gaussian of several shapes, low rank plus a floor just above and
    just below the rank threshold, huge and tiny scales, repeated values, a zero matrix, one row."""
    F = torch.float64
    mats = []
    for shape in ((7, 5), (5, 9), (6, 6), (1, 4), (12, 3)):
        mats.append(
            torch.randn(*shape, generator=gen, dtype=F)
            * 10 ** float(torch.empty(1).uniform_(-2, 2, generator=gen))
        )
    A = torch.randn(8, 2, generator=gen, dtype=F) @ torch.randn(2, 8, generator=gen, dtype=F)
    Q1 = torch.linalg.qr(torch.randn(8, 8, generator=gen, dtype=F)).Q
    Q2 = torch.linalg.qr(torch.randn(8, 8, generator=gen, dtype=F)).Q
    for floor in (
        1e-7,
        1e-12,
    ):  # 8 * 1e-10 * sigma_1 is the threshold: one floor above it, one below
        s = torch.tensor([3.0, 2.0, 1.0] + [floor] * 5, dtype=F)
        mats.append(Q1 @ torch.diag(s) @ Q2.T)
    mats += [
        A * 1e120,
        A * 1e-120,
        Q1 @ torch.diag(torch.tensor([2.0] * 4 + [1.0] * 4, dtype=F)) @ Q2.T,
        torch.zeros(4, 6, dtype=F),
        Q1[:, :5] * 0.3,
    ]
    return mats


def _spectra_check(seed: int) -> tuple[float, int]:
    gen = torch.Generator().manual_seed(seed)
    ex = _Excess()
    # singular values of dense matrices
    for W in _test_matrices(gen):
        want = _np_svd(W)
        top = max(float(want[0]), 1e-300)
        ex.close(
            _sv.singular_values(W, device="cpu"), want, 1e-12, scale=top, what="singular_values"
        )
        thr = _np_threshold(want, min(W.shape))
        ex.close(_sv.rank_threshold(torch.as_tensor(want)), thr, 1e-14, what="rank_threshold")
        ex.close(
            _sv.rank_threshold(torch.as_tensor(want), rank_tol=3e-9, size=3),
            _np_threshold(want, 3, 3e-9),
            1e-14,
            what="rank_threshold(rank_tol, size)",
        )
        ex.close(
            _sv.threshold_spectrum(torch.as_tensor(want)),
            np.where(want > thr, want, 0.0),
            1e-15,
            scale=top,
            what="threshold_spectrum",
        )
        ex.close(
            _sv.numerical_rank(torch.as_tensor(want)),
            float(np.sum(want > thr)),
            1e-15,
            scale=1.0,
            what="numerical_rank",
        )
    # float32 spectra use float32's epsilon
    s32 = torch.tensor([1.0, 1e-6, 1e-8], dtype=torch.float32)
    eps32 = float(np.finfo(np.float32).eps)
    ex.close(_sv.rank_threshold(s32), eps32 * 3, 1e-6, what="rank_threshold float32")
    ex.close(
        _sv.effective_rank_tol(1e-10, torch.float64),
        _BOOK_RANK_TOL,
        1e-15,
        what="effective_rank_tol",
    )
    ex.close(
        _sv.effective_rank_tol(1e-10, torch.float32),
        eps32,
        1e-15,
        what="effective_rank_tol float32",
    )
    ex.close(
        _sv.effective_rank_tol(0.0, torch.float32),
        0.0,
        1e-15,
        scale=1.0,
        what="effective_rank_tol(0)",
    )
    ex.close(
        _sv.rank_threshold(torch.tensor([0.5, 0.25], dtype=torch.float64)),
        _BOOK_RANK_TOL * 2,
        1e-14,
        what="rank_threshold max(sigma_1, 1)",
    )
    # products from thin factors: exact zeros beyond the inner size, the rest as numpy's SVD of the product
    for rows, r, cols in ((30, 3, 20), (9, 2, 40), (5, 6, 4), (6, 6, 6), (12, 1, 12)):
        Lf = torch.randn(rows, r, generator=gen, dtype=torch.float64)
        Rf = torch.randn(r, cols, generator=gen, dtype=torch.float64)
        got = _sv.product_singular_values(Lf, Rf, device="cpu")
        want = _np_svd((Lf @ Rf).numpy())
        k = min(rows, r, cols)
        ex.close(got[:k], want[:k], 1e-11, scale=want[0], what="product_singular_values")
        ex.holds(got.shape[-1] == min(rows, cols) and bool((got[k:] == 0).all()), "product zeros")
    batch = _sv.product_singular_values(
        torch.randn(3, 10, 2, generator=gen, dtype=torch.float64),
        torch.randn(3, 2, 7, generator=gen, dtype=torch.float64),
        device="cpu",
    )
    ex.holds(tuple(batch.shape) == (3, 7), "batched product shape")
    # the certified route: values, the certificate (it holds, and it equals its formula), the route rule
    certs = [
        torch.randn(300, 24, generator=gen, dtype=torch.float64),  # > one Gram chunk: gram
        torch.randn(24, 300, generator=gen, dtype=torch.float64) * 1e3,  # wide: transposed
        torch.randn(40, 40, generator=gen, dtype=torch.float64),  # square
        torch.randn(200, 70, generator=gen, dtype=torch.float64),  # >= 64 columns: blocked Gram
        torch.randn(60, 12, generator=gen, dtype=torch.float64)
        @ torch.diag(torch.logspace(0, -7, 12, dtype=torch.float64)),
    ]
    for A in certs:
        c = _sv.certified_singular_values(A)
        want = _np_svd(A.numpy())
        ex.close(c.svals, want, 1e-9, what=f"certified values ({c.route})")
        T = A.numpy() if A.shape[0] >= A.shape[1] else A.numpy().T
        m, n = T.shape
        k = min(_BOOK_GRAM_CHUNK, m) + -(-m // _BOOK_GRAM_CHUNK)
        gam = k * _U / (1 - k * _U)
        absT = np.abs(T)
        dG = gam * float((absT.T @ absT.sum(axis=1)).max()) * (1 + 2 * (m + n) * _U)
        ex.close(_sv.gram_error_bound(torch.as_tensor(T)), dG, 1e-12, what="gram_error_bound")
        G = _sv.gram_matrix(torch.as_tensor(T))
        ex.close(G, T.T @ T, 1.0, scale=dG, what="gram_matrix within its bound")
        lam = np.linalg.eigvalsh(T.T @ T)
        cn = _BOOK_EIGH_FACTOR * n * _EPS64
        delta = dG + cn * float(np.abs(lam).max()) / (1 - cn)
        lo = float(lam.min())
        want_b = (1 / math.sqrt(1 - delta / lo) - 1 + 2 * _U) if lo > delta else math.inf
        ex.close(c.rel_err_bound, want_b, 1e-6, what="certified bound formula")
        ex.close(
            _sv.gram_certificate(torch.as_tensor(lam), delta),
            want_b,
            1e-12,
            what="gram_certificate",
        )
        ex.holds(
            (c.route == "gram") == (want_b <= _BOOK_CERT_RTOL),
            f"route rule ({c.route}, bound {want_b:.3g})",
        )
        if c.route == "gram":
            err = np.abs(c.svals.numpy() - want) / want
            ex.close(
                err.max(), 0.0, 1.0, scale=c.rel_err_bound, what="certified error within the bound"
            )
    # a long Gram bound: gamma_k = k u / (1 - k u) and the (1 + 2 (m + n) u) inflation are visible at 1e-14
    for m_, n_ in ((20000, 60), (2000, 300), (600, 2)):
        T = torch.rand(m_, n_, generator=gen, dtype=torch.float64) - 0.3
        Tn = np.abs(T.numpy())
        k = min(_BOOK_GRAM_CHUNK, m_) + -(-m_ // _BOOK_GRAM_CHUNK)
        want = (
            k * _U / (1 - k * _U) * float((Tn.T @ Tn.sum(axis=1)).max()) * (1 + 2 * (m_ + n_) * _U)
        )
        ex.close(_sv.gram_error_bound(T), want, 1e-14, what="gram_error_bound (wide)")
    ex.close(
        _sv.gram_certificate(torch.tensor([1.0, 2.0], dtype=torch.float64), 1.5),
        math.inf,
        1.0,
        what="gram_certificate inf",
    )
    # a matrix whose Gram certificate lies between the default rtol and twice it: the route must fall back
    Q = torch.linalg.qr(torch.randn(80, 10, generator=gen, dtype=torch.float64)).Q
    lo_g, hi_g = 0.0, 8.0
    for _ in range(40):
        g = (lo_g + hi_g) / 2
        b = _sv.certified_singular_values(
            Q @ torch.diag(torch.logspace(0, -g, 10, dtype=torch.float64)), route="gram"
        ).rel_err_bound
        lo_g, hi_g = (g, hi_g) if b < 1.5 * _BOOK_CERT_RTOL else (lo_g, g)
    Mx = Q @ torch.diag(torch.logspace(0, -lo_g, 10, dtype=torch.float64))
    cb = _sv.certified_singular_values(Mx)
    ex.holds(
        _BOOK_CERT_RTOL < cb.rel_err_bound <= 2 * _BOOK_CERT_RTOL and cb.route == "qr-svd",
        f"borderline route ({cb.route}, {cb.rel_err_bound:.3g})",
    )
    ex.close(cb.svals, _np_svd(Mx.numpy()), 1e-9, what="borderline values")
    ex.raises(
        lambda: _sv.certified_singular_values(torch.randn(4, 3, dtype=torch.float32)),
        Exception,
        "float32 refused",
    )
    return ex.ratio()


def _norms_check(seed: int) -> tuple[float, int]:
    gen = torch.Generator().manual_seed(seed)
    ex = _Excess()
    grid = np.array([0.0, 0.1, 0.5, 1.0, 1.3, 2.0])
    for W in _test_matrices(gen):
        Wn = W.numpy()
        s_np = _np_svd(Wn)
        s = torch.as_tensor(s_np)
        size = min(W.shape)
        thr = _np_threshold(s_np, size)
        kept = s_np[s_np > thr]
        top = float(s_np[0]) if s_np.size else 0.0
        with np.errstate(divide="ignore"):
            logs = np.log(kept)
            want_log = np.array(
                [
                    np.log(np.sum(np.exp(q * logs - (q * logs).max()))) + (q * logs).max()
                    if kept.size
                    else -np.inf
                    for q in grid
                ]
            )
        ex.close(
            _norms.log_schatten_power(s, torch.as_tensor(grid)),
            want_log,
            1e-12,
            scale=np.maximum(np.abs(want_log), 1.0),
            what="log_schatten_power grid",
        )
        for q, wl in zip(grid, want_log):
            ex.close(
                _norms.log_schatten_power(s, float(q)),
                wl,
                1e-12,
                scale=max(abs(wl), 1.0) if np.isfinite(wl) else 1.0,
                what="log_schatten_power scalar",
            )
        if kept.size and np.all(np.isfinite(want_log)) and np.max(np.abs(want_log)) < 600:
            ex.close(
                _norms.schatten_power(s, torch.as_tensor(grid)),
                np.exp(want_log),
                1e-12,
                what="schatten_power",
            )
            want_norm = np.where(
                grid > 0, np.exp(want_log / np.where(grid > 0, grid, 1.0)), kept.size
            )
            ex.close(
                _norms.schatten_norm(s, torch.as_tensor(grid)),
                want_norm,
                1e-12,
                what="schatten_norm",
            )
            ex.close(
                _norms.schatten_norm_at(s.expand(len(grid), -1), torch.as_tensor(grid)),
                want_norm,
                1e-12,
                what="schatten_norm_at",
            )
        ex.close(
            _norms.log_schatten_power_at(s.expand(len(grid), -1), torch.as_tensor(grid)),
            want_log,
            1e-12,
            scale=np.maximum(np.abs(want_log), 1.0) if kept.size else 1.0,
            what="log_schatten_power_at",
        )
        # rank_tol = 0 keeps every positive value; size enters the threshold
        pos = s_np[s_np > 0]
        if pos.size:
            ex.close(
                _norms.log_schatten_power(s, 0.0, rank_tol=0.0),
                math.log(pos.size),
                1e-12,
                scale=1.0,
                what="log_schatten_power(rank_tol=0)",
            )
        thr3 = _np_threshold(s_np, 3 * size)
        n3 = int(np.sum(s_np > thr3))
        ex.close(
            _norms.schatten_power(s, 0.0, size=3 * size),
            float(n3),
            1e-12,
            scale=1.0,
            what="schatten_power(size)",
        )
        if top > 0 and top < 1e100:
            ex.close(_norms.spectral_norm(s), np.linalg.norm(Wn, 2), 1e-12, what="spectral_norm")
            ex.close(
                _norms.frobenius_norm(s), np.linalg.norm(Wn, "fro"), 1e-12, what="frobenius_norm"
            )
            ex.close(_norms.nuclear_norm(s), np.linalg.norm(Wn, "nuc"), 1e-12, what="nuclear_norm")
            sr = float(np.sum(kept**2) / kept[0] ** 2) if kept.size else 0.0
            ex.close(_norms.stable_rank(s), sr, 1e-12, scale=max(sr, 1.0), what="stable_rank")
        for pq in ((1, 1), (2, 1), (2, 2), (3, 1.5), (1, math.inf), (math.inf, 2), ("inf", 1)):
            pp = math.inf if pq[0] == "inf" else pq[0]
            cols = np.linalg.norm(Wn, ord=pp, axis=0)
            want = np.linalg.norm(cols, ord=pq[1])
            if np.isfinite(want) and want < 1e100:
                ex.close(
                    _norms.group_norm(W, *pq),
                    want,
                    1e-12,
                    scale=max(want, 1e-300),
                    what=f"group_norm{pq}",
                )
        want21, want11 = np.linalg.norm(Wn, axis=0).sum(), np.abs(Wn).sum()
        if want11 < 1e100:
            ex.close(_norms.norm_21(W), want21, 1e-12, scale=max(want21, 1e-300), what="norm_21")
            ex.close(_norms.norm_11(W), want11, 1e-12, scale=max(want11, 1e-300), what="norm_11")
    ex.close(
        _norms.stable_rank(torch.zeros(3, dtype=torch.float64)),
        0.0,
        1.0,
        scale=1.0,
        what="stable_rank(0)",
    )
    # gradients in the singular values (the norms are documented differentiable): d||s||_p / ds_i =
    # s_i^(p-1) ||s||_p^(1-p) for p > 0, and 0 at p = 0 (the rank is locally constant), in numpy
    for shape in ((6, 4), (3, 9)):
        s_np = _np_svd(torch.randn(*shape, generator=gen, dtype=torch.float64).numpy()) + 0.1
        gp = grid[grid != 1.3]
        norm = np.array([np.sum(s_np**q) ** (1 / q) if q > 0 else 0.0 for q in gp])
        want = np.array(
            [
                s_np ** (q - 1) * nq ** (1 - q) if q > 0 else np.zeros_like(s_np)
                for q, nq in zip(gp, norm)
            ]
        )
        sb = torch.tensor(np.tile(s_np, (len(gp), 1)), requires_grad=True)
        _norms.schatten_norm_at(sb, torch.as_tensor(gp)).sum().backward()
        ex.close(
            sb.grad,
            want,
            1e-12,
            scale=np.maximum(np.abs(want), 1.0),
            what="schatten_norm_at gradient",
        )
        for q, wq in zip(gp, want):
            sq = torch.tensor(s_np, requires_grad=True)
            _norms.schatten_norm(sq, float(q)).backward()
            ex.close(
                sq.grad,
                wq,
                1e-12,
                scale=np.maximum(np.abs(wq), 1.0),
                what=f"schatten_norm gradient p={q}",
            )
    for bad in (-0.1, 2.0 + 1e-9, 4.0, float("nan")):
        ex.raises(
            lambda b=bad: _norms.schatten_power(torch.ones(2, dtype=torch.float64), b),
            Exception,
            f"p={bad}",
        )
        ex.raises(
            lambda b=bad: _norms.log_schatten_power_at(
                torch.ones(1, 2, dtype=torch.float64), torch.tensor([b], dtype=torch.float64)
            ),
            Exception,
            f"p_at={bad}",
        )
    ex.raises(lambda: _norms.group_norm(torch.ones(2, 2), 0.5, 1), Exception, "group p < 1")
    ex.raises(
        lambda: _norms.schatten_power(torch.tensor([1.0, -1.0]), 1.0), Exception, "negative svals"
    )
    return ex.ratio()


register(
    Claim(
        label="prop-computed-spectra",
        statement="genbound's singular values (dense, thin-factor products, certified) equal numpy's LAPACK SVD "
        "of the dense matrix; the rank threshold is max(rank_tol, eps) min(rows, cols) max(sigma_1, 1); "
        "the Gram certificate equals its formula, holds, and decides the route at rtol 1e-10",
        chapter=CH,
        provenance="standard",
        numeric=FunctionCheck(_spectra_check),
        rtol=EQ_RTOL,
        covers=(
            "genbound.spectra.singular_values",
            "genbound.spectra.product_singular_values",
            "genbound.spectra.effective_rank_tol",
            "genbound.spectra.rank_threshold",
            "genbound.spectra.threshold_spectrum",
            "genbound.spectra.numerical_rank",
            "genbound.spectra.certified_singular_values",
            "genbound.spectra.gram_matrix",
            "genbound.spectra.gram_error_bound",
            "genbound.spectra.gram_certificate",
        ),
        mutants=(
            scaled(
                _sv,
                "rank_threshold",
                2.0,
                name="rank-threshold-doubled",
                what="the numerical-rank threshold doubled",
            ),
            replaced(
                _sv,
                "EIGH_BACKWARD_FACTOR",
                lambda old: old * 2,
                name="eigh-factor-doubled",
                what="the eigensolver's backward-error factor c = 2 doubled",
            ),
            scaled(
                _sv,
                "gram_error_bound",
                0.5,
                name="gram-bound-halved",
                what="the Gram rounding bound halved",
            ),
        ),
    )
)


def _rank_branch_divides(logp, p):
    """A wrong :func:`genbound.norms._norm_from_power` (mutant): ``logp / p`` is formed at ``p = 0`` too and then
    discarded by ``where``; the values are unchanged, but the gradient is ``0 * inf = NaN`` there."""
    return torch.where(p > 0, (logp / torch.where(p >= 0, p, torch.ones_like(p))).exp(), logp.exp())


register(
    Claim(
        label="prop-computed-norms",
        statement="genbound's Schatten powers and norms (any p in [0, 2], rank at p = 0), spectral, Frobenius and "
        "nuclear norms, stable rank and (p, q) group norms equal their definitions on numpy's SVD and "
        "norms of the dense matrix, with values at or below the rank threshold as zeros; the gradients "
        "of the Schatten norms in the singular values equal s_i^(p-1) ||s||_p^(1-p) (0 at p = 0); p outside "
        "[0, 2] is refused",
        chapter=CH,
        provenance="standard",
        numeric=FunctionCheck(_norms_check),
        rtol=EQ_RTOL,
        covers=(
            "genbound.norms.log_schatten_power",
            "genbound.norms.log_schatten_power_at",
            "genbound.norms.schatten_power",
            "genbound.norms.schatten_norm",
            "genbound.norms.schatten_norm_at",
            "genbound.norms.spectral_norm",
            "genbound.norms.frobenius_norm",
            "genbound.norms.nuclear_norm",
            "genbound.norms.stable_rank",
            "genbound.norms.group_norm",
            "genbound.norms.norm_21",
            "genbound.norms.norm_11",
        ),
        mutants=(
            scaled(
                _norms, "nuclear_norm", 1.5, name="nuclear-loosened", what="nuclear norm times 3/2"
            ),
            scaled(
                _norms,
                "log_schatten_power",
                1.0 + 1e-6,
                name="log-power-off",
                what="log ||W||_{S_p}^p off by a relative 1e-6",
            ),
            replaced(
                _norms, "P_MAX", lambda old: 4.0, name="p-range-widened", what="p up to 4 accepted"
            ),
            replaced(
                _norms,
                "_norm_from_power",
                lambda old: _rank_branch_divides,
                name="rank-branch-divides",
                what="the p = 0 branch also divides log rank by p = 0: the same values, NaN gradients",
            ),
        ),
    )
)
