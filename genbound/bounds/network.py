"""The proved network bound of Part III (theorem P, :prf:ref:`thm-p-network`, book: :ref:`ch-sa-deep`).

A bound on the generalization gap of the ramp loss of the reference transformer
(:prf:ref:`def-sa-reference-model`) whose every constant is proved in the book, evaluated post hoc: each of the
``K = (2H + 2) L`` matrices picks, after training, a Schatten index ``p`` on the authors' grid, a level of its
Schatten power (or of its rank at ``p = 0``) and a level of its spectral norm, and the union bound over these
choices is paid in nats (:func:`log_level_prior`).

Premises (fixed before the sample is drawn): ``n`` i.i.d. pairs ``(X, y)``, ``y`` in ``{-1, +1}``, ``X`` of
at most ``seq_len`` tokens whose rows have norm at most ``input_radius``; a readout that is 1-Lipschitz from
the max-row norm to the reals; the ramp loss of margin ``margin``; confidence ``1 - delta``.

Steps (each a claim of :ref:`ch-sa-deep`): the matrices are replaced one at a time in a fixed hybrid order
(per head ``QK`` then ``V``, then ``M_in``, ``M_out``, layer by layer, :func:`matrix_order`), so every
sensitivity is read from spectral *levels* of matrices not yet replaced, except ``M_out``'s, which reads the
level of ``M_in``'s cover element: that cover is proper, at twice the cost (:data:`PROPER_COVER_FACTOR`).
Per matrix, the distance is the sample's root mean square of the max over tokens of ``|v_t Delta|``
(:func:`network_sensitivities` gives the sensitivity per unit of it, the radius of the vectors ``v_t`` and
the peeling factor ``alpha``); the radius ``eps`` of the loss class is split equally over the ``K`` matrices.
Each matrix's entropy is a rank-``r`` net (:func:`genbound.covering.rank_net_log_cover`) plus, at ``p > 0``, a
Sudakov cover of the spectral residual (:func:`genbound.covering.sudakov_log_cover`), with ``r`` chosen at every
scale (:func:`matrix_log_cover`). Dudley's integral runs from 0 to ``1/4`` with the entropies summed under one
square root: in closed form when every matrix sits at ``p = 0`` (:func:`p0_dudley_integral`), otherwise by an
upper Riemann sum (:func:`quadrature_dudley_integral`): every entropy falls as ``eps`` grows, so the value at
each cell's smaller radius bounds the cell, and the sum is an upper bound on the integral, not an estimate.

The gap at ``n`` is ``2 capacity / sqrt(n) + 3 sqrt((log(2/delta) + union_cost) / (2n))`` with
``capacity = 12 int_0^{1/4} sqrt(H(eps)) d eps`` (:func:`genbound.rademacher.generalization_gap_bound`).

>>> import torch
>>> from genbound.weights import TransformerWeights
>>> A = 2 * torch.eye(4, dtype=torch.float64)
>>> r = network_bound(TransformerWeights.from_proxy_matrices([[A]], [[A]], [A], [A]), n_samples=10**9)
>>> r.table[["kind", "rank", "p"]].values.tolist()
[['QK', 4, 0.0], ['V', 4, 0.0], ['M_in', 4, 0.0], ['M_out', 4, 0.0]]
>>> round(r.capacity, 3), r.trivial              # 12 * sqrt(4 * 36) * G(1/4) with b the same for all
(108.829, False)

One concept: the proved network bound and its result object.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial
from typing import Callable

import numpy as np
import pandas as pd
import torch

from .. import covering as _cov
from .. import rademacher as _rad
from .. import schatten_entropy as _se
from .._validate import check_positive_int, check_real
from ..errors import InputError
from ..weights import KINDS, MLP_HEAD, Spectra, TransformerWeights
from ._result import BoundResult
from .sakai_imaizumi import grid_m as _grid_m
from .sakai_imaizumi import p_grid

__all__ = [
    "LOSS_CENTER_RADIUS",
    "PROPER_COVER_FACTOR",
    "PIECE_SPLIT",
    "DEFAULT_LEVELS_PER_EFOLD",
    "LOWEST_LEVEL_EFOLDS",
    "PREMISES",
    "dudley_top",
    "matrix_order",
    "matrix_count",
    "total_union_cost",
    "level_index",
    "log_level_prior",
    "network_sensitivities",
    "matrix_log_cover",
    "p0_dudley_integral",
    "quadrature_dudley_integral",
    "NetworkBound",
    "network_bound",
]

#: ``c`` of :prf:ref:`thm-dudley` for ramp losses: every loss lies within ``1/2`` of ``g_0 = 1/2``.
LOSS_CENTER_RADIUS = 0.5
#: Only ``M_in``'s cover must be proper; a proper ``eps``-cover is built from an ``eps/2``-cover.
PROPER_COVER_FACTOR = 2.0
#: At ``p > 0`` the radius is split equally between the rank part and the residual (Minkowski sum).
PIECE_SPLIT = 2.0
#: ``J``: spectral and Schatten levels are ``exp(k / J)``, ``k`` an integer.
DEFAULT_LEVELS_PER_EFOLD = 8
#: Levels below ``exp(-50)`` are not used (a smaller norm is placed at that level).
LOWEST_LEVEL_EFOLDS = 50
#: The premises, one line (printed with every headline of the bound).
PREMISES = (
    "reference architecture (no residual, no LayerNorm; rows projected to the unit ball after attention and "
    "after the feed-forward block); i.i.d. sequences of at most T tokens with rows of norm <= B_X; a "
    "1-Lipschitz readout of the max-row norm; ramp loss of margin gamma; confidence 1 - delta"
)

_GL_NODES = 8  # Gauss-Legendre nodes per panel
UPPER_SUM_CELLS = (
    16_384  # cells of the upper Riemann sum, equal in u = log(top / eps) on [0, _U_MAX]
)
_U_MAX = 60.0  # below eps = top e^{-60} the full-rank entropy bounds every class (closed form)
_SELECT_PANELS = (
    40  # coarser panels for choosing p (any choice is valid: the union bound pays for all)
)
_RANK_CANDIDATES = (
    48  # ranks tried at p > 0 (a subset: a minimum over fewer ranks is still an upper bound)
)


def dudley_top() -> float:
    """``c / 2 = 1/4``: the upper limit of Dudley's integral for ramp losses (:prf:ref:`thm-dudley`)."""
    return LOSS_CENTER_RADIUS / 2


def matrix_order(n_layers: int, n_heads: int) -> list[tuple[int, int, str]]:
    """The hybrid order ``(layer, head, kind)``: per head ``QK`` then ``V``, then ``M_in``, ``M_out``, layer by
    layer (feed-forward rows have ``head = -1``). It is the table order of the proxy as well.

    >>> matrix_order(1, 2)
    [(0, 0, 'QK'), (0, 0, 'V'), (0, 1, 'QK'), (0, 1, 'V'), (0, -1, 'M_in'), (0, -1, 'M_out')]
    """
    out = []
    for l in range(n_layers):
        for h in range(n_heads):
            out += [(l, h, "QK"), (l, h, "V")]
        out += [(l, MLP_HEAD, "M_in"), (l, MLP_HEAD, "M_out")]
    return out


def matrix_count(n_layers: int, n_heads: int) -> int:
    """``K = (2H + 2) L``: the matrices the radius is split over (``QK`` and ``V`` of every head, ``M_in`` and
    ``M_out`` of every layer).

    >>> matrix_count(6, 12)
    156
    """
    return (2 * n_heads + 2) * n_layers


def total_union_cost(costs) -> float:
    """``-log pi(theta) = sum_a -log pi_a(theta_a)``: the prior is a product over the matrices, so the union
    bound's cost is the sum of every matrix's cost (nats)."""
    return float(sum(costs))


def level_index(x, levels_per_efold: int) -> torch.Tensor:
    """``k = ceil(J log x)``, the least level ``exp(k / J) >= x`` (at least ``-50 J``; ``x = 0`` gets it)."""
    t = torch.as_tensor(x, dtype=torch.float64)
    J = float(levels_per_efold)
    k = torch.ceil(J * t.clamp(min=math.exp(-LOWEST_LEVEL_EFOLDS)).log() - 1e-12)
    return k.clamp(min=-LOWEST_LEVEL_EFOLDS * J).to(torch.int64)


def log_level_prior(k) -> torch.Tensor:
    """``log pi(k)`` of the prior on the integers: ``pi(0) = 1/2``, ``pi(k) = 1 / (2 (|k|+1)(|k|+2))``
    (it sums to 1: :prf:ref:`lem-p-prior`).

    >>> [round(float(log_level_prior(k).exp()), 6) for k in (0, 1, -1, 2)]
    [0.5, 0.083333, 0.083333, 0.041667]
    """
    a = torch.as_tensor(k, dtype=torch.float64).abs()
    rest = -math.log(2.0) - (a + 1).log() - (a + 2).log()
    return torch.where(a == 0, torch.full_like(a, -math.log(2.0)), rest)


def network_sensitivities(
    s_qk, s_v, s_in, s_out, *, input_radius: float = 1.0, L_phi: float = _se.L_PHI
) -> dict[str, torch.Tensor]:
    """Per matrix, in :func:`matrix_order`: ``log_alpha`` (peeling through the later layers), ``log_sens``
    (the layer's sensitivity per unit of the max-over-tokens of ``|v_t Delta|``) and ``log_radius`` (the
    norm bound ``B_a`` of those vectors), from spectral levels ``s_*`` (``(L, H)`` and ``(L,)``)
    (:prf:ref:`lem-p-hybrid-step`). With ``b`` the radius of the layer's input rows (``input_radius`` for the
    first layer, 1 after a projection): ``QK``: ``2 L_phi s_V s_in s_out b^2``, radius ``b``; ``V``:
    ``L_phi s_in s_out``, radius ``b``; ``M_in``: ``L_phi s_out``, radius 1; ``M_out``: 1, radius ``s_in``
    (the level of ``M_in``'s proper cover element)."""
    s_qk, s_v, s_in, s_out = (
        torch.as_tensor(t, dtype=torch.float64) for t in (s_qk, s_v, s_in, s_out)
    )
    L, H = s_qk.shape
    lam = _se.log_layer_lipschitz(s_qk, s_v, s_in, s_out, L_phi=L_phi)
    log_alpha = _se.log_layer_alphas(lam)
    log_b = torch.zeros(L, dtype=torch.float64)
    log_b[0] = math.log(input_radius)
    lphi = math.log(L_phi)
    la, ls, lr = [], [], []
    for l in range(L):
        lin, lout = s_in[l].log(), s_out[l].log()
        for h in range(H):
            la += [log_alpha[l], log_alpha[l]]
            ls += [
                math.log(_se.GAMMA_QK_FACTOR) + lphi + s_v[l, h].log() + lin + lout + 2 * log_b[l],
                lphi + lin + lout,
            ]
            lr += [log_b[l], log_b[l]]
        la += [log_alpha[l], log_alpha[l]]
        ls += [lphi + lout, torch.zeros((), dtype=torch.float64)]
        lr += [torch.zeros((), dtype=torch.float64), lin]
    return {
        k: torch.stack([torch.as_tensor(x) for x in v])
        for k, v in (("log_alpha", la), ("log_sens", ls), ("log_radius", lr))
    }


def matrix_log_cover(
    eps, *, p, level, s, rows, cols, log_scale, seq_len=None, rank=None
) -> torch.Tensor:
    """``H_a(eps)``: the log-covering number charged to one matrix at loss radius ``eps`` (a tensor), where
    ``log_scale = log(K kappa_a alpha_a sens_a B_a / margin)`` turns ``eps`` into the matrix's share of the
    radius in operator-norm units (:prf:ref:`lem-p-matrix-entropy`).

    ``p = 0``: the class ``rank <= rank``, ``||W||_2 <= s``: the rank net at Frobenius radius ``s sqrt(rank)``.
    ``p > 0``: the class ``||W||_{S_p}^p <= level``, ``||W||_2 <= s``; the minimum over ranks ``r`` of the rank
    net of the top ``r`` directions at half the radius plus Sudakov's cover of the residual, whose spectral
    norm is at most ``min(s, (level / (r + 1))^{1/p})``, at the other half, with the ``sqrt(T)`` of the
    max over ``T`` tokens (``seq_len``)."""
    log_x = (
        torch.as_tensor(eps, dtype=torch.float64).log() - log_scale
    )  # the radius in operator-norm units
    R = min(int(rows), int(cols))
    if p == 0:
        r = max(int(rank), 1)
        return _cov.rank_net_log_cover_log(r, rows, cols, math.log(s * math.sqrt(r)), log_x)
    if seq_len is None:
        raise InputError(
            "a Schatten index p > 0 needs the sequence length (the residual's cover sees T)"
        )
    cand = torch.unique(
        torch.cat([torch.zeros(1), torch.round(torch.logspace(0, math.log10(R), _RANK_CANDIDATES))])
    )
    cand = cand.to(torch.float64).clamp(max=R)
    resid = torch.minimum(torch.full_like(cand, s), (level / (cand + 1)) ** (1.0 / p))
    resid = torch.where(cand >= R, torch.zeros_like(resid), resid)
    split = torch.where(resid > 0, torch.full_like(cand, PIECE_SPLIT), torch.ones_like(cand))
    lx = log_x.unsqueeze(-1)
    rank_part = _cov.rank_net_log_cover_log(cand, rows, cols, (s * cand.sqrt() * split).log(), lx)
    width = _cov.spectral_ball_width(resid, 1.0, rows, cols) * math.sqrt(float(seq_len))
    resid_part = _cov.sudakov_log_cover_log((width * split).log(), lx)
    return (rank_part + resid_part).min(dim=-1).values


def _gamma_32_upper(u: torch.Tensor) -> torch.Tensor:
    """``e^u Gamma(3/2, u) = sqrt(u) + (sqrt(pi)/2) erfcx(sqrt(u))`` for ``u >= 0``."""
    r = u.clamp(min=0).sqrt()
    return r + 0.5 * math.sqrt(math.pi) * torch.special.erfcx(r)


def p0_dudley_integral(P, log_b, top: float | None = None) -> float:
    """``int_0^top sqrt(sum_a P_a log+(b_a / eps)) d eps`` in closed form (:prf:ref:`lem-p-closed-form`).

    On an interval where the set of matrices with ``b_a > eps`` is fixed, the integrand is
    ``sqrt(A log(b* / eps))`` with ``A = sum P_a`` and ``log b* = sum P_a log b_a / A`` over that set, and
    ``int_0^e sqrt(log(b/x)) dx = e [sqrt(u) + (sqrt(pi)/2) erfcx(sqrt(u))]`` with ``u = log(b/e)``. When every
    ``b_a >= top`` this is ``sqrt(A) top [sqrt(u0) + (sqrt(pi)/2) erfcx(sqrt(u0))]``, ``u0 = log(b*/top)``.

    >>> round(p0_dudley_integral([1.0], [0.0], 1.0), 12) == round(math.sqrt(math.pi) / 2, 12)
    True
    """
    top = dudley_top() if top is None else float(top)
    P = torch.as_tensor(P, dtype=torch.float64).flatten()
    lb = torch.as_tensor(log_b, dtype=torch.float64).flatten()
    keep = P > 0
    P, lb = P[keep], lb[keep]
    edges = sorted({math.log(top)} | {float(v) for v in lb if float(v) < math.log(top)})
    total, lo = 0.0, -math.inf  # integrate over (e^lo, e^hi] with the active set {b_a >= e^hi}
    for hi in edges:
        act = lb >= hi
        A = float(P[act].sum())
        if A > 0:
            lbs = float((P[act] * lb[act]).sum()) / A
            part = math.exp(hi) * float(
                _gamma_32_upper(torch.tensor(lbs - hi, dtype=torch.float64))
            )
            if lo > -math.inf:
                part -= math.exp(lo) * float(
                    _gamma_32_upper(torch.tensor(lbs - lo, dtype=torch.float64))
                )
            total += math.sqrt(A) * part
        lo = hi
    return total


def _panels(u_max: float, panels: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Nodes and weights of composite Gauss-Legendre on ``[0, u_max]`` (for choosing indices only)."""
    edges = np.linspace(0.0, u_max, panels + 1)
    x, w = np.polynomial.legendre.leggauss(_GL_NODES)
    a, b = edges[:-1, None], edges[1:, None]
    nodes = (a + b) / 2 + (b - a) / 2 * x[None, :]
    weights = (b - a) / 2 * w[None, :]
    return torch.as_tensor(nodes.ravel()), torch.as_tensor(weights.ravel())


def quadrature_dudley_integral(
    log_covers,
    tail_P,
    tail_log_b,
    *,
    top: float | None = None,
    cells: int = UPPER_SUM_CELLS,
    u_max: float = _U_MAX,
) -> float:
    """An upper bound on ``int_0^top sqrt(sum_a H_a(eps)) d eps`` (``log_covers``: callables
    ``eps -> H_a(eps)``, each non-increasing in ``eps``). On ``[top e^{-u_max}, top]`` (``u_max`` 60): the
    upper Riemann sum over ``cells`` cells equal in ``u = log(top / eps)``, each
    cell charged its width times the integrand at its smaller radius, where the integrand is largest.
    Below: the full-rank entropies ``sum P_a log+(b_a / eps)`` in closed form (:func:`p0_dudley_integral`).
    """
    top = dudley_top() if top is None else float(top)
    u = torch.linspace(0.0, u_max, cells + 1, dtype=torch.float64)
    eps = top * torch.exp(-u)  # decreasing: cell j is [eps[j + 1], eps[j]]
    f = sum(g(eps) for g in log_covers).clamp(min=0).sqrt()
    main = float(((eps[:-1] - eps[1:]) * f[1:]).sum())
    return main + p0_dudley_integral(tail_P, tail_log_b, top * math.exp(-u_max))


@dataclass(frozen=True)
class NetworkBound(BoundResult):
    """Theorem P evaluated on one network: ``capacity = 12 int_0^{1/4} sqrt(H)``, ``union_cost`` (nats),
    ``gap_at(n) = 2 capacity / sqrt(n) + 3 sqrt((log(2/delta) + union_cost) / (2n))``; ``value`` is the gap at
    ``n_samples`` (without one, the capacity: the gap needs a sample size). ``table``: one row per matrix in :func:`matrix_order`."""

    capacity: float
    union_cost: float
    delta: float
    margin: float
    input_radius: float
    seq_len: int | None
    levels_per_efold: int
    grid_m: int
    n_samples: int | None
    table: pd.DataFrame = field(repr=False)
    closed_form: bool = True

    @property
    def value(self) -> float:
        return self.capacity if self.n_samples is None else self.gap_at(self.n_samples)

    def gap_at(self, n: int) -> float:
        n = check_positive_int(n, "n")
        rad = self.capacity / math.sqrt(n)
        conf = math.log(2.0 / self.delta) + self.union_cost  # log(2 / (delta pi(theta)))
        return _rad.GAP_RADEMACHER_COEF * rad + _rad.GAP_CONFIDENCE_COEF * math.sqrt(
            conf / (2.0 * n)
        )

    @property
    def trivial_reason(self) -> str | None:
        if self.n_samples is None:
            return None
        g = self.gap_at(self.n_samples)
        return f"the gap bound {g:.6g} is at or above the loss range 1" if g >= 1.0 else ""

    @property
    def premises(self) -> str:
        """The premises in one line, with this result's numbers."""
        T = "any T" if self.seq_len is None else f"T = {self.seq_len}"
        return (
            f"reference architecture (no residual or LayerNorm); B_X = {self.input_radius:g}; {T}; "
            f"margin {self.margin:g}; delta {self.delta:g}"
        )

    def _dict_fields(self) -> dict:
        return {
            "union_cost": self.union_cost,
            "delta": self.delta,
            "margin": self.margin,
            "input_radius": self.input_radius,
            "seq_len": self.seq_len,
            "levels_per_efold": self.levels_per_efold,
            "grid_m": self.grid_m,
            "closed_form": self.closed_form,
            "premises": self.premises,
        }

    @classmethod
    def examples(cls) -> list["NetworkBound"]:
        A = 2 * torch.eye(4, dtype=torch.float64)
        w = TransformerWeights.from_proxy_matrices([[A]], [[A]], [A], [A])
        return [
            network_bound(w, n_samples=10),
            network_bound(w, n_samples=10**12),
            network_bound(w),
            network_bound(w, n_samples=10**9, seq_len=16),
        ]

    def summary(self) -> str:
        at = (
            "" if self.n_samples is None else f", gap <= {self.value:.4g} at n = {self.n_samples:,}"
        )
        return (
            f"proved capacity {self.capacity:.6g}, union cost {self.union_cost:.6g} nats{at}; "
            f"samples for gap <= 1: {self.samples_needed():.4g}"
        )


def _selection_score(integral: float, level_cost: float) -> float:
    """How a matrix picks its index: ``24 I_a + 3 sqrt(cost_a / 2)``, its Dudley integral and its share of the
    union cost as they enter the gap (up to ``sqrt(n)``). Any choice is covered by the union bound; this one
    is a deterministic function of the weights, made on the coarse quadrature for every index alike."""
    return (
        _rad.GAP_RADEMACHER_COEF * _rad.DUDLEY_INTEGRAL_COEF * integral
        + _rad.GAP_CONFIDENCE_COEF * math.sqrt(level_cost / 2.0)
    )


def _spectra(weights, device) -> Spectra:
    if isinstance(weights, Spectra):
        if weights.method != "core":
            raise InputError(
                "network_bound needs exact spectra (method='core'): pass the weights themselves"
            )
        return weights
    if not isinstance(weights, TransformerWeights):
        raise InputError(
            f"weights must be TransformerWeights or Spectra, got {type(weights).__name__}"
        )
    return weights.spectra(device=device, method="core")


def _rows_cols(kind: str, N: int, d_ff: int) -> tuple[int, int]:
    return {"QK": (N, N), "V": (N, N), "M_in": (N, d_ff), "M_out": (d_ff, N)}[kind]


def network_bound(
    weights,
    n_samples: int | None = None,
    *,
    delta: float = 0.05,
    margin: float = 1.0,
    input_radius: float = 1.0,
    seq_len: int | None = None,
    levels_per_efold: int = DEFAULT_LEVELS_PER_EFOLD,
    L_phi: float = _se.L_PHI,
    grid_m: int | None = None,
    device=None,
) -> NetworkBound:
    """Theorem P (:prf:ref:`thm-p-network`) on a :class:`~genbound.weights.TransformerWeights` (or exact
    :class:`~genbound.weights.Spectra`): with probability ``1 - delta`` the ramp-loss gap of the reference
    model built from these matrices is at most ``result.gap_at(n)``. Without ``seq_len`` only ``p = 0`` is
    used (the bound is then free of the sequence length); with it, every index of the authors' grid, each
    matrix choosing its own by the rule of :prf:ref:`prop-p-network-grid`."""
    delta = check_real(delta, "delta", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    margin = check_real(margin, "margin", lo=0.0, lo_open=True)
    input_radius = check_real(input_radius, "input_radius", lo=0.0, lo_open=True)
    J = check_positive_int(levels_per_efold, "levels_per_efold")
    n_samples = None if n_samples is None else check_positive_int(n_samples, "n_samples")
    seq_len = None if seq_len is None else check_positive_int(seq_len, "seq_len")
    sp = _spectra(weights, device).to("cpu")
    L, H, N, d_ff = sp.n_layers, sp.n_heads, sp.hidden, sp.d_ff
    m = _grid_m(L, N) if grid_m is None else check_positive_int(grid_m, "grid_m")
    grid = [0.0] if seq_len is None else [float(q) for q in p_grid(L, N, m)]
    top = dudley_top()
    s_lvl = {k: level_index(sp.svals(k)[..., 0], J).to(torch.float64).div(J).exp() for k in KINDS}
    sens = network_sensitivities(
        s_lvl["QK"],
        s_lvl["V"],
        s_lvl["M_in"],
        s_lvl["M_out"],
        input_radius=input_radius,
        L_phi=L_phi,
    )
    order = matrix_order(L, H)
    K = matrix_count(L, H)
    rows_out: list[dict] = []
    covers: list[Callable[[torch.Tensor], torch.Tensor]] = []
    tail_P: list[float] = []
    tail_lb: list[float] = []
    costs: list[float] = []
    closed = True
    u_sel, w_sel = _panels(_U_MAX, _SELECT_PANELS)
    eps_sel = top * torch.exp(-u_sel)
    for i, (l, h, kind) in enumerate(order):
        sv = sp.svals(kind)[l, h] if h != MLP_HEAD else sp.svals(kind)[l]
        sv = sv[sv > 0]
        rows, cols = _rows_cols(kind, N, d_ff)
        R = min(rows, cols)
        rank = max(int(sv.numel()), 1)
        k_s = int(level_index(sv[0] if sv.numel() else 0.0, J))
        s = math.exp(k_s / J)
        kappa = PROPER_COVER_FACTOR if kind == "M_in" else 1.0
        log_scale = (
            math.log(K * kappa / margin)
            + float(sens["log_alpha"][i])
            + float(sens["log_sens"][i])
            + float(sens["log_radius"][i])
        )
        best = None
        for q in grid:
            if q == 0:
                lvl, cost_lvl = float(rank), math.log(R)
            else:
                k_M = int(level_index(float((sv**q).sum()), J))
                lvl, cost_lvl = math.exp(k_M / J), -float(log_level_prior(k_M))
            H_q = matrix_log_cover(
                eps_sel,
                p=q,
                level=lvl,
                s=s,
                rows=rows,
                cols=cols,
                log_scale=log_scale,
                seq_len=seq_len,
                rank=rank,
            )
            val = _selection_score(float((H_q.sqrt() * eps_sel * w_sel).sum()), cost_lvl)
            if best is None or val < best[0]:
                best = (val, q, lvl, cost_lvl)
        assert best is not None  # the grid is never empty
        _, q, lvl, cost_lvl = best
        cost = math.log(len(grid)) + cost_lvl - float(log_level_prior(k_s))
        costs.append(cost)
        P_full = (rows + cols + 1) * R
        lb_full = math.log(_cov.RANK_NET_BASE * s * math.sqrt(R)) + log_scale
        if q == 0:
            P_a, lb_a = (
                (rows + cols + 1) * rank,
                math.log(_cov.RANK_NET_BASE * s * math.sqrt(rank)) + log_scale,
            )
            tail_P.append(P_a), tail_lb.append(lb_a)  # type: ignore[func-returns-value]
            covers.append(
                partial(
                    matrix_log_cover,
                    p=0,
                    level=None,
                    s=s,
                    rows=rows,
                    cols=cols,
                    log_scale=log_scale,
                    rank=rank,
                )
            )
        else:
            closed = False
            tail_P.append(P_full), tail_lb.append(lb_full)  # type: ignore[func-returns-value]
            covers.append(
                partial(
                    matrix_log_cover,
                    p=q,
                    level=lvl,
                    s=s,
                    rows=rows,
                    cols=cols,
                    log_scale=log_scale,
                    seq_len=seq_len,
                )
            )
        rows_out.append(
            {
                "layer": l,
                "head": h,
                "kind": kind,
                "rows": rows,
                "cols": cols,
                "rank": int(sv.numel()),
                "spectral_norm": float(sv[0]) if sv.numel() else 0.0,
                "spectral_level": s,
                "p": q,
                "level": lvl,
                "log_alpha": float(sens["log_alpha"][i]),
                "log_sensitivity": float(sens["log_sens"][i] + sens["log_radius"][i]),
                "log_scale": log_scale,
                "P": tail_P[
                    -1
                ],  # the rank net's parameter count (N + N' + 1) r (full rank at p > 0)
                "log_b": tail_lb[
                    -1
                ],  # log of the rank net's b_a (the entropy is P log+(b_a / eps))
                "union_cost": cost,
            }
        )
    if closed:
        integral = p0_dudley_integral(tail_P, tail_lb, top)
    else:
        integral = quadrature_dudley_integral(covers, tail_P, tail_lb, top=top)
    if not math.isfinite(
        integral
    ):  # never a silent NaN: the weights' levels are finite by construction
        raise InputError(
            f"theorem P's entropy integral is not finite ({integral}); the spectra hold a non-finite value"
        )
    return NetworkBound(
        capacity=_rad.DUDLEY_INTEGRAL_COEF * integral,
        union_cost=total_union_cost(costs),
        delta=delta,
        margin=margin,
        input_radius=input_radius,
        seq_len=seq_len,
        levels_per_efold=J,
        grid_m=m,
        n_samples=n_samples,
        table=pd.DataFrame(rows_out),
        closed_form=closed,
    )
