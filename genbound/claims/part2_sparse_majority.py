"""Claims of :ref:`ch-sparse-majority` about the experiment's inputs: the supremum over all positions of
the norm of the authors' positional encoding (:mod:`genbound.experiments.sparse_majority.encoding_norm`)."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import torch

from . import register
from ._core import AllOf, Claim, FunctionCheck, InequalityCheck, replaced
from ..experiments.sparse_majority import encoding_norm as _en

CH = "book/part2/sparse_majority.md"
F64 = torch.float64
_D = 64


# ---------------------------------------------------------------------------------------------------
# prop-sm-encoding-sup
# ---------------------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _reference_chain_extremes() -> tuple[float, float]:
    """``(sup F, inf F)`` for ``F(t) = sum_(a<4) sin^2(10^a t)``, independently of the package: through
    ``F = 2 - c(2t) / 2`` with ``c(u) = sum_a cos(10^a u)`` (period ``2 pi``, ``c(2 pi - u) = c(u)``), a grid
    of step ``2e-7`` on ``u in [0, pi]`` in chunks, then ten Newton steps on ``c'`` from the 64 best grid
    points of each extreme. Not registered as a cache: it calls no package code, so a mutant cannot
    change it."""
    tens = 10.0 ** np.arange(4)

    def c(u):
        return np.cos(np.multiply.outer(u, tens)).sum(-1)

    def newton(u):
        for _ in range(10):
            s = np.multiply.outer(u, tens)
            g = -(tens * np.sin(s)).sum(-1)
            h = -(tens**2 * np.cos(s)).sum(-1)
            u = u - np.where(h != 0, g / np.where(h == 0, 1.0, h), 0.0)
        return u

    h, lo_best, hi_best = 2e-7, [], []
    edges = np.linspace(0.0, math.pi, 41)
    for a, b in zip(edges[:-1], edges[1:]):
        u = np.arange(a, b + h, h)
        v = c(u)
        k = np.argsort(v)
        lo_best.append(u[k[:64]])
        hi_best.append(u[k[-64:]])
    u_min = newton(np.concatenate(lo_best))
    u_max = newton(np.concatenate(hi_best))
    c_min = min(float(c(u_min).min()), float(c(np.concatenate(lo_best)).min()))
    c_max = max(float(c(u_max).max()), float(c(np.concatenate(hi_best)).max()))
    return 2.0 - c_min / 2.0, 2.0 - c_max / 2.0


def _sup_sample(gen: torch.Generator, n: int) -> dict:
    """Positions: every integer below ``n/2``, the rest log-uniform reals up to ``10^9``; and the
    package's supremum (computed once per run, so that a mutant of it is what the ratio divides by)."""
    ints = torch.arange(n // 2, dtype=F64)
    reals = 10 ** (torch.rand(n - n // 2, generator=gen, dtype=F64) * 9)
    x = torch.cat([ints, reals])
    return {"x": x, "sup": torch.full_like(x, _en.encoding_supremum(_D))}


def _sup_ratio(x, sup):
    from ..experiments.sparse_majority import encoding_rows

    return torch.linalg.vector_norm(encoding_rows(x, _D), dim=-1) / sup


def _sup_project(p: dict) -> dict:
    return {**p, "x": p["x"].clamp(min=0.0)}


def _chain_identity(seed: int) -> tuple[float, int]:
    """``||PE_x||^2`` of :func:`~genbound.experiments.sparse_majority.encoding_rows` against the chain
    form of the package, both ways (``max(a/b, b/a)``), at the integers below 5,000 and at 5,000
    uniform reals below ``10^6``."""
    from ..experiments.sparse_majority import encoding_rows

    rng = np.random.default_rng(seed)
    x = np.concatenate([np.arange(5000.0), rng.uniform(0.0, 1e6, 5000)])
    a = (encoding_rows(torch.tensor(x), _D) ** 2).sum(-1).numpy()
    b = _en.encoding_norm_sq_by_chains(x, _D)
    return float(np.maximum(a / b, b / a).max()), len(x)


def _closed_form_vs_numeric(seed: int) -> tuple[float, int]:
    """Both ways: the package's ``S`` against the independent ``sup F``, and the package's supremum
    squared against the supremum of the chain form over the torus of chain phases, ``(d/8) sup F +
    (d/8) (4 - inf F)`` with the independent extremes (the sine chains at their largest, the cosine
    chains at theirs)."""
    s_ref, i_ref = _reference_chain_extremes()
    torus_sup = _D / 8 * s_ref + _D / 8 * (4.0 - i_ref)
    S = _en.chain_sum_sup()
    sup2 = _en.encoding_supremum(_D) ** 2
    return max(S / s_ref, s_ref / S, sup2 / torus_sup, torus_sup / sup2), 2


def _encoding_sup_symbolic() -> bool:
    """Sympy, exactly: (i) ``10000^(-(i+16)/64) = 10000^(-i/64) / 10`` for symbolic ``i``; (ii) every
    coordinate ``k`` of the 64 has frequency ``10^a`` times the slowest of its chain ``k mod 16`` with
    ``a = 3 - k // 16``, and the parity of ``k`` is that of ``k mod 16``; (iii) ``x^16 - 10`` is
    irreducible over the rationals, so ``1, 10^(1/16), ..., 10^(15/16)`` are linearly independent (the
    equidistribution step); (iv) ``(64/8)(4 + S) = 32 + 8 S``; (v) ``CHAIN_RATIO`` is ``10000^(1/4)``."""
    import sympy as sp

    i, S, X = sp.Symbol("i", real=True), sp.Symbol("S"), sp.Symbol("X")
    ok = sp.simplify(sp.Integer(10000) ** (-(i + 16) / sp.Integer(64))
                     / sp.Integer(10000) ** (-i / sp.Integer(64)) - sp.Rational(1, 10)) == 0
    om = [sp.Integer(10000) ** sp.Rational(-k, _D) for k in range(_D)]
    q = _D // 4
    ok &= all(om[k] == om[k % q + 3 * q] * sp.Integer(10) ** (3 - k // q) and k % 2 == (k % q) % 2
              for k in range(_D))
    ok &= bool(sp.Poly(X**q - 10, X).is_irreducible)
    ok &= sp.expand(sp.Rational(_D, 8) * (4 + S) - (32 + 8 * S)) == 0
    ok &= sp.Integer(10000) ** sp.Rational(1, 4) == sp.nsimplify(_en.CHAIN_RATIO)
    return bool(ok)


register(Claim(
    label="prop-sm-encoding-sup",
    statement="sup over positions x >= 0 of ||PE_x||_2 (d = 64, frequencies 10000^(-i/64)) equals "
              "sqrt(32 + 8 S), S = sup_t sum_(a<4) sin^2(10^a t), about 7.968",
    chapter=CH, provenance="reconstructed",
    numeric=AllOf((InequalityCheck(_sup_sample, _sup_ratio, _sup_project, trials=20000, starts=16, steps=60,
                                   lr=0.01, search=("x",)),
                   FunctionCheck(_chain_identity), FunctionCheck(_closed_form_vs_numeric))),
    symbolic=_encoding_sup_symbolic, rtol=1e-8,
    covers=("genbound.experiments.sparse_majority.encoding_norm.encoding_supremum",
            "genbound.experiments.sparse_majority.encoding_norm.chain_sum_sup",
            "genbound.experiments.sparse_majority.encoding_norm.encoding_norm_sq_by_chains",
            "genbound.experiments.sparse_majority.encoding_norm.supremum_from_chain_sup"),
    mutants=(replaced(_en, "CHAIN_RATIO", lambda old: 100.0, name="chain-ratio-100",
                      what="frequencies d/4 apart in ratio 100 instead of 10"),
             replaced(_en, "CHAIN_RATIO", lambda old: 10.0 ** 1.001, name="chain-ratio-off",
                      what="chain ratio 10^1.001: the chains almost, but not exactly, geometric in 10"),
             replaced(_en, "supremum_from_chain_sup", lambda old: (lambda S, d=64: math.sqrt(d)),
                      name="sqrt-d", what="the supremum taken to be sqrt(d) (every coordinate at +-1 at once)"),
             replaced(_en, "supremum_from_chain_sup", lambda old: (lambda S, d=64: math.sqrt(24 + 8 * S)),
                      name="constant-24", what="sqrt(24 + 8 S): the cosine chains' constant 4 d/8 = 32 miscounted"),
             replaced(_en, "supremum_from_chain_sup", lambda old: (lambda S, d=64: math.sqrt(d / 8 * S)),
                      name="cosine-chains-dropped", what="sqrt(8 S): only the sine chains counted")),
))
