"""Trauger-Tewari perturbation constants **derived** stage by stage (Part II).

Book: :ref:`ch-tt-single-layer` (:prf:ref:`lem-tt-single-perturbation`), :ref:`ch-tt-multilayer`
(:prf:ref:`lem-tt-layer-lipschitz`, :prf:ref:`lem-tt-multilayer-perturbation`).

:mod:`genbound.symbolic.trauger_tewari` types ``layer_lipschitz``, ``layer_error`` and the unrolled
sensitivities as formulas. Here nothing is typed but the premises the chapters state, one per stage of a
layer; each stage maps a :class:`Tracked` quantity (a bound ``size`` on its norm, valid for the network and
its cover element, and a bound ``err`` on their difference, linear in the input error ``Delta`` and the
parameter errors ``eta``) to the next one. The premises:

* :func:`product` (a map ``x W`` against ``x_hat W_hat``): ``xW - x_hat W_hat = (x - x_hat) W + x_hat (W - W_hat)``
  (or the same split with the hats swapped), so ``err <= S err_x + size_x eta`` by the triangle inequality
  and ``||x M|| <= ||x|| ||M||_op``;
* :func:`scores` (``s_t = x_i W_QK x_t^T``): three terms of the same split, ``S (err_x size_z + size_x err_z)
  + size_x size_z eta``;
* :func:`softmax`: ``||a - a_hat||_1 <= kappa ||s - s_hat||_inf`` (:prf:ref:`lem-softmax-linf-l1`);
* :func:`pool` (``p = a^T Z``): ``(a - a_hat)^T Z + a_hat^T (Z - Z_hat)``; a convex combination of rows is
  no longer than the longest row, so ``err <= size_Z err_a + err_Z``, ``size = size_Z``;
* :func:`activation`: ``L_sigma``-Lipschitz with ``sigma(0) = 0``; :func:`augment`: the constant coordinate
  ``[z, 1]`` adds to the size (``sqrt(size^2 + 1)``), not to the error; :func:`project`: ``Pi`` onto the
  unit ball is 1-Lipschitz and its rows have norm ``<= 1``.

:func:`layer` composes them (heads summed by the triangle inequality); the coefficient of ``Delta`` is the
layer's Lipschitz constant, the rest its parameter error. :func:`chain_sensitivities` runs the layers from
``Delta_0 = 0`` and the readout, and reads every sensitivity off as a derivative. Tests compare the result
with the typed formulas and with :func:`genbound.bounds.trauger_tewari.sensitivities_raw`.

>>> verify_layer(2, dense=True, bias=True), verify_chain(2, 2, dense=True, bias=True)
(True, True)
"""

from __future__ import annotations

from typing import NamedTuple

import sympy as sp

from . import trauger_tewari as st

__all__ = [
    "Delta",
    "Tracked",
    "product",
    "scores",
    "softmax",
    "pool",
    "activation",
    "augment",
    "project",
    "layer",
    "layer_constants",
    "chain_sensitivities",
    "verify_layer",
    "verify_chain",
    "verify_against_code",
]

#: The max-row-norm error of a layer's input, ``||Z - Z_hat||_row``.
Delta = sp.Symbol("Delta", nonnegative=True)


class Tracked(NamedTuple):
    """A quantity of the forward pass: ``size`` bounds its norm (network and cover element alike),
    ``err`` bounds the norm of its difference between the two."""

    size: sp.Expr
    err: sp.Expr


def product(x: Tracked, S, eta) -> Tracked:
    """``y = x W``: ``||y|| <= S ||x||``, ``||y - y_hat|| <= S err_x + size_x eta`` (``S`` bounds the
    spectral norm of the matrix that multiplies the error, ``eta = ||W - W_hat||_op``)."""
    return Tracked(S * x.size, S * x.err + x.size * eta)


def scores(x: Tracked, S_QK, eta_QK) -> Tracked:
    """``s_t = x_i W_QK x_t^T`` with both rows from ``x``; size and error in ``l_inf`` over ``t``:
    ``(x - x_hat) W z + x_hat W (z - z_hat) + x_hat (W - W_hat) z_hat``."""
    return Tracked(S_QK * x.size**2, 2 * S_QK * x.size * x.err + x.size**2 * eta_QK)


def softmax(s: Tracked) -> Tracked:
    """Attention weights, in ``l_1``: size 1 (a probability vector), error ``kappa err_s``."""
    return Tracked(sp.Integer(1), st.kappa * s.err)


def pool(a: Tracked, Z: Tracked) -> Tracked:
    """``p = a^T Z`` (``a`` a probability vector): ``size_Z``, ``size_Z err_a + err_Z``."""
    return Tracked(Z.size, Z.size * a.err + a.size * Z.err)


def activation(y: Tracked) -> Tracked:
    """``sigma`` applied entrywise, ``L_sigma``-Lipschitz with ``sigma(0) = 0``."""
    return Tracked(st.L_sigma * y.size, st.L_sigma * y.err)


def augment(y: Tracked, bias: bool) -> Tracked:
    """``[y, 1]`` with biases (the constant coordinate does not move), else ``y``."""
    return Tracked(st.aug(y.size, bias), y.err)


def project(y: Tracked) -> Tracked:
    """``Pi``: rows projected onto the unit ball, a 1-Lipschitz map."""
    return Tracked(sp.Integer(1), y.err)


def layer(Z: Tracked, symbols, *, bias: bool, row_norm: bool) -> Tracked:
    """One layer ``Pi(sigma(sum_h softmax(Z~ W_QK^h Z~^T) Z~ W_V^h) W_C)`` on an input ``Z``
    (``symbols``: ``(S_V, S_QK, eta_QK, eta_V, S_C, eta_C)`` as in
    :func:`genbound.symbolic.trauger_tewari.unrolled_sensitivities`)."""
    sv, sq, eq, ev, sc, ec = symbols
    Zt = augment(Z, bias)
    heads = [
        product(pool(softmax(scores(Zt, sq[h], eq[h])), Zt), sv[h], ev[h]) for h in range(len(sv))
    ]
    y = activation(Tracked(sum(h.size for h in heads), sum(h.err for h in heads)))
    if sc is not None:
        y = product(augment(y, bias), sc, ec)
    return project(y) if row_norm else y


def layer_constants(H: int, *, dense: bool, bias: bool):
    """``(Lip, e, size)`` of one layer on rows of radius ``B_X``: the coefficient of ``Delta``, the error at
    ``Delta = 0`` and the output row radius; with the symbols of layer 1."""
    syms = st._layer_symbols(1, H, dense)
    out = layer(Tracked(st.B_X, Delta), syms, bias=bias, row_norm=False)
    err = sp.expand(out.err)
    return sp.diff(err, Delta), err.subs(Delta, 0), out.size, syms


def chain_sensitivities(
    L: int, H: int = 1, *, dense: bool = True, bias: bool = False, row_norm: bool = False
):
    """``(layers, rho)`` keyed as :func:`genbound.symbolic.trauger_tewari.unrolled_sensitivities`, derived:
    run :func:`layer` ``L`` times from ``(B_X, 0)``, then the readout ``f = z~ w`` (:func:`product` with
    ``||w_hat||_op <= B_w``); ``rho`` of a parameter is the derivative of the output error bound by its
    ``eta`` (the bound is linear in them)."""
    layers = [st._layer_symbols(l, H, dense) for l in range(1, L + 1)]
    Z = Tracked(st.B_X, sp.Integer(0))
    for syms in layers:
        Z = layer(Z, syms, bias=bias, row_norm=row_norm)
    eta_w = sp.Symbol("eta_w", nonnegative=True)
    out = sp.expand(product(augment(Z, bias), st.B_w, eta_w).err)
    rho = {}
    for sv, sq, eq, ev, sc, ec in layers:
        for s in (*eq, *ev, *((ec,) if ec is not None else ())):
            rho[s] = sp.diff(out, s)
    rho["eta_w"] = sp.diff(out, eta_w)
    return layers, rho


def verify_layer(H: int = 2, *, dense: bool = True, bias: bool = True) -> bool:
    """The derived ``Lip`` and ``e`` equal the typed ``layer_lipschitz`` and ``layer_error``."""
    lip, e, _, (sv, sq, eq, ev, sc, ec) = layer_constants(H, dense=dense, bias=bias)
    Bt = st.aug(st.B_X, bias)
    typed_lip = st.layer_lipschitz(sv, sq, Bt, sc)
    typed_e = st.layer_error(sv, eq, ev, Bt, S_C=sc, eta_C=ec, bias=bias)
    return sp.simplify(lip - typed_lip) == 0 and sp.simplify(e - typed_e) == 0


def verify_chain(
    L: int, H: int = 1, *, dense: bool = True, bias: bool = False, row_norm: bool = False
) -> bool:
    """The derived sensitivities equal the typed :func:`~genbound.symbolic.trauger_tewari.unrolled_sensitivities`."""
    _, typed = st.unrolled_sensitivities(L, H, dense=dense, bias=bias, row_norm=row_norm)
    _, derived = chain_sensitivities(L, H, dense=dense, bias=bias, row_norm=row_norm)
    return set(typed) == set(derived) and all(
        sp.simplify(typed[k] - derived[k]) == 0 for k in typed
    )


def _code_name(sym_name: str) -> str:
    """``eta_QK2_1`` -> ``QK[2,1]``, ``eta_C2`` -> ``C[2]``, ``eta_w`` -> ``w`` (the numeric code's keys)."""
    if sym_name == "eta_w":
        return "w"
    body = sym_name[len("eta_") :]
    if body.startswith("C"):
        return f"C[{body[1:]}]"
    kind = "QK" if body.startswith("QK") else "V"
    l, h = body[len(kind) :].split("_")
    return f"{kind}[{l},{h}]"


def verify_against_code(
    L: int,
    H: int = 1,
    *,
    dense: bool = True,
    bias: bool = False,
    row_norm: bool = False,
    trials: int = 4,
    seed: int = 0,
    rtol: float = 1e-10,
) -> bool:
    """:func:`genbound.bounds.trauger_tewari.sensitivities_raw` (sensitivities and every layer's Lipschitz
    constant) equals :func:`chain_sensitivities` and the derived ``Lip`` at random positive radii in
    ``[0.1, 3]`` (``trials`` draws from ``seed``)."""
    import math
    import random

    from ..bounds import trauger_tewari as tt

    layers, rho = chain_sensitivities(L, H, dense=dense, bias=bias, row_norm=row_norm)
    rng = random.Random(seed)
    for _ in range(trials):
        vals = {s: rng.uniform(0.1, 3.0) for s in (st.L_sigma, st.kappa, st.B_X, st.B_w)}
        spec = []
        for sv, sq, _, _, sc, _ in layers:
            for s in (*sv, *sq, *((sc,) if sc is not None else ())):
                vals[s] = rng.uniform(0.1, 3.0)
            spec.append(
                (
                    [vals[s] for s in sq],
                    [vals[s] for s in sv],
                    None if sc is None else vals[sc],
                )
            )
        got, Bs, lips = tt.sensitivities_raw(
            spec,
            B_X=vals[st.B_X],
            B_w=vals[st.B_w],
            L_sigma=vals[st.L_sigma],
            kappa=vals[st.kappa],
            bias=bias,
            row_norm=row_norm,
        )
        want = {_code_name(str(k)): float(v.subs(vals)) for k, v in rho.items()}
        if set(got) != set(want) or not all(
            math.isclose(got[k], want[k], rel_tol=rtol) for k in want
        ):
            return False
        Z = Tracked(st.B_X, Delta)
        for i, syms in enumerate(layers):
            Z = layer(Tracked(Z.size, Delta), syms, bias=bias, row_norm=row_norm)
            lip = float(sp.diff(sp.expand(Z.err), Delta).subs(vals))
            if not math.isclose(lips[i], lip, rel_tol=rtol):
                return False
            if not math.isclose(Bs[i + 1], float(Z.size.subs(vals)), rel_tol=rtol):
                return False
    return True
