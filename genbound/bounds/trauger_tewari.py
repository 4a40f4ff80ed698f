"""Sequence-length-independent bounds (after Trauger & Tewari, AISTATS 2024), as reconstructed in Part II.

Book: :ref:`ch-tt-covers` (uniform covers), :ref:`ch-tt-single-layer` (:prf:ref:`thm-tt-single-layer`),
:ref:`ch-tt-multilayer` (:prf:ref:`thm-tt-multilayer`, :prf:ref:`thm-tt-masked`).

The class is :mod:`genbound.nets` (``L`` layers of ``H``-head softmax attention, activation, optional
dense map ``W_C`` and row projection ``Pi``, readout at one row; biases absorbed by a constant input
coordinate). Each map ``W`` is constrained by an entrywise radius ``||W||_{1,1} <= B`` and a spectral
radius ``||W||_op <= S``; input rows satisfy ``||x_t||_2 <= B_X``. **No function here takes the sequence
length**: the covers are uniform over the input ball, so neither ``T`` nor ``m`` enters ``log N``.

Pipeline: :func:`tt_sensitivities` (the perturbation inequality, :prf:ref:`lem-tt-multilayer-perturbation`)
-> :func:`tt_log_cover` (Maurey covers + allocation: ``log N(eps) <= A/eps^2 + Lambda``) -> Dudley
(:func:`genbound.rademacher.dudley_inverse_square`) -> :func:`genbound.rademacher.generalization_gap_bound`.
Every constant comes from :mod:`genbound.symbolic.trauger_tewari`.

>>> r = trauger_tewari_bound([LayerRadii(B_QK=(1.0,), S_QK=(1.0,), B_V=(1.0,), S_V=(1.0,))],
...                          B_X=1.0, B_w=1.0, d=4, m=10**6, delta=0.05)
>>> round(r.log_cover.A, 4), round(r.log_cover.Lambda, 4)
(79.6754, 9.0109)
>>> round(r.value, 4)
0.7129

One concept: the Trauger-Tewari bounds as pure functions of radii (sensitivities, covers, Dudley,
the single-layer, multi-layer and masked theorems).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

from .._validate import check_positive_int, check_real
from ..errors import ArchitectureError, ParameterError
from ..covering import allocation_split, allocation_value
from ..rademacher import (
    DudleyResult,
    dudley_inverse_square,
    generalization_gap_bound,
    inverse_square_capacity,
    inverse_square_log_factor,
)
from ._result import LOSS_RANGE, TRIVIAL_RADEMACHER, BoundResult, DudleyHooks
from . import radius_grid as _rg
from .radius_grid import round_layer_radii, round_radii

__all__ = [
    "LayerRadii",
    "CoverTerm",
    "InverseSquareCover",
    "Sensitivities",
    "TTBound",
    "tt_row_bounds",
    "tt_layer_lipschitz",
    "tt_sensitivities",
    "sensitivities_raw",
    "tt_perturbation_bound",
    "tt_log_cover",
    "trauger_tewari_bound",
    "layer_radii_from_model",
    "trauger_tewari_bound_from_model",
    "loss_lipschitz",
    "KAPPA_DEFAULT",
    "TRIVIAL_RADEMACHER",
    "LOSS_RANGE",
]

#: Softmax l_inf -> l_1 constant (tight; :mod:`genbound.symbolic.softmax`).
KAPPA_DEFAULT = 1.0


def _aug(x, bias: bool):
    """``sqrt(x^2 + 1)`` when biases are absorbed as a constant coordinate, else ``x`` (floats or tensors)."""
    return (x * x + 1.0) ** 0.5 if bias else x


@dataclass(frozen=True)
class LayerRadii:
    """Norm radii of one layer: per head ``B_QK, S_QK`` (of ``W_QK^h``) and ``B_V, S_V`` (of
    ``W_V^h W_O^h``), and ``B_C, S_C`` of the dense map (``None`` when the layer has none).
    ``B`` is an entrywise ``||.||_{1,1}`` radius, ``S`` a spectral radius."""

    B_QK: tuple[float, ...]
    S_QK: tuple[float, ...]
    B_V: tuple[float, ...]
    S_V: tuple[float, ...]
    B_C: float | None = None
    S_C: float | None = None

    def __post_init__(self):
        H = len(self.B_QK)
        if H == 0 or not (len(self.S_QK) == len(self.B_V) == len(self.S_V) == H):
            raise ParameterError(
                f"LayerRadii: B_QK, S_QK, B_V, S_V need one entry per head, got lengths "
                f"{len(self.B_QK)}, {len(self.S_QK)}, {len(self.B_V)}, {len(self.S_V)}"
            )
        for name in ("B_QK", "S_QK", "B_V", "S_V"):
            vals = tuple(
                check_real(v, f"{name}[{i}]", lo=0.0) for i, v in enumerate(getattr(self, name))
            )
            object.__setattr__(self, name, vals)
        if (self.B_C is None) != (self.S_C is None):
            raise ParameterError("LayerRadii: give both B_C and S_C (a dense map) or neither")
        if self.B_C is not None:
            object.__setattr__(self, "B_C", check_real(self.B_C, "B_C", lo=0.0))
            object.__setattr__(self, "S_C", check_real(self.S_C, "S_C", lo=0.0))

    @property
    def n_heads(self) -> int:
        return len(self.B_QK)

    @property
    def dense(self) -> bool:
        return self.B_C is not None


@dataclass(frozen=True)
class CoverTerm:
    """One covered map: ``log N_j(eps_j) <= ceil((factor rho radius / eps_j)^2) log_atoms``.

    ``rho`` is its sensitivity in the perturbation inequality, ``radius`` its ``||.||_{1,1}`` radius,
    ``log_atoms = log(2 d_in d_out)`` (Maurey's dictionary), ``factor`` 2 when the cover must be proper, else 1
    (no default: every cover says which).
    The covers of :prf:ref:`lem-tt-cover-value`, :prf:ref:`lem-tt-cover-qk` and
    :prf:ref:`lem-tt-cover-readout`.
    """

    name: str
    rho: float
    radius: float
    log_atoms: float
    factor: float

    @property
    def c(self) -> float:
        """``factor * rho * radius * sqrt(log_atoms)`` (:func:`genbound.symbolic.trauger_tewari.cover_constant`)."""
        return self.factor * self.rho * self.radius * math.sqrt(self.log_atoms)


@dataclass(frozen=True)
class InverseSquareCover:
    """``log N(eps) <= A / eps^2 + Lambda`` with ``A = (sum_j c_j^{2/3})^3`` and ``Lambda = sum_j log_atoms_j``
    (allocation lemma; the ceilings cost one ``log_atoms`` each). Callable: ``cover(eps)``."""

    terms: tuple[CoverTerm, ...]
    A: float = field(init=False)
    Lambda: float = field(init=False)

    def __post_init__(self):
        costs = [t.c**2 for t in self.terms]
        A = float(allocation_value(costs, 1.0)) if any(costs) else 0.0  # (sum_j c_j^{2/3})^3
        object.__setattr__(self, "A", A)
        object.__setattr__(self, "Lambda", sum(t.log_atoms for t in self.terms))

    def __call__(self, eps: float) -> float:
        eps = check_real(eps, "eps", lo=0.0, lo_open=True)
        return self.A / eps**2 + self.Lambda

    def scales(self, eps: float) -> dict[str, float]:
        """The optimal split ``eps_j = eps c_j^{2/3} / sum_i c_i^{2/3}`` of the allowed output error."""
        eps = check_real(eps, "eps", lo=0.0, lo_open=True)
        return allocation_split({t.name: t.c for t in self.terms}, eps)  # Part I, lem-allocation

    def atoms_per_term(self, eps: float) -> dict[str, int]:
        """Maurey's atom count ``K_j = ceil((factor rho radius / eps_j)^2 - 1e-12)`` (1e-12: round-off) at the scales."""
        sc = self.scales(eps)
        return {
            t.name: (
                1
                if t.factor * t.rho * t.radius == 0 or sc[t.name] == 0
                else max(1, math.ceil((t.factor * t.rho * t.radius / sc[t.name]) ** 2 - 1e-12))
            )
            for t in self.terms
        }


@dataclass(frozen=True)
class Sensitivities:
    """Output of :func:`tt_sensitivities`: ``rho`` per map name, row radii ``B_0..B_L``, the per-layer
    input-Lipschitz constants, and which maps need a proper cover (``factor``)."""

    rho: dict[str, float]
    row_bounds: tuple[float, ...]
    lipschitz: tuple[float, ...]
    factor: dict[str, float]


def tt_row_bounds(
    layers: Sequence[LayerRadii],
    *,
    B_X: float,
    L_sigma: float = 1.0,
    bias: bool = False,
    row_norm: bool = False,
) -> tuple[float, ...]:
    """Row radii ``B_0 = B_X`` and ``B_l = Pi? S_C aug(L_sigma sum_h S_V^h aug(B_{l-1}))`` (``1`` with ``Pi``).

    >>> tt_row_bounds([LayerRadii((1.0,), (1.0,), (3.0,), (2.0,))], B_X=0.5)
    (0.5, 1.0)
    """
    spec = [(lay.S_QK, lay.S_V, lay.S_C) for lay in layers]
    return tuple(
        _row_bounds(
            spec, check_real(B_X, "B_X", lo=0.0), L_sigma=L_sigma, bias=bias, row_norm=row_norm
        )
    )


def _row_bounds(spec, B_X, *, L_sigma, bias, row_norm):
    """The one implementation of :func:`tt_row_bounds` (floats or tensors)."""
    Bs = [B_X]
    for _, S_V, S_C in spec:
        R = L_sigma * sum(S_V) * _aug(Bs[-1], bias)
        Y = R if S_C is None else S_C * _aug(R, bias)
        Bs.append(1.0 if row_norm else Y)
    return Bs


def tt_layer_lipschitz(
    lay: LayerRadii, B: float, *, L_sigma: float = 1.0, kappa: float = KAPPA_DEFAULT
) -> float:
    """Max-row-norm Lipschitz constant of one layer on rows of (augmented) radius ``B``:
    ``L_sigma S_C sum_h S_V^h (1 + 2 kappa B^2 S_QK^h)`` (:prf:ref:`lem-tt-layer-lipschitz`). No ``T``.

    >>> tt_layer_lipschitz(LayerRadii((1.0,), (0.5,), (1.0,), (2.0,)), 1.0)
    4.0
    """
    return _lipschitz(lay.S_QK, lay.S_V, lay.S_C, B, L_sigma=L_sigma, kappa=kappa)


def _lipschitz(S_QK, S_V, S_C, B, *, L_sigma, kappa):
    """The one implementation of :func:`tt_layer_lipschitz` (floats or tensors; ``S_C = None``: no dense map)."""
    c = 1.0 if S_C is None else S_C
    return L_sigma * c * sum(sv * (1 + 2 * kappa * B * B * sq) for sv, sq in zip(S_V, S_QK))


def _check_common(layers, B_X, B_w, L_sigma, kappa):
    if len(layers) == 0:
        raise ParameterError("layers must hold at least one LayerRadii")
    for i, lay in enumerate(layers):
        if not isinstance(lay, LayerRadii):
            raise ParameterError(f"layers[{i}] must be a LayerRadii, got {type(lay).__name__}")
    return (
        check_real(B_X, "B_X", lo=0.0),
        check_real(B_w, "B_w", lo=0.0),
        check_real(L_sigma, "L_sigma", lo=0.0),
        check_real(kappa, "kappa", lo=0.0),
    )


def tt_sensitivities(
    layers: Sequence[LayerRadii],
    *,
    B_X: float,
    B_w: float,
    L_sigma: float = 1.0,
    kappa: float = KAPPA_DEFAULT,
    bias: bool = False,
    row_norm: bool = False,
) -> Sensitivities:
    """Coefficients of :prf:ref:`lem-tt-multilayer-perturbation`:
    ``sup_X |f(X) - f_hat(X)| <= sum_j rho_j ||W_j - W_hat_j||_op`` over every sequence of every length.

    Names: ``QK[l,h]``, ``V[l,h]``, ``C[l]`` (1-based) and ``w``. The formulas are those of
    :func:`genbound.symbolic.trauger_tewari.unrolled_sensitivities`. A map needs a *proper* cover
    (``factor = 2``) when the proof uses the spectral radius of its *cover element* and ``S < B``: every
    ``C[l]``, and without ``Pi`` the ``V[l,h]`` of layers ``l < L``.

    >>> s = tt_sensitivities([LayerRadii((1.0,), (1.0,), (1.0,), (1.0,))], B_X=1.0, B_w=1.0)
    >>> s.rho
    {'QK[1,1]': 1.0, 'V[1,1]': 1.0, 'w': 1.0}
    """
    B_X, B_w, L_sigma, kappa = _check_common(layers, B_X, B_w, L_sigma, kappa)
    spec = [(lay.S_QK, lay.S_V, lay.S_C) for lay in layers]
    rho, Bs, lips = sensitivities_raw(
        spec, B_X=B_X, B_w=B_w, L_sigma=L_sigma, kappa=kappa, bias=bias, row_norm=row_norm
    )
    factor = {}
    L = len(layers)
    for i, lay in enumerate(layers):
        for h in range(lay.n_heads):
            factor[f"QK[{i + 1},{h + 1}]"] = 1.0
            needs = (not row_norm) and i < L - 1 and lay.S_V[h] < lay.B_V[h]
            factor[f"V[{i + 1},{h + 1}]"] = 2.0 if needs else 1.0
        if lay.dense:
            factor[f"C[{i + 1}]"] = 2.0 if lay.S_C < lay.B_C else 1.0
    factor["w"] = 1.0
    return Sensitivities(rho, tuple(Bs), tuple(lips), factor)


def sensitivities_raw(
    spec, *, B_X, B_w, L_sigma=1.0, kappa=KAPPA_DEFAULT, bias=False, row_norm=False
):
    """The formulas behind :func:`tt_sensitivities`, without validation, for floats **or** tensors
    (the claims evaluate them on batches with autograd). ``spec``: per layer ``(S_QK, S_V, S_C)`` with
    per-head sequences and ``S_C = None`` for no dense map. Returns ``(rho, row_bounds, lipschitz)``.
    One layer without dense map: the coefficients of :prf:ref:`lem-tt-single-perturbation`."""
    Bs = _row_bounds(spec, B_X, L_sigma=L_sigma, bias=bias, row_norm=row_norm)
    lips = []
    for i, (S_QK, S_V, S_C) in enumerate(spec):
        lips.append(_lipschitz(S_QK, S_V, S_C, _aug(Bs[i], bias), L_sigma=L_sigma, kappa=kappa))
    rho = {}
    for i, (S_QK, S_V, S_C) in enumerate(spec):
        P = math.prod(lips[i + 1 :])
        Bt = _aug(Bs[i], bias)
        c = 1.0 if S_C is None else S_C
        for h in range(len(S_V)):
            rho[f"QK[{i + 1},{h + 1}]"] = B_w * P * c * L_sigma * S_V[h] * kappa * Bt**3
            rho[f"V[{i + 1},{h + 1}]"] = B_w * P * c * L_sigma * Bt
        if S_C is not None:
            rho[f"C[{i + 1}]"] = B_w * P * _aug(L_sigma * sum(S_V) * Bt, bias)
    rho["w"] = _aug(Bs[-1], bias)
    return rho, Bs, lips


def tt_perturbation_bound(sens: Sensitivities, eta: dict[str, float]) -> float:
    """``sum_j rho_j eta_j`` for operator-norm errors ``eta`` (missing names count as 0).

    No sequence length enters (:prf:ref:`prop-tt-uniform-T` checks it on random models)."""
    unknown = set(eta) - set(sens.rho)
    if unknown:
        raise ParameterError(f"eta has names that are not maps of this network: {sorted(unknown)}")
    return sum(sens.rho[k] * float(v) for k, v in eta.items())


def _shape_atoms(layers, d: int, out_dim: int, bias: bool) -> dict[str, float]:
    """``log(2 d_in d_out)`` per map (Maurey dictionary of the ``||.||_{1,1}`` ball)."""
    din = d + (1 if bias else 0)
    out = {}
    for i, lay in enumerate(layers):
        for h in range(lay.n_heads):
            out[f"QK[{i + 1},{h + 1}]"] = math.log(2 * din * din)
            out[f"V[{i + 1},{h + 1}]"] = math.log(2 * din * d)
        if lay.dense:
            out[f"C[{i + 1}]"] = math.log(2 * din * d)
    out["w"] = math.log(2 * din * out_dim)
    return out


def tt_log_cover(
    layers: Sequence[LayerRadii],
    *,
    B_X: float,
    B_w: float,
    d: int,
    out_dim: int = 1,
    L_sigma: float = 1.0,
    kappa: float = KAPPA_DEFAULT,
    bias: bool = False,
    row_norm: bool = False,
) -> InverseSquareCover:
    """Uniform cover of the class in sup-norm over all inputs (:prf:ref:`thm-tt-multilayer`; for one
    layer without dense map, :prf:ref:`thm-tt-single-layer`): ``log N(eps) <= A/eps^2 + Lambda``.

    ``d`` is the token width; with ``bias`` every map acts on ``d + 1`` coordinates. Neither the sample
    size nor the sequence length is an argument: they do not enter.

    >>> c = tt_log_cover([LayerRadii((1.0,), (1.0,), (1.0,), (1.0,))], B_X=1.0, B_w=1.0, d=2)
    >>> round(c(1.0), 6) == round(c.A + c.Lambda, 6)
    True
    """
    d = check_positive_int(d, "d")
    out_dim = check_positive_int(out_dim, "out_dim")
    sens = tt_sensitivities(
        layers, B_X=B_X, B_w=B_w, L_sigma=L_sigma, kappa=kappa, bias=bias, row_norm=row_norm
    )
    atoms = _shape_atoms(layers, d, out_dim, bias)
    radius = {"w": float(B_w)}
    for i, lay in enumerate(layers):
        for h in range(lay.n_heads):
            radius[f"QK[{i + 1},{h + 1}]"] = lay.B_QK[h]
            radius[f"V[{i + 1},{h + 1}]"] = lay.B_V[h]
        if lay.dense:
            radius[f"C[{i + 1}]"] = lay.B_C
    return InverseSquareCover(
        tuple(CoverTerm(k, sens.rho[k], radius[k], atoms[k], sens.factor[k]) for k in sens.rho)
    )


def loss_lipschitz(margin: float, out_dim: int) -> float:
    """Lipschitz constant of the ramp loss of the margin in the sup-norm of the outputs: ``1/gamma`` for a
    scalar output (margin ``y f``), ``2/gamma`` for ``out_dim >= 2`` (multiclass margin, 2-Lipschitz in l_inf).

    >>> loss_lipschitz(0.5, 1), loss_lipschitz(0.5, 3)
    (2.0, 4.0)
    """
    g = check_real(margin, "margin", lo=0.0, lo_open=True)
    return (1.0 if check_positive_int(out_dim, "out_dim") == 1 else 2.0) / g


@dataclass(frozen=True)
class TTBound(DudleyHooks, BoundResult):
    """A Trauger-Tewari-type bound: ``value`` (bound on the gap between the ramp risk and its empirical
    mean, which also bounds ``P[misclassified] - empirical ramp risk``), ``rademacher`` (Dudley bound on
    the empirical Rademacher complexity of the ramp-loss class), ``log_cover`` (of the predictor class),
    ``dudley``, ``sensitivities``, the norms used (``norms``) and the setting (``m``, ``delta``,
    ``margin``, ``loss_lipschitz``). ``complexity = sqrt(A)`` is the ``C`` of ``log N <= C^2/eps^2 + Lambda``.

    What the value is (:prf:ref:`cor-tt-capacity`): ``trivial`` (the value is the trivial cap and cannot
    see the weights), ``capacity`` (``m``-free: ``rademacher <= capacity * log_factor / sqrt(m)``),
    ``samples_needed`` (the smallest ``m`` reaching a target), ``at`` and ``to_dict``: the protocol of
    :mod:`genbound.bounds._result`, with ``gap_at(m) = at(m).value`` and ``n_samples = m``.

    >>> lay = LayerRadii((1.0,), (1.0,), (1.0,), (1.0,))
    >>> r = trauger_tewari_bound([lay], B_X=1.0, B_w=1.0, d=4, m=300, delta=0.05)
    >>> r.trivial, r.at(10**6).trivial
    (True, False)
    >>> r.capacity == r.at(10**6).capacity
    True
    >>> m = r.samples_needed(0.9)
    >>> r.at(m).value <= 0.9 < r.at(m - 1).value
    True
    """

    value: float
    rademacher: float
    log_cover: InverseSquareCover
    dudley: DudleyResult
    sensitivities: Sensitivities
    norms: dict
    m: int
    delta: float
    margin: float
    loss_lipschitz: float

    @property
    def complexity(self) -> float:
        return math.sqrt(self.log_cover.A)

    @property
    def loss_A(self) -> float:
        """``A`` of the ramp-loss class: ``loss_lipschitz^2 * log_cover.A``."""
        return self.loss_lipschitz**2 * self.log_cover.A

    @property
    def capacity(self) -> float:
        """``12 (L_loss sqrt(A) + (c/2) sqrt(Lambda))`` at the loss diameter ``c = 1/2``
        (:func:`genbound.rademacher.inverse_square_capacity`); free of ``m`` and of ``T``."""
        return inverse_square_capacity(
            self.loss_A, self.log_cover.Lambda, diameter=self.dudley.diameter
        )

    @property
    def log_factor(self) -> float:
        """``max(1, 1 + log(c sqrt(m) / (6 L_loss sqrt(A))))``: ``rademacher <= capacity * log_factor / sqrt(m)``."""
        return inverse_square_log_factor(self.loss_A, m=self.m, diameter=self.dudley.diameter)

    def _dict_fields(self) -> dict:
        return {
            "log_factor": self.log_factor,
            "rademacher": self.rademacher,
            "m": int(self.m),
            "delta": float(self.delta),
            "margin": float(self.margin),
        }

    @classmethod
    def examples(cls) -> list["TTBound"]:
        """One layer at ``m = 300`` (trivial) and ``10**6`` (not), and two dense layers with biases."""
        lay = LayerRadii((1.0,), (1.0,), (1.0,), (1.0,))
        two = [LayerRadii((1.0, 0.5), (0.5, 0.5), (1.0, 0.5), (0.5, 0.5), 1.0, 0.5)] * 2
        return [
            trauger_tewari_bound([lay], B_X=1.0, B_w=1.0, d=4, m=300, delta=0.05),
            trauger_tewari_bound([lay], B_X=1.0, B_w=1.0, d=4, m=10**6, delta=0.05),
            trauger_tewari_bound(
                two, B_X=1.0, B_w=1.0, d=3, m=10**9, delta=0.1, margin=0.5, bias=True
            ),
        ]

    def at(self, m: int) -> "TTBound":
        """The same bound (every radius, ``delta`` and ``margin`` held fixed) at sample size ``m``."""
        n = self.norms
        return trauger_tewari_bound(
            n["layers"],
            B_X=n["B_X"],
            B_w=n["B_w"],
            d=n["d"],
            m=m,
            delta=self.delta,
            margin=self.margin,
            out_dim=n["out_dim"],
            L_sigma=n["L_sigma"],
            kappa=n["kappa"],
            bias=n["bias"],
            row_norm=n["row_norm"],
        )


def trauger_tewari_bound(
    layers: Sequence[LayerRadii],
    *,
    B_X: float,
    B_w: float,
    d: int,
    m: int,
    delta: float,
    margin: float = 1.0,
    out_dim: int = 1,
    L_sigma: float = 1.0,
    kappa: float = KAPPA_DEFAULT,
    bias: bool = False,
    row_norm: bool = False,
) -> TTBound:
    """The generalization bound of :prf:ref:`thm-tt-multilayer` (one layer: :prf:ref:`thm-tt-single-layer`).

    With probability ``>= 1 - delta`` over ``m`` i.i.d. samples, every network in the class has
    ``E ramp_gamma <= empirical ramp_gamma + value``, where
    ``value = 2 R + 3 sqrt(log(2/delta)/(2m))`` and ``R`` is Dudley's bound for the loss class, whose
    cover is ``log N(eps) <= (L_loss^2 A)/eps^2 + Lambda`` at diameter ``1/2`` (the loss lies in ``[0, 1]``),
    capped at the trivial ``1/2``.
    """
    m = check_positive_int(m, "m")
    delta = check_real(delta, "delta", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    Lloss = loss_lipschitz(margin, out_dim)
    cover = tt_log_cover(
        layers,
        B_X=B_X,
        B_w=B_w,
        d=d,
        out_dim=out_dim,
        L_sigma=L_sigma,
        kappa=kappa,
        bias=bias,
        row_norm=row_norm,
    )
    sens = tt_sensitivities(
        layers, B_X=B_X, B_w=B_w, L_sigma=L_sigma, kappa=kappa, bias=bias, row_norm=row_norm
    )
    dud = dudley_inverse_square(Lloss**2 * cover.A, cover.Lambda, m=m, diameter=0.5)
    rad = min(dud.value, TRIVIAL_RADEMACHER)
    value = generalization_gap_bound(rad, m=m, delta=delta, b=1.0)
    norms = {
        "B_X": float(B_X),
        "B_w": float(B_w),
        "layers": tuple(layers),
        "d": d,
        "out_dim": out_dim,
        "L_sigma": float(L_sigma),
        "kappa": float(kappa),
        "bias": bool(bias),
        "row_norm": bool(row_norm),
    }
    return TTBound(value, rad, cover, dud, sens, norms, m, float(delta), float(margin), Lloss)


def layer_radii_from_model(model, *, spectral: bool = True) -> list[LayerRadii]:
    """Read the radii off a :class:`genbound.nets.ReferenceTransformer` (its effective maps, biases
    absorbed): ``B = ||.||_{1,1}``, ``S = ||.||_op`` (``spectral=False``: ``S = B``, no spectral control)."""
    if not hasattr(model, "weight_norms") or not hasattr(model, "n_layers"):
        raise ArchitectureError(
            f"expected a genbound.nets.ReferenceTransformer, got {type(model).__name__}"
        )
    n = model.weight_norms()
    out = []
    for l in range(model.n_layers):
        B_QK = tuple(float(v) for v in n["QK"]["l11"][l])
        B_V = tuple(float(v) for v in n["V"]["l11"][l])
        S_QK = tuple(float(v) for v in n["QK"]["op"][l]) if spectral else B_QK
        S_V = tuple(float(v) for v in n["V"]["op"][l]) if spectral else B_V
        if "C" in n:
            B_C = float(n["C"]["l11"][l])
            S_C = float(n["C"]["op"][l]) if spectral else B_C
        else:
            B_C = S_C = None
        out.append(LayerRadii(B_QK, S_QK, B_V, S_V, B_C, S_C))
    return out


def trauger_tewari_bound_from_model(
    model,
    *,
    m: int,
    delta: float,
    B_X: float,
    margin: float = 1.0,
    kappa: float = KAPPA_DEFAULT,
    spectral: bool = True,
    radius_grid: bool = False,
) -> TTBound:
    """:func:`trauger_tewari_bound` with every radius read off ``model`` (a ``ReferenceTransformer``).

    ``B_X`` bounds the l2 norm of every input row (token plus position); it is the only data quantity.
    The readout radius is ``B_w = ||w~||_{1,1}`` (bias row included when ``model.bias``).
    ``radius_grid``: round every radius up to a power of 2 and pay for it in the confidence
    (:prf:ref:`thm-radius-union`), so that the bound holds at norms read off a trained model.

    >>> from genbound.nets import ReferenceTransformer
    >>> r = trauger_tewari_bound_from_model(ReferenceTransformer(4, seed=0), m=1000, delta=0.05, B_X=1.0)
    >>> r.value > 0 and r.rademacher > 0
    True
    """
    layers = layer_radii_from_model(model, spectral=spectral)
    B_w = float(model.weight_norms()["w"]["l11"])
    if radius_grid:
        (layers, idx), ((B_w,), i_w) = round_layer_radii(layers), round_radii([B_w])
        delta = _rg.union_delta(delta, idx + i_w)  # through the module: a patch of it reaches here
    return trauger_tewari_bound(
        layers,
        B_X=B_X,
        B_w=B_w,
        d=model.d,
        m=m,
        delta=delta,
        margin=margin,
        out_dim=model.out_dim,
        L_sigma=model.L_sigma,
        kappa=kappa,
        bias=model.bias,
        row_norm=model.row_norm,
    )
