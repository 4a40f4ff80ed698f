"""The independent side of the claims of ``book/part2/sparse_majority.md`` that read the Part II bounds at a network's
norms (``thm-radius-union``, ``prop-sm-row-bounds``): every norm read from the model's effective maps with numpy,
rounded up to the grid with ``frexp``, the confidence split with exact fractions, and the fixed-radius theorems
(:func:`~genbound.bounds.trauger_tewari.trauger_tewari_bound`, :func:`~genbound.bounds.edelman.edelman_bound`, whose
values other claims check against sympy) called at those radii. What the package's assembly does
(:func:`~genbound.bounds.trauger_tewari.trauger_tewari_bound_from_model`, :func:`~genbound.bounds.rows.bound_fields`)
is compared with it; nothing here calls the assembly's own reading, rounding or splitting."""

from __future__ import annotations

import math
from collections.abc import Iterator
from fractions import Fraction

import numpy as np
import torch

from ..bounds import edelman as _ed
from ..bounds import rows as _rows
from ..bounds import trauger_tewari as _tt
from ..model_norms import ModelNorms
from ..nets import ReferenceTransformer
from ._core import two_sided

__all__ = ["grid_up", "prior_product", "reference_results", "from_model_agreement", "row_check"]


def grid_up(r: float) -> tuple[int, float]:
    """``(i, 2^i)`` with ``2^i`` the smallest power of two ``>= r``, by ``frexp`` (independent of
    :func:`~genbound.bounds.radius_grid.grid_point`)."""
    mant, ex = math.frexp(r)  # r = mant 2^ex, mant in [0.5, 1)
    i = ex - 1 if mant == 0.5 else ex
    return i, math.ldexp(1.0, i)


def prior_product(indices) -> float:
    """``prod_j (2/3) / ((|i_j|+1)(|i_j|+2))`` in exact fractions."""
    p = Fraction(1)
    for i in indices:
        p *= Fraction(2, 3 * (abs(i) + 1) * (abs(i) + 2))
    return float(p)


def _arr(t) -> np.ndarray:
    return t.detach().double().cpu().numpy()


def _l11(M) -> float:
    return float(np.abs(M).sum())


def _op(M) -> float:
    return float(np.linalg.norm(M, 2))


def _fro(M) -> float:
    return float(np.linalg.norm(M))


def _l21(M) -> float:  # column convention: the sum of the columns' l2 norms
    return float(np.linalg.norm(M, axis=0).sum())


def reference_results(net, *, m: int, T: int, delta: float, B_X: float, margin: float, grid: bool):
    """The Trauger-Tewari result and (one layer only, else ``None``) the Edelman-type result of ``net`` for
    sequences of ``T`` rows, at its norms (``grid=False``) or at its norms rounded up to powers of 2 with the
    confidence ``delta prod_j pi(i_j)`` (``grid=True``), read and rounded independently of the package."""
    E = net.effective_weights()
    dense = E.C is not None and E.C[0] is not None

    def theorem_at(read):
        idx: list[int] = []

        def rad(v):
            if not grid:
                return v
            j, r = grid_up(v)
            idx.append(j)
            return r

        args = read(rad)
        return args, (delta * prior_product(idx) if grid else delta)

    def tt_read(rad):
        layers = []
        for l in range(net.n_layers):
            QK, V = _arr(E.QK[l]), _arr(E.V[l])
            H = QK.shape[0]
            B_QK = tuple(rad(_l11(QK[h])) for h in range(H))
            S_QK = tuple(rad(_op(QK[h])) for h in range(H))
            B_V = tuple(rad(_l11(V[h])) for h in range(H))
            S_V = tuple(rad(_op(V[h])) for h in range(H))
            C = (rad(_l11(_arr(E.C[l]))), rad(_op(_arr(E.C[l])))) if dense else (None, None)
            layers.append(_tt.LayerRadii(B_QK, S_QK, B_V, S_V, *C))
        return layers, rad(_l11(_arr(E.w)))

    common = dict(
        B_X=B_X,
        d=net.d,
        m=m,
        margin=margin,
        out_dim=net.out_dim,
        L_sigma=net.L_sigma,
        bias=net.bias,
        row_norm=net.row_norm,
    )
    (layers, B_w), d_tt = theorem_at(tt_read)
    tt = _tt.trauger_tewari_bound(layers, B_w=B_w, delta=d_tt, **common)
    if net.n_layers != 1:
        return tt, None

    def ed_read(rad):
        QK, V = _arr(E.QK[0]), _arr(E.V[0])
        H = QK.shape[0]
        lay = _ed.EdelmanLayerRadii(
            tuple(rad(_fro(QK[h])) for h in range(H)),
            tuple(rad(_l21(V[h])) for h in range(H)),
            tuple(rad(_op(V[h])) for h in range(H)),
            rad(_l21(_arr(E.C[0]))) if dense else None,
            rad(_op(_arr(E.C[0]))) if dense else None,
        )
        return lay, rad(_l21(_arr(E.w))), rad(_op(_arr(E.w)))

    (lay, B_w21, S_w), d_ed = theorem_at(ed_read)
    ed = _ed.edelman_bound(lay, B_w21=B_w21, S_w=S_w, T=T, delta=d_ed, **common)
    return tt, ed


def _random_net(rng, i: int):
    """A random reference transformer (depth 1 or 2, with and without biases and the dense map, one or two
    heads, one or two outputs), its weights scaled by a log-uniform factor over four decades."""
    net = ReferenceTransformer(
        int(rng.integers(3, 7)),
        n_layers=1 + (i % 2),
        n_heads=int(rng.integers(1, 3)),
        out_dim=int(rng.integers(1, 3)),
        bias=bool(i % 4 >= 2),
        dense=bool(i % 8 < 6),
        seed=int(rng.integers(10**6)),
    )
    with torch.no_grad():
        scale = 10 ** rng.uniform(-2, 2)
        for prm in net.parameters():
            prm.mul_(scale)
    return net


def _inputs(rng) -> dict:
    return dict(
        m=int(10 ** rng.uniform(2, 12)),
        delta=float(10 ** rng.uniform(-3, -1)),
        B_X=float(rng.uniform(0.5, 3)),
    )


def from_model_agreement(seed: int) -> Iterator[tuple[float, int]]:
    """The bounds at a model's norms, read by the package, equal the theorems at independently read,
    rounded radii: ``max(v / ref, ref / v)`` over random :class:`~genbound.nets.ReferenceTransformer`
    models (depths 1-2 for Trauger-Tewari, 1 for Edelman-type; with and without biases and the dense
    map; weights scaled over four decades), with and without the radius grid (:func:`reference_results`).
    Yields ``(ratio, 1)`` per comparison (the parts of a :class:`~genbound.claims.FunctionCheck`)."""
    rng = np.random.default_rng(seed)
    for i in range(16):
        net, kw = _random_net(rng, i), _inputs(rng)
        T = int(rng.integers(2, 200))
        for grid in (False, True):
            tt, ed = reference_results(net, T=T, margin=1.0, grid=grid, **kw)
            got = _tt.trauger_tewari_bound_from_model(net, radius_grid=grid, **kw).value
            yield two_sided(got, tt.value), 1
            if ed is not None:
                got = _ed.edelman_bound_from_model(net, T=T, radius_grid=grid, **kw).value
                yield two_sided(got, ed.value), 1


#: instances of :func:`row_check`, and how many of them also compare the sample size needed (a bisection each)
ROW_INSTANCES, ROW_M_STAR = 12, 3


def row_check(seed: int) -> Iterator[tuple[float, int]]:
    """A saved row's bound columns against their independent recomputation: for random networks, the row's
    inputs (the :class:`~genbound.nets.ModelNorms` JSON, ``m``, ``T``, ``B_X``, ``delta``, margin) go through
    :func:`~genbound.bounds.rows.bound_fields`; the reference is :func:`reference_results` at the grid (the
    certified ``_bound``, ``_trivial``, ``_m_star``) and at the own norms (``_capacity``), with ``T + 1`` rows
    for the Edelman-type bound; its fields are ``nan`` for a deeper network. The worst two-sided ratio; a
    trivial flag that differs, or a ``nan`` where a number is due (or the reverse), counts as ``inf``. Yields
    ``(ratio, trials)`` per compared field, one trial per bound (the parts of a ``FunctionCheck``)."""
    rng = np.random.default_rng(seed)
    yield 1.0, 0
    for i in range(ROW_INSTANCES):
        net, kw = _random_net(rng, i), _inputs(rng)
        seq_len, margin = int(rng.integers(1, 200)), float(rng.uniform(0.25, 2.0))
        target = 0.5 if i < ROW_M_STAR else None
        saved = ModelNorms.from_json(ModelNorms.of(net).to_json())
        row = _rows.bound_fields(saved, seq_len=seq_len, margin=margin, m_star_target=target, **kw)
        cert = reference_results(net, T=seq_len + 1, margin=margin, grid=True, **kw)
        own = reference_results(net, T=seq_len + 1, margin=margin, grid=False, **kw)
        for name, r, r_own in zip(("tt", "edelman"), cert, own):
            if r is None:
                nan_ok = all(math.isnan(float(v)) for k, v in row.items() if k.startswith(name))
                yield (1.0 if nan_ok else math.inf), 0
                continue
            pairs = [(row[f"{name}_bound"], r.value), (row[f"{name}_capacity"], r_own.capacity)]
            if target is not None:
                pairs.append((row[f"{name}_m_star"], float(r.samples_needed(target))))
            for got, ref in pairs:
                yield two_sided(float(got), float(ref)), 0
            yield (1.0 if bool(row[f"{name}_trivial"]) == bool(r.trivial) else math.inf), 1
