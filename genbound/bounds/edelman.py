"""The ``log T`` baseline: an Edelman-type bound (after Edelman, Goel, Kakade & Zhang, ICML 2022).

Book: :ref:`ch-edelman-baseline` (:prf:ref:`lem-edelman-perturbation`, :prf:ref:`thm-edelman-type`).

Same single-layer class as :mod:`genbound.bounds.trauger_tewari` (``H`` heads, optional dense map,
biases absorbed, readout at the [CLS] row), but covered the way Edelman et al. do: **empirically**.

* The attention scores of every (sample, token) pair, ``n = m T`` points, are covered in ``l_inf`` with
  Zhang's (2002) bound for linear functionals; its ``log(2 ceil(4ab/eta + 2) n + 1)`` is where ``log(mT)``
  enters. The weight radius is the Frobenius norm of ``W_QK^h``.
* The value, dense and readout maps are covered on the sample with Bartlett-Foster-Telgarsky's
  Maurey lemma (their Lemma 3.2), with ``||.||_{2,1}`` radii (sum over output units of the l2 norms):
  no ``m`` and no ``T`` there.

The exact statement and constants of Edelman et al.'s theorem were not available to us; this is our
reconstruction of a bound of its type (every constant from :mod:`genbound.symbolic.trauger_tewari`), and
it is the one the book compares with. Only one layer is implemented; the multi-layer version pays
``log(mT)`` at every layer and is discussed, not computed.

>>> lay = EdelmanLayerRadii(F_QK=(1.0,), B_V21=(1.0,), S_V=(1.0,))
>>> small = edelman_bound(lay, B_X=1.0, B_w21=1.0, S_w=1.0, d=4, m=10**6, T=10, delta=0.05)
>>> large = edelman_bound(lay, B_X=1.0, B_w21=1.0, S_w=1.0, d=4, m=10**6, T=10**6, delta=0.05)
>>> small.dudley.value < large.dudley.value
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._validate import check_positive_int, check_real
from ..errors import ArchitectureError, ParameterError
from ..covering import ZHANG_CONSTANT, allocation_split, allocation_value
from ..rademacher import (
    DudleyResult,
    dudley_bound,
    generalization_gap_bound,
    inverse_square_capacity,
    inverse_square_log_factor,
    INVERSE_SQUARE_ALPHA_COEF,
)
from ._result import BoundResult, DudleyHooks
from .trauger_tewari import KAPPA_DEFAULT, TRIVIAL_RADEMACHER, CoverTerm, _aug, loss_lipschitz
from . import radius_grid as _rg
from .radius_grid import round_layer_radii, round_radii

__all__ = [
    "EdelmanLayerRadii",
    "ZhangTerm",
    "EdelmanCover",
    "EdelmanBound",
    "edelman_sensitivities",
    "edelman_sensitivities_raw",
    "edelman_log_cover",
    "edelman_bound",
    "edelman_bound_from_model",
    "ZHANG_CONSTANT",
]


@dataclass(frozen=True)
class EdelmanLayerRadii:
    """Radii for the Edelman-type bound: per head the Frobenius radius ``F_QK`` of ``W_QK^h``, the
    ``(2,1)`` radius ``B_V21`` and spectral radius ``S_V`` of ``W_V^h W_O^h``; ``B_C21``, ``S_C`` of the
    dense map (or ``None``)."""

    F_QK: tuple[float, ...]
    B_V21: tuple[float, ...]
    S_V: tuple[float, ...]
    B_C21: float | None = None
    S_C: float | None = None

    def __post_init__(self):
        H = len(self.F_QK)
        if H == 0 or not (len(self.B_V21) == len(self.S_V) == H):
            raise ParameterError("EdelmanLayerRadii: F_QK, B_V21 and S_V need one entry per head")
        for name in ("F_QK", "B_V21", "S_V"):
            object.__setattr__(
                self,
                name,
                tuple(
                    check_real(v, f"{name}[{i}]", lo=0.0) for i, v in enumerate(getattr(self, name))
                ),
            )
        if (self.B_C21 is None) != (self.S_C is None):
            raise ParameterError(
                "EdelmanLayerRadii: give both B_C21 and S_C (a dense map) or neither"
            )
        if self.B_C21 is not None:
            object.__setattr__(self, "B_C21", check_real(self.B_C21, "B_C21", lo=0.0))
            object.__setattr__(self, "S_C", check_real(self.S_C, "S_C", lo=0.0))

    @property
    def dense(self) -> bool:
        return self.B_C21 is not None


@dataclass(frozen=True)
class ZhangTerm:
    """A score class covered with Zhang's bound: error ``eta = eps_j / rho`` in ``l_inf`` over ``n`` points
    of norm ``<= a``, weights of Frobenius norm ``<= b``."""

    name: str
    rho: float
    a: float
    b: float
    n: int

    def log_cover(self, eps_j: float) -> float:
        """Zhang's bound at ``eta = eps_j / rho``, with ``ceil(x) <= x + 1`` so that it is smooth in ``eps_j``
        (Dudley's integral is then computed accurately); still an upper bound on :func:`genbound.covering.zhang_log_cover`."""
        if self.rho == 0 or self.a * self.b == 0:
            return 0.0
        eta = eps_j / self.rho
        ab = self.a * self.b
        return ZHANG_CONSTANT * ab * ab / eta**2 * math.log(2 * (4 * ab / eta + 3) * self.n + 1)

    def c(self, eps_j: float) -> float:
        """``sqrt(eps_j^2 log N_j(eps_j))``: the constant that plays ``c_j`` in the allocation."""
        return math.sqrt(max(self.log_cover(eps_j), 0.0)) * eps_j

    @property
    def c0(self) -> float:
        """``sqrt(36) rho a b``: the ``m``-free constant of Zhang's bound (``log N <= c0^2 l(eta) / eps_j^2``
        with ``l`` its logarithm)."""
        return math.sqrt(ZHANG_CONSTANT) * self.rho * self.a * self.b

    def log_term(self, eps_j: float) -> float:
        """Zhang's logarithm ``log(2 (4 rho a b / eps_j + 3) n + 1)`` at ``eps_j`` (``0`` for a zero term)."""
        if self.rho == 0 or self.a * self.b == 0:
            return 0.0
        return math.log(2 * (4 * self.rho * self.a * self.b / eps_j + 3) * self.n + 1)


@dataclass(frozen=True)
class EdelmanCover:
    """``log N(eps)`` of the Edelman-type chain: BFT terms ``c_j^2/eps_j^2 + Lambda_j`` plus Zhang terms,
    at a split ``eps_j`` with ``sum eps_j = eps`` (any such split is valid). Two splits are tried and the
    smaller cover kept: the allocation lemma iterated (Zhang's log factor depends on its own scale), and
    the fixed split ``eps_j = eps C_j^{2/3} / sum_i C_i^{2/3}`` at the ``m``-free constants ``C_j`` (``c_j``,
    and ``c0`` of the Zhang terms) that :prf:ref:`cor-edelman-capacity` uses."""

    terms: tuple[CoverTerm, ...]
    zhang: tuple[ZhangTerm, ...]
    iterations: int = 4

    def _total(self, sc: dict[str, float]) -> float:
        total = sum(t.c**2 / sc[t.name] ** 2 + t.log_atoms for t in self.terms)
        return total + sum(z.log_cover(sc[z.name]) for z in self.zhang if sc[z.name] > 0)

    def fixed_scales(self, eps: float) -> dict[str, float]:
        """The split at the ``m``-free constants: ``eps_j = eps C_j^{2/3} / sum_i C_i^{2/3}``."""
        eps = check_real(eps, "eps", lo=0.0, lo_open=True)
        cs = {t.name: t.c for t in self.terms}
        cs.update({z.name: z.c0 for z in self.zhang})
        return allocation_split(cs, eps)

    def scales(self, eps: float) -> dict[str, float]:
        """The split ``eps_j``: the better (smaller cover; the iterated one on a tie) of the allocation lemma
        iterated (as :func:`genbound.covering.allocate_scales`) and :meth:`fixed_scales`."""
        eps = check_real(eps, "eps", lo=0.0, lo_open=True)
        cs = {t.name: t.c for t in self.terms}
        cs.update({z.name: z.c(eps) for z in self.zhang})

        for _ in range(self.iterations):
            sc = allocation_split(cs, eps)
            cs.update({z.name: z.c(sc[z.name]) for z in self.zhang if sc[z.name] > 0})
        it = allocation_split(cs, eps)
        fx = self.fixed_scales(eps)
        return it if self._total(it) <= self._total(fx) else fx

    def __call__(self, eps: float) -> float:
        return self._total(self.scales(eps))

    @property
    def A0(self) -> float:
        """``(sum_j C_j^{2/3})^3`` over the maps (``C_j = c_j``) and the score classes (``C_j = c0``): the
        ``m``-free part of ``log N(eps) <= A0 l(eps) / eps^2 + Lambda`` (:prf:ref:`cor-edelman-capacity`)."""
        costs = [t.c**2 for t in self.terms] + [z.c0**2 for z in self.zhang]
        return float(allocation_value(costs, 1.0)) if any(costs) else 0.0

    @property
    def Lambda(self) -> float:
        """``sum_j log_atoms_j`` over the maps (the ceilings of Maurey's atom counts)."""
        return sum(t.log_atoms for t in self.terms)

    def log_factor(self, eps: float) -> float:
        """``l(eps) = max(1, max_h log(2 (4 rho a b / eps_h + 3) n + 1))`` at the fixed split ``eps_h`` of
        :meth:`fixed_scales`: non-increasing in ``eps``; ``log N(eps) <= A0 l(eps)/eps^2 + Lambda``."""
        sc = self.fixed_scales(eps)
        return max([1.0] + [z.log_term(sc[z.name]) for z in self.zhang if sc[z.name] > 0])

    def scaled(self, lipschitz: float) -> "EdelmanCover":
        """The cover of ``g o f`` for an ``lipschitz``-Lipschitz ``g``."""
        return EdelmanCover(
            tuple(
                CoverTerm(t.name, t.rho * lipschitz, t.radius, t.log_atoms, t.factor)
                for t in self.terms
            ),
            tuple(ZhangTerm(z.name, z.rho * lipschitz, z.a, z.b, z.n) for z in self.zhang),
            self.iterations,
        )


def edelman_sensitivities(
    layer: EdelmanLayerRadii,
    *,
    B_X: float,
    S_w: float,
    L_sigma: float = 1.0,
    kappa: float = KAPPA_DEFAULT,
    bias: bool = False,
) -> dict[str, float]:
    """``rho`` of :prf:ref:`lem-edelman-perturbation`: ``QK[h]`` multiplies the sup score error,
    ``V[h]``, ``C``, ``w`` the RMS (over the sample) output errors of their covers
    (:func:`genbound.symbolic.trauger_tewari.edelman_single_layer_sensitivities`).

    >>> edelman_sensitivities(EdelmanLayerRadii((1.0,), (1.0,), (2.0,)), B_X=1.0, S_w=3.0)
    {'QK[1]': 6.0, 'V[1]': 3.0, 'w': 1.0}
    """
    B_X = check_real(B_X, "B_X", lo=0.0)
    return edelman_sensitivities_raw(
        layer.S_V,
        layer.S_C if layer.dense else None,
        B_X=B_X,
        S_w=S_w,
        L_sigma=L_sigma,
        kappa=kappa,
        bias=bias,
    )


def edelman_sensitivities_raw(S_V, S_C, *, B_X, S_w, L_sigma=1.0, kappa=KAPPA_DEFAULT, bias=False):
    """The formulas behind :func:`edelman_sensitivities`, without validation, for floats **or** tensors
    (the claims of :prf:ref:`lem-edelman-perturbation` evaluate them on batches with autograd).
    ``S_V``: per-head spectral norms; ``S_C``: the dense map's (``None``: no dense map).

    >>> edelman_sensitivities_raw((2.0,), None, B_X=1.0, S_w=3.0)
    {'QK[1]': 6.0, 'V[1]': 3.0, 'w': 1.0}
    """
    Bt = _aug(B_X, bias)
    c = 1.0 if S_C is None else S_C
    rho = {f"QK[{h + 1}]": S_w * c * L_sigma * sv * kappa * Bt for h, sv in enumerate(S_V)}
    rho.update({f"V[{h + 1}]": S_w * c * L_sigma for h in range(len(S_V))})
    if S_C is not None:
        rho["C"] = S_w
    rho["w"] = 1.0
    return rho


def edelman_log_cover(
    layer: EdelmanLayerRadii,
    *,
    B_X: float,
    B_w21: float,
    S_w: float,
    d: int,
    m: int,
    T: int,
    out_dim: int = 1,
    L_sigma: float = 1.0,
    kappa: float = KAPPA_DEFAULT,
    bias: bool = False,
    row_norm: bool = False,
) -> EdelmanCover:
    """Empirical cover of the single-layer class on ``m`` sequences of length ``T`` (:prf:ref:`thm-edelman-type`)."""
    if not isinstance(layer, EdelmanLayerRadii):
        raise ParameterError(f"layer must be an EdelmanLayerRadii, got {type(layer).__name__}")
    d, m, T = check_positive_int(d, "d"), check_positive_int(m, "m"), check_positive_int(T, "T")
    out_dim = check_positive_int(out_dim, "out_dim")
    B_w21, S_w = check_real(B_w21, "B_w21", lo=0.0), check_real(S_w, "S_w", lo=0.0)
    rho = edelman_sensitivities(layer, B_X=B_X, S_w=S_w, L_sigma=L_sigma, kappa=kappa, bias=bias)
    Bt = _aug(B_X, bias)
    din = d + (1 if bias else 0)
    zhang = tuple(
        ZhangTerm(f"QK[{h + 1}]", rho[f"QK[{h + 1}]"], Bt * Bt, F, m * T)
        for h, F in enumerate(layer.F_QK)
    )
    terms = []
    for h, (b21, sv) in enumerate(zip(layer.B_V21, layer.S_V)):
        terms.append(
            CoverTerm(
                f"V[{h + 1}]",
                rho[f"V[{h + 1}]"] * Bt,
                b21,
                math.log(2 * din * d),
                2.0 if sv < b21 else 1.0,
            )
        )
    R = L_sigma * sum(layer.S_V) * Bt
    if layer.dense:
        terms.append(
            CoverTerm(
                "C",
                rho["C"] * _aug(R, bias),
                layer.B_C21,
                math.log(2 * din * d),
                2.0 if layer.S_C < layer.B_C21 else 1.0,
            )
        )
        B1 = layer.S_C * _aug(R, bias)
    else:
        B1 = R
    B1 = 1.0 if row_norm else B1
    terms.append(CoverTerm("w", _aug(B1, bias), B_w21, math.log(2 * din * out_dim), 1.0))
    return EdelmanCover(tuple(terms), zhang)


@dataclass(frozen=True)
class EdelmanBound(DudleyHooks, BoundResult):
    """An Edelman-type bound: ``value`` (generalization gap of the ramp loss), ``rademacher`` (Dudley,
    numerical infimum), ``log_cover``, ``dudley``, the norms used, and ``m``, ``T``, ``delta``, ``margin``.

    What the value is (:prf:ref:`cor-edelman-capacity`): ``trivial``, ``capacity`` (free of ``m`` and
    ``T``; ``rademacher <= capacity * log_factor / sqrt(m)`` with the ``log(mT)`` in ``log_factor``),
    ``samples_needed``, ``at``, ``to_dict`` (the protocol of :mod:`genbound.bounds._result`, with
    ``gap_at(m) = at(m).value`` and ``n_samples = m``).

    >>> lay = EdelmanLayerRadii((1.0,), (1.0,), (1.0,))
    >>> r = edelman_bound(lay, B_X=1.0, B_w21=1.0, S_w=1.0, d=4, m=300, T=10, delta=0.05)
    >>> r.trivial, r.capacity == r.at(10**8).capacity
    (True, True)
    """

    value: float
    rademacher: float
    log_cover: EdelmanCover
    dudley: DudleyResult
    norms: dict
    m: int
    T: int
    delta: float
    margin: float
    loss_lipschitz: float

    @property
    def loss_cover(self) -> EdelmanCover:
        """The cover of the ramp-loss class (every sensitivity times ``loss_lipschitz``)."""
        return self.log_cover.scaled(self.loss_lipschitz)

    @property
    def capacity(self) -> float:
        """``12 (sqrt(A0) + (c/2) sqrt(Lambda))`` of the loss cover at ``c = 1/2``
        (:func:`genbound.rademacher.inverse_square_capacity`); free of ``m`` and ``T``."""
        cov = self.loss_cover
        return inverse_square_capacity(cov.A0, cov.Lambda, diameter=self.dudley.diameter)

    @property
    def log_factor(self) -> float:
        """``sqrt(l(alpha_0)) max(1, 1 + log(c sqrt(m) / (6 sqrt(A0))))`` with ``alpha_0 = min(3 sqrt(A0) /
        sqrt(m), c/2)`` and ``l`` Zhang's logarithm (:meth:`EdelmanCover.log_factor`, where ``log(mT)``
        enters): ``rademacher <= capacity * log_factor / sqrt(m)``."""
        cov, c = self.loss_cover, self.dudley.diameter
        a0 = min(INVERSE_SQUARE_ALPHA_COEF * math.sqrt(cov.A0) / math.sqrt(self.m), c / 2)
        ell = cov.log_factor(a0) if a0 > 0 else 1.0
        return math.sqrt(ell) * inverse_square_log_factor(cov.A0, m=self.m, diameter=c)

    def _dict_fields(self) -> dict:
        return {
            "log_factor": self.log_factor,
            "rademacher": self.rademacher,
            "m": int(self.m),
            "T": int(self.T),
            "delta": float(self.delta),
            "margin": float(self.margin),
        }

    @classmethod
    def examples(cls) -> list["EdelmanBound"]:
        """One head at ``m = 300`` (trivial) and ``10**8`` (not), and two heads with a dense map."""
        lay = EdelmanLayerRadii((1.0,), (1.0,), (1.0,))
        two = EdelmanLayerRadii((1.0, 0.5), (1.0, 0.5), (0.5, 0.5), 1.0, 0.5)
        kw = dict(B_X=1.0, B_w21=1.0, S_w=1.0, d=4, T=10, delta=0.05)
        return [
            edelman_bound(lay, m=300, **kw),
            edelman_bound(lay, m=10**8, **kw),
            edelman_bound(two, m=10**9, margin=0.5, bias=True, **{**kw, "T": 1000}),
        ]

    def at(self, m: int) -> "EdelmanBound":
        """The same bound (every radius, ``T``, ``delta`` and ``margin`` held fixed) at sample size ``m``."""
        n = self.norms
        return edelman_bound(
            n["layer"],
            B_X=n["B_X"],
            B_w21=n["B_w21"],
            S_w=n["S_w"],
            d=n["d"],
            m=m,
            T=self.T,
            delta=self.delta,
            margin=self.margin,
            out_dim=n["out_dim"],
            L_sigma=n["L_sigma"],
            kappa=n["kappa"],
            bias=n["bias"],
            row_norm=n["row_norm"],
        )


def edelman_bound(
    layer: EdelmanLayerRadii,
    *,
    B_X: float,
    B_w21: float,
    S_w: float,
    d: int,
    m: int,
    T: int,
    delta: float,
    margin: float = 1.0,
    out_dim: int = 1,
    L_sigma: float = 1.0,
    kappa: float = KAPPA_DEFAULT,
    bias: bool = False,
    row_norm: bool = False,
) -> EdelmanBound:
    """Generalization bound of :prf:ref:`thm-edelman-type` for sequences of length ``T`` (``<= T`` also
    fine: the cover only grows with ``n = m T``). ``2 R + 3 sqrt(log(2/delta)/(2m))`` with ``R`` Dudley's
    bound (numerical infimum over ``alpha``) for the ramp-loss class, capped at ``1/2``."""
    delta = check_real(delta, "delta", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    Lloss = loss_lipschitz(margin, out_dim)
    cover = edelman_log_cover(
        layer,
        B_X=B_X,
        B_w21=B_w21,
        S_w=S_w,
        d=d,
        m=m,
        T=T,
        out_dim=out_dim,
        L_sigma=L_sigma,
        kappa=kappa,
        bias=bias,
        row_norm=row_norm,
    )
    dud = dudley_bound(cover.scaled(Lloss), m=m, diameter=0.5)
    rad = min(dud.value, TRIVIAL_RADEMACHER)
    value = generalization_gap_bound(rad, m=m, delta=delta, b=1.0)
    norms = {
        "B_X": float(B_X),
        "B_w21": B_w21,
        "S_w": S_w,
        "layer": layer,
        "d": d,
        "out_dim": out_dim,
        "L_sigma": float(L_sigma),
        "kappa": float(kappa),
        "bias": bool(bias),
        "row_norm": bool(row_norm),
    }
    return EdelmanBound(value, rad, cover, dud, norms, m, T, float(delta), float(margin), Lloss)


def edelman_bound_from_model(
    model,
    *,
    m: int,
    T: int,
    delta: float,
    B_X: float,
    margin: float = 1.0,
    kappa: float = KAPPA_DEFAULT,
    radius_grid: bool = False,
) -> EdelmanBound:
    """:func:`edelman_bound` with the radii read off a one-layer :class:`genbound.nets.ReferenceTransformer`.

    ``radius_grid``: round every radius up to a power of 2 and pay for it in the confidence
    (:prf:ref:`thm-radius-union`), so that the bound holds at norms read off a trained model.

    >>> from genbound.nets import ReferenceTransformer
    >>> r = edelman_bound_from_model(ReferenceTransformer(4, seed=0), m=1000, T=50, delta=0.05, B_X=1.0)
    >>> r.value > 0 and r.T == 50
    True
    """
    if not hasattr(model, "weight_norms") or not hasattr(model, "n_layers"):
        raise ArchitectureError(
            f"expected a genbound.nets.ReferenceTransformer, got {type(model).__name__}"
        )
    if model.n_layers != 1:
        raise ArchitectureError(
            f"the Edelman-type bound is implemented for one layer, the model has {model.n_layers}"
        )
    n = model.weight_norms()
    layer = EdelmanLayerRadii(
        tuple(float(v) for v in n["QK"]["fro"][0]),
        tuple(float(v) for v in n["V"]["l21"][0]),
        tuple(float(v) for v in n["V"]["op"][0]),
        float(n["C"]["l21"][0]) if "C" in n else None,
        float(n["C"]["op"][0]) if "C" in n else None,
    )
    B_w21, S_w = float(n["w"]["l21"]), float(n["w"]["op"])
    if radius_grid:
        (layer,), idx = round_layer_radii([layer])
        (B_w21, S_w), i_w = round_radii([B_w21, S_w])
        delta = _rg.union_delta(delta, idx + i_w)  # through the module: a patch of it reaches here
    return edelman_bound(
        layer,
        B_X=B_X,
        B_w21=B_w21,
        S_w=S_w,
        d=model.d,
        m=m,
        T=T,
        delta=delta,
        margin=margin,
        out_dim=model.out_dim,
        L_sigma=model.L_sigma,
        kappa=kappa,
        bias=model.bias,
        row_norm=model.row_norm,
    )
