"""The spectrum-adaptive post hoc proxy of Sakai & Imaizumi (2026) and their Edelman-style proxy.

Book: :ref:`ch-sakai-trained` (Part III). Every definition follows the authors' public code
(``bounds.py``; see the digest, sections 3.3-3.5), evaluated in float64 and in log space:

* ``C_2`` is the spectral norm of a matrix (its largest singular value).
* Per-layer Lipschitz factor ``lambda_k = L_phi C2(M_in,k) C2(M_out,k) sum_h C2(V_k,h) (1 + 4 C2(QK_k,h))``
  and ``alpha_l = prod_{k > l} lambda_k`` (``alpha`` of the last layer is 1): :func:`layer_alpha`.
* ``gamma = 2 C2(V) C2(M_out) C2(M_in)`` for ``QK`` (same head), ``C2(M_out) C2(M_in)`` for ``V``,
  ``C2(M_out)`` for ``M_in``, ``1`` for ``M_out`` (no ``L_phi``, as in the authors' code):
  :func:`matrix_gamma`.
* ``scale = gamma * alpha_l * L``.
* Per-matrix term ``T(p) = (||W||_{S_p}^p)^{1/(p+2)} scale^{p/(p+2)} N^{(p+1)/(p+2)}``
  (``||W||_{S_0}^0`` is the numerical rank; ``N`` is the hidden width, also for the feed-forward
  matrices): :func:`log_contribution`; minimised over the grid ``{0, 1/m, ..., 2}``,
  ``m = ceil(L + ln max(N, 2))``: :func:`p_grid`.
* ``B_ours = sum of the minima + sqrt(L)``: :func:`spectral_adaptive_bound`.
* ``B_Edelman = (1 + sum_l alpha_l^{2/3} xi_l)^{3/2}``: :func:`edelman_proxy`.

Every constant here (``1.13``, the ``4`` in ``1 + 4 C2``, the ``2`` in ``gamma``, the grid rule and the
exponents of ``T(p)``) is derived or checked in :mod:`genbound.symbolic.spectral_bound`, and a test
compares the two.

Two modes. ``mode="exact"`` (default): head spectra from thin-QR cores, certified feed-forward spectra,
and singular values at or below the numerical-rank threshold ``tol * min(rows, cols) * max(sigma_1, 1)``
(``tol = max(rank_tol, eps)`` of the spectra's dtype, :func:`genbound.spectra.rank_threshold`) are
exact zeros for every ``p``. ``mode="authors"``: dense products and a full SVD, and the threshold is
applied only at ``p = 0`` (so the round-off noise floor of rank-deficient products enters the Schatten
sums for ``p > 0``, exactly as in the authors' code). Precomputed :class:`~genbound.weights.Spectra`
carry the method they were computed with; a mode that does not match it (``"authors"`` on exact
``method="core"`` spectra, or ``"exact"`` on dense ones) raises instead of reporting a mode that was
not used.

Table convention: feed-forward rows have ``head = -1`` (:data:`genbound.weights.MLP_HEAD`).

>>> import torch
>>> from genbound.bounds.sakai_imaizumi import p_grid
>>> p_grid(6, 384).shape[0], float(p_grid(6, 384)[1])        # m = ceil(6 + ln 384) = 12
(25, 0.08333333333333333)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd
import torch

from .._validate import check_positive_int, check_real
from ..errors import InputError, ParameterError
from ..spectra import DEFAULT_RANK_TOL, rank_threshold
from ..weights import KINDS, MLP_HEAD, Spectra, TransformerWeights, load_weights

__all__ = [
    "L_PHI",
    "ATTENTION_QK_FACTOR",
    "GAMMA_QK_FACTOR",
    "grid_m",
    "p_grid",
    "log_layer_lipschitz",
    "log_layer_alpha",
    "layer_alpha",
    "matrix_gamma",
    "log_schatten_grid",
    "log_contribution",
    "layer_table",
    "SpectralBoundReport",
    "EdelmanProxyReport",
    "spectral_adaptive_bound",
    "edelman_proxy",
]

#: Lipschitz constant of GELU used by the authors (``sup GELU' = 1.1289...`` rounded up).
L_PHI = 1.13
#: The ``4`` in a head's Lipschitz factor ``C2(V) (1 + 4 C2(QK))`` (softmax constant 2 x two inputs).
ATTENTION_QK_FACTOR = 4.0
#: The ``2`` in ``gamma(QK) = 2 C2(V) C2(M_out) C2(M_in)`` (the softmax constant).
GAMMA_QK_FACTOR = 2.0

_MODES = ("exact", "authors")
#: The spectra method each mode needs.
_METHOD_OF_MODE = {"exact": "core", "authors": "dense"}


def grid_m(n_layers: int, hidden: int) -> int:
    """The grid resolution ``m = ceil(L + ln max(N, 2))`` of the authors' code.

    >>> grid_m(12, 768), grid_m(2, 128), grid_m(6, 384)
    (19, 7, 12)
    """
    L = check_positive_int(n_layers, "n_layers")
    N = check_positive_int(hidden, "hidden")
    return int(math.ceil(L + math.log(max(N, 2))))


def p_grid(n_layers: int, hidden: int, grid_m: int | None = None, *, device=None) -> torch.Tensor:
    """The Schatten indices ``{0, 1/m, 2/m, ..., 2}`` (``2m + 1`` points, float64).

    ``grid_m`` overrides ``m``; by default ``m = ceil(L + ln max(N, 2))`` (:func:`grid_m`).

    >>> p_grid(1, 2, grid_m=2).tolist()
    [0.0, 0.5, 1.0, 1.5, 2.0]
    """
    m = _grid_m(n_layers, hidden) if grid_m is None else check_positive_int(grid_m, "grid_m")
    return torch.arange(2 * m + 1, dtype=torch.float64, device=device) / m


_grid_m = grid_m


def log_layer_lipschitz(C2_qk, C2_v, C2_in, C2_out, *, L_phi: float = L_PHI) -> torch.Tensor:
    """``log lambda_k`` with ``lambda_k = L_phi C2(M_in,k) C2(M_out,k) sum_h C2(V_k,h)(1 + 4 C2(QK_k,h))``.

    ``C2_qk``, ``C2_v`` have shape ``(L, H)``; ``C2_in``, ``C2_out`` shape ``(L,)``.
    """
    L_phi = check_real(L_phi, "L_phi", lo=0.0, lo_open=True)
    head_sum = (C2_v * (1.0 + ATTENTION_QK_FACTOR * C2_qk)).sum(dim=-1)
    return math.log(L_phi) + C2_in.log() + C2_out.log() + head_sum.log()


def log_layer_alpha(C2_qk, C2_v, C2_in, C2_out, *, L_phi: float = L_PHI) -> torch.Tensor:
    """``log alpha_l = sum_{k > l} log lambda_k`` for every layer ``l`` (0 for the last layer)."""
    lam = log_layer_lipschitz(C2_qk, C2_v, C2_in, C2_out, L_phi=L_phi)
    # suffix sums excluding the layer itself; lam is never +inf, so no inf - inf appears
    later = torch.cat([lam[1:], lam.new_zeros(1)])
    return torch.flip(torch.cumsum(torch.flip(later, [0]), 0), [0])


def layer_alpha(C2_qk, C2_v, C2_in, C2_out, *, L_phi: float = L_PHI) -> torch.Tensor:
    """``alpha_l = prod_{k > l} L_phi C2(M_in,k) C2(M_out,k) sum_h C2(V_k,h) (1 + 4 C2(QK_k,h))``.

    May overflow to ``inf`` on real weights; use :func:`log_layer_alpha` for the logarithm.

    >>> import torch
    >>> one = torch.ones(3, 1, dtype=torch.float64)
    >>> layer_alpha(one, one, one[:, 0], one[:, 0], L_phi=1.0).tolist()   # each layer: 1 * (1 + 4)
    [25.0, 5.0, 1.0]
    """
    return log_layer_alpha(C2_qk, C2_v, C2_in, C2_out, L_phi=L_phi).exp()


def matrix_gamma(C2_qk, C2_v, C2_in, C2_out) -> dict[str, torch.Tensor]:
    """``gamma`` of every matrix: ``{"QK": (L,H), "V": (L,H), "M_in": (L,), "M_out": (L,)}``.

    ``gamma(QK) = 2 C2(V) C2(M_out) C2(M_in)`` (same head), ``gamma(V) = C2(M_out) C2(M_in)``,
    ``gamma(M_in) = C2(M_out)``, ``gamma(M_out) = 1``.

    >>> import torch
    >>> g = matrix_gamma(torch.tensor([[1.0]]), torch.tensor([[3.0]]), torch.tensor([5.0]), torch.tensor([7.0]))
    >>> [g[k].flatten().item() for k in ("QK", "V", "M_in", "M_out")]
    [210.0, 35.0, 7.0, 1.0]
    """
    mlp = (C2_out * C2_in).unsqueeze(-1)
    return {
        "QK": GAMMA_QK_FACTOR * C2_v * mlp,
        "V": mlp.expand_as(C2_v).clone(),
        "M_in": C2_out.clone(),
        "M_out": torch.ones_like(C2_out),
    }


def log_schatten_grid(svals: torch.Tensor, p: torch.Tensor, *, size: int, rank_tol: float = DEFAULT_RANK_TOL,
                      mode: str = "exact") -> torch.Tensor:
    """``log ||W||_{S_p}^p`` for a stack of spectra ``(..., k)`` and a grid ``p`` ``(P,)`` -> ``(..., P)``.

    ``size`` is ``min(rows, cols)`` of the matrices (the threshold's size; ``k`` may be smaller when
    the remaining singular values are exact zeros). ``p = 0`` gives the log numerical rank. In
    ``"exact"`` mode values at or below the threshold are zeros for every ``p``; in ``"authors"`` mode
    only for ``p = 0``.

    >>> import torch
    >>> s = torch.tensor([2.0, 1e-20], dtype=torch.float64)
    >>> log_schatten_grid(s, torch.tensor([0.0, 1.0], dtype=torch.float64), size=2).exp().tolist()
    [1.0, 2.0]
    """
    s = svals
    thr = rank_threshold(s, rank_tol=rank_tol, size=size).unsqueeze(-1)
    above = s > thr
    kept = above if mode == "exact" else s > 0
    log_s = torch.where(kept, s, torch.ones_like(s)).log()
    terms = p.view(*([1] * s.ndim), -1) * log_s.unsqueeze(-1)  # (..., k, P)
    terms = terms.masked_fill(~kept.unsqueeze(-1), -math.inf)
    out = torch.logsumexp(terms, dim=-2)
    log_rank = above.sum(dim=-1).to(s.dtype).log()  # -inf for a zero matrix
    return torch.where(p == 0, log_rank.unsqueeze(-1), out)


def log_contribution(log_spow, log_scale, N, p) -> torch.Tensor:
    """``log T(p) = [log M + p log scale + (p + 1) log N] / (p + 2)``, broadcast over matrices x grid.

    ``log_spow`` is ``log ||W||_{S_p}^p`` with a trailing grid axis, ``log_scale`` has the matrix
    shape (a trailing axis is added), ``p`` is the grid. Exponents ``1/(p+2)``, ``p/(p+2)``,
    ``(p+1)/(p+2)`` (:func:`genbound.symbolic.spectral_bound.term_exponents`).

    >>> import torch, math
    >>> p = torch.tensor([0.0, 2.0], dtype=torch.float64)
    >>> log_M = torch.tensor([[3.0, 5.0]], dtype=torch.float64).log()          # ||W||_{S_p}^p at p = 0, 2
    >>> lt = log_contribution(log_M, torch.tensor([math.log(4.0)], dtype=torch.float64), 12, p)
    >>> [round(v, 12) for v in lt.exp().flatten().tolist()]   # sqrt(3 * 12), (5 * 16 * 12**3) ** (1/4)
    [6.0, 19.282282054672]
    """
    log_N = math.log(N)
    ls = torch.as_tensor(log_scale).unsqueeze(-1)
    return (log_spow + p * ls + (p + 1.0) * log_N) / (p + 2.0)


# --------------------------------------------------------------------------------------------------
# reports


@dataclass(frozen=True)
class SpectralBoundReport:
    """Result of :func:`spectral_adaptive_bound`.

    ``value``: ``B_ours = sum_matrices min_p T(p) + sqrt(L)``. ``table``: one row per matrix (columns
    ``layer, head, kind, rows, cols, rank, spectral_norm, frobenius_norm, nuclear_norm, norm_21, alpha,
    log_alpha, gamma, scale, log_scale, p_opt, contribution, route``; ``head = -1`` for ``M_in``/``M_out``;
    ``route`` says how the matrix's spectrum was computed, see ``Spectra.routes``;
    ``alpha``/``scale`` may be ``inf`` in float64, their logs are finite). ``p`` is the grid and
    ``log_terms`` the ``(matrices, P)`` tensor of ``log T(p)`` with rows in table order (per layer:
    ``QK`` and ``V`` of head 0, of head 1, ..., then ``M_in``, ``M_out``, as in the authors'
    extraction); :attr:`grid` gives it as a long DataFrame for p-contribution curves.
    """

    value: float
    table: pd.DataFrame
    p: torch.Tensor
    log_terms: torch.Tensor
    n_layers: int
    hidden: int
    grid_m: int
    L_phi: float
    rank_tol: float
    mode: str
    spectra: Spectra = field(repr=False)

    @property
    def grid(self) -> pd.DataFrame:
        """Long table ``layer, head, kind, p, log_term, term, ratio_to_p0`` (every matrix x every p)."""
        lt = self.log_terms.detach().cpu()
        P = lt.shape[1]
        rows = self.table[["layer", "head", "kind"]].loc[self.table.index.repeat(P)].reset_index(drop=True)
        rows["p"] = self.p.cpu().repeat(lt.shape[0]).numpy()
        rows["log_term"] = lt.reshape(-1).numpy()
        rows["term"] = lt.exp().reshape(-1).numpy()
        rows["ratio_to_p0"] = (lt - lt[:, :1]).exp().reshape(-1).numpy()
        return rows

    def summary(self) -> str:
        n = len(self.table)
        at0 = int((self.table["p_opt"] == 0).sum())
        return (f"spectral-adaptive proxy B = {self.value:.6g} over {n} matrices (L = {self.n_layers}, "
                f"N = {self.hidden}, grid m = {self.grid_m}, mode {self.mode}); p_opt = 0 for {at0} of {n}")


@dataclass(frozen=True)
class EdelmanProxyReport:
    """Result of :func:`edelman_proxy`: ``value`` (may be ``inf`` in float64), ``log_value`` (finite),
    and a per-layer ``table`` (``layer, log_lipschitz, alpha, log_alpha, xi, log_xi``)."""

    value: float
    log_value: float
    table: pd.DataFrame
    n_layers: int
    L_phi: float

    def summary(self) -> str:
        return (f"Edelman-style proxy = {self.value:.6g} (log = {self.log_value:.6g}) over "
                f"{self.n_layers} layers")


# --------------------------------------------------------------------------------------------------
# evaluation on weights


def _get_spectra(weights, *, device, mode, progress=False) -> Spectra:
    if mode not in _MODES:
        raise ParameterError(f"mode must be one of {_MODES}, got {mode!r}")
    method = _METHOD_OF_MODE[mode]
    if isinstance(weights, Spectra):
        if weights.method != method:
            raise ParameterError(
                f"mode={mode!r} needs spectra computed with method={method!r}, but these were computed with "
                f"method={weights.method!r}; pass the weights themselves, or spectra from "
                f"weights.spectra(method={method!r})")
        return weights.to(device) if device is not None else weights
    if not isinstance(weights, TransformerWeights):
        weights = load_weights(weights)
    return weights.spectra(device=device, method=method, progress=progress)


def _c2(sp: Spectra):
    c = sp.spectral_norms()
    return c["QK"], c["V"], c["M_in"], c["M_out"]


def layer_table(weights, *, L_phi: float = L_PHI, device=None, mode: str = "exact") -> pd.DataFrame:
    """Per-layer spectral norms and Lipschitz factors: ``layer, C2_M_in, C2_M_out, C2_QK_max,
    C2_V_max, head_sum, log_lipschitz, log_alpha, alpha`` (``head_sum = sum_h C2(V)(1 + 4 C2(QK))``)."""
    sp = _get_spectra(weights, device=device, mode=mode)
    qk, v, cin, cout = _c2(sp)
    lam = log_layer_lipschitz(qk, v, cin, cout, L_phi=L_phi)
    la = log_layer_alpha(qk, v, cin, cout, L_phi=L_phi)
    return pd.DataFrame({
        "layer": range(sp.n_layers),
        "C2_M_in": cin.cpu().numpy(), "C2_M_out": cout.cpu().numpy(),
        "C2_QK_max": qk.max(dim=-1).values.cpu().numpy(), "C2_V_max": v.max(dim=-1).values.cpu().numpy(),
        "head_sum": (v * (1 + ATTENTION_QK_FACTOR * qk)).sum(-1).cpu().numpy(),
        "log_lipschitz": lam.cpu().numpy(), "log_alpha": la.cpu().numpy(), "alpha": la.exp().cpu().numpy(),
    })


def _flat(sp: Spectra, per_kind: dict) -> torch.Tensor:
    """Concatenate per-kind tensors (``(L,H,...)`` for heads, ``(L,...)`` for MLP) in table order."""
    parts = []
    for l in range(sp.n_layers):  # small: only reorders already computed numbers
        heads = torch.stack([per_kind["QK"][l], per_kind["V"][l]], dim=1).flatten(0, 1)  # QK h0, V h0, QK h1, ...
        parts += [heads, per_kind["M_in"][l:l + 1], per_kind["M_out"][l:l + 1]]
    return torch.cat(parts)


def spectral_adaptive_bound(weights, *, L_phi: float = L_PHI, grid_m: int | None = None,
                            rank_tol: float = DEFAULT_RANK_TOL, device=None, mode: str = "exact",
                            progress: bool = False) -> SpectralBoundReport:
    """The spectrum-adaptive post hoc proxy ``B_ours`` of Sakai & Imaizumi (2026), :ref:`ch-sakai-trained`.

    ``weights`` is a :class:`~genbound.weights.TransformerWeights`, anything :func:`load_weights`
    accepts, or precomputed :class:`~genbound.weights.Spectra`. All grid points of all matrices are
    evaluated at once in log space. See the module docstring for the definitions and the two modes.

    >>> import torch
    >>> from genbound.weights import TransformerWeights
    >>> A = 2 * torch.eye(4, dtype=torch.float64)
    >>> w = TransformerWeights.from_proxy_matrices([[A]], [[A]], [A], [A])   # one layer, N = 4
    >>> r = spectral_adaptive_bound(w)
    >>> r.table[["kind", "rank", "alpha", "gamma", "p_opt"]].values.tolist()
    [['QK', 4, 1.0, 16.0, 0.0], ['V', 4, 1.0, 4.0, 0.0], ['M_in', 4, 1.0, 2.0, 0.0], ['M_out', 4, 1.0, 1.0, 0.0]]
    >>> round(r.value, 9)   # every matrix at p = 0: 4 * sqrt(rank * N) + sqrt(L)
    17.0
    """
    L_phi = check_real(L_phi, "L_phi", lo=0.0, lo_open=True)
    rank_tol = check_real(rank_tol, "rank_tol", lo=0.0)
    sp = _get_spectra(weights, device=device, mode=mode, progress=progress)
    L, H, N = sp.n_layers, sp.n_heads, sp.hidden
    m = _grid_m(L, N) if grid_m is None else check_positive_int(grid_m, "grid_m")
    p = p_grid(L, N, m, device=sp.device)
    qk, v, cin, cout = _c2(sp)
    log_alpha = log_layer_alpha(qk, v, cin, cout, L_phi=L_phi)  # (L,)
    gam = matrix_gamma(qk, v, cin, cout)
    size = sp.size
    log_M = {k: log_schatten_grid(sp.svals(k), p, size=size[k], rank_tol=rank_tol, mode=mode) for k in KINDS}
    la = {"QK": log_alpha.unsqueeze(-1).expand(L, H), "V": log_alpha.unsqueeze(-1).expand(L, H),
          "M_in": log_alpha, "M_out": log_alpha}
    tiny = math.log(torch.finfo(torch.float64).tiny)
    log_scale = {k: (gam[k].log() + la[k] + math.log(L)).clamp(min=tiny) for k in KINDS}
    log_terms = {k: log_contribution(log_M[k], log_scale[k], N, p) for k in KINDS}
    LT = _flat(sp, log_terms)  # (n_matrices, P)
    best, idx = LT.min(dim=-1)  # argmin: the first (smallest p) on ties, as np.argmin
    contrib = best.exp()
    value = float(contrib.sum().item() + math.sqrt(L))
    # the table
    svals = {k: sp.svals(k) for k in KINDS}
    thr = {k: rank_threshold(svals[k], rank_tol=rank_tol, size=size[k]).unsqueeze(-1) for k in KINDS}
    rank = {k: (svals[k] > thr[k]).sum(-1) for k in KINDS}
    kept = {k: svals[k] if mode == "authors" else torch.where(svals[k] > thr[k], svals[k], 0.0) for k in KINDS}
    fro = {k: torch.linalg.vector_norm(kept[k], dim=-1) for k in KINDS}
    nuc = {k: kept[k].sum(-1) for k in KINDS}
    shape = {"QK": (N, N), "V": (N, N), "M_in": (N, sp.d_ff), "M_out": (sp.d_ff, N)}
    layers, heads, kinds, rows, cols, routes = [], [], [], [], [], []
    order = [(h, k) for h in range(H) for k in ("QK", "V")] + [(MLP_HEAD, "M_in"), (MLP_HEAD, "M_out")]
    for l in range(L):
        for h, k in order:
            layers.append(l), heads.append(h), kinds.append(k)
            rows.append(shape[k][0]), cols.append(shape[k][1]), routes.append(sp.route(k, l))

    def col(d):
        return _flat(sp, d).detach().cpu().numpy()

    log_alpha_m = col(la)
    table = pd.DataFrame({
        "layer": layers, "head": heads, "kind": kinds, "rows": rows, "cols": cols,
        "rank": col(rank).astype(int),
        "spectral_norm": col({k: svals[k][..., 0] for k in KINDS}),
        "frobenius_norm": col(fro), "nuclear_norm": col(nuc),
        "norm_21": col({k: sp.norm21(k) for k in KINDS}),
        "alpha": torch.as_tensor(log_alpha_m).exp().numpy(), "log_alpha": log_alpha_m,
        "gamma": col(gam), "scale": torch.as_tensor(col(log_scale)).exp().numpy(), "log_scale": col(log_scale),
        "p_opt": p[idx].cpu().numpy(), "contribution": contrib.cpu().numpy(), "route": routes,
    })
    return SpectralBoundReport(value=value, table=table, p=p, log_terms=LT, n_layers=L, hidden=N, grid_m=m,
                               L_phi=L_phi, rank_tol=rank_tol, mode=mode, spectra=sp)


def edelman_proxy(weights, *, L_phi: float = L_PHI, device=None, mode: str = "exact",
                  progress: bool = False) -> EdelmanProxyReport:
    """The Edelman-style norm-based proxy ``(1 + sum_l alpha_l^{2/3} xi_l)^{3/2}`` (:ref:`ch-sakai-trained`).

    ``xi_l = sum_h [(C2(M_out) C2(M_in) C2(V) ||QK||_{2,1})^{2/3} + (C2(M_out) C2(M_in) ||V||_{2,1})^{2/3}]
    + (C2(M_out) ||M_in||_{2,1})^{2/3} + ||M_out||_{2,1}^{2/3}`` with ``||A||_{2,1}`` the sum of the
    column l2 norms. Computed in log space; ``value`` is ``inf`` when it exceeds float64 (then use
    ``log_value``), never NaN.

    >>> import torch
    >>> from genbound.weights import TransformerWeights
    >>> I = torch.eye(2, dtype=torch.float64)
    >>> r = edelman_proxy(TransformerWeights.from_proxy_matrices([[I]], [[I]], [I], [I]))
    >>> abs(r.value - (1 + 4 * 2 ** (2 / 3)) ** 1.5) < 1e-12   # alpha = 1, xi = 4 * 2^(2/3)
    True
    """
    L_phi = check_real(L_phi, "L_phi", lo=0.0, lo_open=True)
    sp = _get_spectra(weights, device=device, mode=mode, progress=progress)
    qk, v, cin, cout = _c2(sp)
    lam = log_layer_lipschitz(qk, v, cin, cout, L_phi=L_phi)
    log_alpha = log_layer_alpha(qk, v, cin, cout, L_phi=L_phi)
    lin, lout = cin.log(), cout.log()
    two3 = 2.0 / 3.0
    mlp = (lout + lin).unsqueeze(-1)
    head_terms = torch.cat([two3 * (mlp + v.log() + sp.qk_norm21.log()),
                            two3 * (mlp + sp.v_norm21.log())], dim=-1)  # (L, 2H)
    layer_terms = torch.stack([two3 * (lout + sp.m_in_norm21.log()), two3 * sp.m_out_norm21.log()], dim=-1)
    log_xi = torch.logsumexp(torch.cat([head_terms, layer_terms], dim=-1), dim=-1)  # (L,)
    log_sum = torch.logsumexp(two3 * log_alpha + log_xi, dim=0)
    log_value = float(1.5 * torch.logaddexp(torch.zeros_like(log_sum), log_sum).item())
    if math.isnan(log_value):  # pragma: no cover - guarded by construction
        raise InputError("the Edelman proxy evaluated to NaN; check the weights for degenerate layers")
    value = math.exp(log_value) if log_value < 709.78 else math.inf
    table = pd.DataFrame({
        "layer": range(sp.n_layers), "log_lipschitz": lam.cpu().numpy(),
        "alpha": log_alpha.exp().cpu().numpy(), "log_alpha": log_alpha.cpu().numpy(),
        "xi": log_xi.exp().cpu().numpy(), "log_xi": log_xi.cpu().numpy(),
    })
    return EdelmanProxyReport(value=value, log_value=log_value, table=table, n_layers=sp.n_layers, L_phi=L_phi)
