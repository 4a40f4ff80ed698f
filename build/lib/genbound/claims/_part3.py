"""What the claim modules of Part III share: log-uniform draws, the tolerance bookkeeping of the two-sided
checks (:class:`_Excess`, :data:`EQ_RTOL`), the sympy side of the proxy lambdified once (:func:`_sym_numeric`)
and a few sampling helpers. The claims live in one module per chapter: :mod:`.part3_schatten`,
:mod:`.part3_entropy`, :mod:`.part3_deep`, :mod:`.part3_examples`, :mod:`.part3_trained`. Constants come
from :mod:`genbound.symbolic.sakai_imaizumi` through :mod:`genbound.schatten_entropy`.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import torch

from ..symbolic import sakai_imaizumi as sym
from ..symbolic import spectral_bound as _sb
from ..weights import KINDS as _KINDS
from . import register_cache

DT = torch.float64


def _u(gen, n, lo, hi):
    return lo + (hi - lo) * torch.rand(n, generator=gen, dtype=DT)


def _all(*fns):
    return lambda: all(bool(f()) for f in fns)


_T, _N, _H, _F = 4, 4, 2, 8  # tokens, width, heads, hidden width of the small reference models


def _ball(gen, *shape):
    X = torch.randn(*shape, generator=gen, dtype=DT)
    r = torch.rand(*shape[:-1], 1, generator=gen, dtype=DT) ** 0.5
    return X / X.norm(dim=-1, keepdim=True) * r


@register_cache
@lru_cache(maxsize=None)
def _sym_numeric():
    """The sympy side, lambdified once: exponents of T(p), gammas (authors' and derived), kappa_p, the
    constants L_phi, 4, 2 and the Edelman exponents."""
    e = _sb.term_exponents()
    ex = {k: sym.sp.lambdify(_sb.p, v, "numpy") for k, v in e.items()}
    g_auth = {
        k: sym.sp.lambdify((sym.C_V, sym.C_in, sym.C_out), sym.gamma_authors(k), "numpy")
        for k in _KINDS
    }
    g_der = {
        k: sym.sp.lambdify((sym.C_V, sym.C_in, sym.C_out, sym.L_phi), sym.GAMMA_STATED[k], "numpy")
        for k in _KINDS
    }
    kappa = sym.sp.lambdify(sym.p, sym.capacity_factor(), "numpy")
    cp = sym.sp.lambdify(sym.p, sym.c_p(), "numpy")
    return {
        "exp": ex,
        "gamma_authors": g_auth,
        "gamma_derived": g_der,
        "kappa": kappa,
        "c_p": cp,
        "L_phi": float(_sb.L_phi_two_decimals()),
        "qk4": float(_sb.attention_qk_factor()),
        "qk2": float(_sb.gamma_qk_factor()),
        "inner": float(_sb.EDELMAN_INNER_EXPONENT),
        "outer": float(_sb.EDELMAN_OUTER_EXPONENT),
    }


def _np_logsumexp(x, axis=None):
    x = np.asarray(x, dtype=np.float64)
    mx = np.max(x, axis=axis, keepdims=True)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(x - mx), axis=axis, keepdims=True)) + mx
    return np.squeeze(out, axis=axis) if axis is not None else float(out.squeeze())


# Two-sided checks of the published functions: each value equals an independent evaluation (numpy's SVD of
# the dense matrices; the stated formulas, constants, exponents, gammas and grid from sympy). Each comparison
# has its own tolerance ``tol`` (relative to the scale named); the check's ratio is ``1 + EQ_RTOL * excess``
# with ``excess = max error / (tol * scale)``, so the claim passes exactly when every comparison is within its
# tolerance, and a constant loosened or tightened by any factor above ``1 + tol`` fails.
EQ_RTOL = (
    1e-10  #: the claims' rtol: a ratio above 1 + EQ_RTOL means some comparison missed its tolerance
)


class _Excess:
    """Collects ``error / (tol * scale)`` over many comparisons; :meth:`ratio` is what the claim checks."""

    def __init__(self):
        self.worst, self.n, self.where = 0.0, 0, ""

    def close(self, got, want, tol, *, scale=None, what=""):
        g = np.asarray(
            got.detach().cpu().numpy() if isinstance(got, torch.Tensor) else got, dtype=np.float64
        )
        w = np.asarray(want, dtype=np.float64)
        if g.shape != w.shape:
            self._add(math.inf, f"{what}: shape {g.shape} != {w.shape}")
            return
        both_inf = np.isinf(g) & np.isinf(w) & (np.sign(g) == np.sign(w))
        if np.any(np.isnan(g)) or np.any((np.isinf(g) | np.isinf(w)) & ~both_inf):
            self._add(math.inf, what)
            return
        gg, ww = np.where(both_inf, 0.0, g), np.where(both_inf, 0.0, w)
        sc = (
            np.maximum(np.abs(ww), 1e-300)
            if scale is None
            else np.broadcast_to(np.asarray(scale, dtype=np.float64), ww.shape)
        )
        err = np.abs(gg - ww) / (tol * np.maximum(sc, 1e-300))
        self._add(float(err.max()) if err.size else 0.0, what)
        self.n += int(w.size)

    def holds(self, ok: bool, what=""):
        self._add(0.0 if ok else math.inf, what)
        self.n += 1

    def raises(self, fn, exc, what=""):
        try:
            fn()
        except exc:
            self.holds(True, what)
            return
        self.holds(False, what + " did not raise")

    def _add(self, e, what):
        if e > self.worst:
            self.worst, self.where = e, what

    def ratio(self):
        return (math.inf if not math.isfinite(self.worst) else 1.0 + EQ_RTOL * self.worst), self.n
