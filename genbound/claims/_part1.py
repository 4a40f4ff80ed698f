"""What the claim modules of Part I share: the chapter paths, exact Rademacher averages over all sign vectors,
a two-sided relative ratio, and the two-sided checks of the published right-hand sides of Part I against their
statements evaluated from sympy (:func:`part1_equalities`, drawn once for all three chapters; each chapter's
module adds the checks of its own claims with :func:`add_equalities`). The claims themselves live in one
module per chapter: :mod:`.part1_rademacher`, :mod:`.part1_covering`, :mod:`.part1_linear_classes`,
:mod:`.part1_softmax_attention`."""

from __future__ import annotations

import itertools
import math
from functools import lru_cache

import torch

from .. import covering as cov
from .. import rademacher as rad
from ..symbolic import allocation as sym_alloc
from ..symbolic import rademacher as sym_rad
from ._core import AllOf, FunctionCheck, register_cache
from ..symbolic import trauger_tewari as sym_tt
from . import _REGISTRY

CH_RAD = "book/part1/rademacher.md"
CH_COV = "book/part1/covering.md"
CH_LIN = "book/part1/linear_classes.md"
CH_SOFT = "book/part1/softmax_attention.md"
F64 = torch.float64
_TINY = 1e-300


def _signs(m: int) -> torch.Tensor:
    return torch.tensor(list(itertools.product((-1.0, 1.0), repeat=m)), dtype=F64)


def _rad_exact(A: torch.Tensor) -> torch.Tensor:
    """E_sigma max_k (1/m) sigma . A[..., k, :] over all sign vectors; A: (..., K, m)
    (:func:`genbound.rademacher.rademacher_finite_exact`, the published function)."""
    return rad.rademacher_finite_exact(A)


def _rel_ratio(got, want):
    """``1 + |got - want| / |want|`` (``1`` when equal, ``inf`` when only ``want`` is 0): two-sided."""
    if got == want:
        return 1.0
    if want == 0:
        return math.inf
    return 1.0 + abs(got - want) / abs(want)


#: Relative tolerance of the equality checks of :func:`part1_equalities`.
EQUALITY_RTOL = 1e-12


@register_cache
@lru_cache(maxsize=4)
def part1_equalities(seed: int = 0, n: int = 60) -> dict[str, float]:
    """Largest relative difference, per published function, between the function and its statement
    evaluated from sympy on ``n`` random arguments (log-uniform over several decades). A one-sided
    inequality check cannot see a right side made *larger* (a loosened constant); these can.

    Keys: ``massart`` (:func:`genbound.rademacher.massart_bound` against
    :func:`genbound.symbolic.rademacher.massart_bound` over ``m``), ``l1``, ``l2``, ``mcdiarmid``, ``gap``,
    ``maurey``, ``sup_norm``, ``zhang``, ``euclid``, ``allocation``."""
    import random

    sp = sym_rad.sp
    rng = random.Random(seed)
    u = lambda lo, hi: 10 ** rng.uniform(lo, hi)  # noqa: E731
    f_mas = sp.lambdify(
        (sym_rad.r, sym_rad.N, sym_rad.m), sym_rad.massart_bound() / sym_rad.m, "math"
    )
    f_l1 = sp.lambdify(
        (sym_rad.B, sym_rad.colnorm, sym_rad.d, sym_rad.m), sym_rad.l1_linear_bound(), "math"
    )
    S = sp.Symbol("S", positive=True)
    f_l2 = sp.lambdify((sym_rad.B, S, sym_rad.m), sym_rad.B * sp.sqrt(S) / sym_rad.m, "math")
    f_mcd = sp.lambdify(
        (sym_rad.t, S), sp.exp(-sym_rad.chernoff_exponent_coef() * sym_rad.t**2 / S), "math"
    )
    f_gap = sp.lambdify(
        (sym_rad.R, sym_rad.m, sym_rad.delta, sym_rad.b), sym_rad.generalization_gap(), "math"
    )
    Bm, Rm, em, di, do = sp.symbols("B R epsilon d_in d_out", positive=True)
    f_mau = sp.lambdify(
        (Bm, Rm, em, di, do), sp.ceiling(Bm**2 * Rm**2 / em**2) * sp.log(2 * di * do), "math"
    )
    Ksym = sym_rad.sup_norm_atoms()
    Kn, Ka, Ke = (sp.Symbol(x, positive=True) for x in ("n", "a", "epsilon"))
    f_sup = sp.lambdify(
        (sym_rad.B, Ka, Ke, Kn, sym_rad.d), (sp.floor(Ksym) + 1) * sp.log(2 * sym_rad.d), "math"
    )

    za, zb, ze, zn = sp.symbols("a b eta n", positive=True)
    f_zh = sp.lambdify((za, zb, ze, zn), sym_tt.zhang_log_cover_expr(za, zb, ze, zn), "math")
    _f_eu = sp.lambdify((Rm, em, sym_rad.d), sym_rad.d * sp.log(1 + 2 * Rm / em), "mpmath")

    def f_eu(*a):  # log(1 + x) in 30 digits (in floats it loses digits for small x)
        import mpmath

        with mpmath.workdps(30):
            return float(_f_eu(*(mpmath.mpf(x) for x in a)))

    cs, as_, sol = sym_alloc.lagrange_solution(3)
    f_av = sp.lambdify((*cs, *as_, sym_alloc.eps), sym_alloc.optimal_value(3), "math")
    f_split = sp.lambdify(
        (*cs, *as_, sym_alloc.eps), [sol[e] for e in sorted(sol, key=str)], "math"
    )
    rel = lambda a, b: abs(a - b) / max(abs(b), 1e-300)  # noqa: E731
    out = dict.fromkeys(
        (
            "massart",
            "l1",
            "l2",
            "mcdiarmid",
            "gap",
            "maurey",
            "sup_norm",
            "zhang",
            "euclid",
            "allocation",
            "exact_linear",
        ),
        0.0,
    )
    gen = torch.Generator().manual_seed(int(seed))
    for _ in range(n):
        Nn, mm, dd = rng.randint(2, 9), rng.randint(1, 12), rng.randint(1, 9)
        A = torch.randn(Nn, mm, generator=gen, dtype=F64) * u(-2, 2)
        r_ = float(torch.linalg.vector_norm(A, dim=-1).max())
        out["massart"] = max(out["massart"], rel(float(rad.massart_bound(A)), f_mas(r_, Nn, mm)))
        X = torch.randn(mm, dd, generator=gen, dtype=F64) * u(-2, 2)
        Bv = u(-2, 2)
        col = float(torch.linalg.vector_norm(X, dim=-2).max())
        out["l1"] = max(
            out["l1"], rel(float(rad.l1_linear_massart_bound(X, radius=Bv)), f_l1(Bv, col, dd, mm))
        )
        out["l2"] = max(
            out["l2"],
            rel(float(rad.l2_linear_bound(X, radius=Bv)), f_l2(Bv, float((X**2).sum()), mm)),
        )
        if mm <= 10:  # the exact empirical Rademacher average, against all 2^m signs
            sg = _signs(mm)
            for nrm, ordv in (("l2", 2), ("l1", math.inf)):
                brute = float(Bv * torch.linalg.vector_norm(sg @ X, ord=ordv, dim=-1).mean() / mm)
                got = float(
                    rad.empirical_rademacher_linear(
                        X, radius=Bv, norm=nrm, n_draws=None, device="cpu"
                    ).value
                )
                out["exact_linear"] = max(out["exact_linear"], rel(got, brute))
        t_, s_ = u(-3, 0), u(-4, 0)
        tens = float(rad.mcdiarmid_tail(torch.tensor(t_, dtype=F64), torch.tensor(s_, dtype=F64)))
        out["mcdiarmid"] = max(
            out["mcdiarmid"],
            rel(rad.mcdiarmid_tail(t_, s_), f_mcd(t_, s_)),
            rel(tens, f_mcd(t_, s_)),
        )
        R_, M_, dl, b_ = u(-4, 0), rng.randint(1, 10**9), u(-6, -0.01), u(-1, 1)
        out["gap"] = max(
            out["gap"],
            rel(rad.generalization_gap_bound(R_, m=M_, delta=dl, b=b_), f_gap(R_, M_, dl, b_)),
        )
        Bv, Rv, ev, d1, d2 = u(-2, 2), u(-2, 2), u(-2, 1), rng.randint(1, 64), rng.randint(1, 64)
        out["maurey"] = max(
            out["maurey"], rel(cov.maurey_log_cover(Bv, Rv, ev, d1, d2), f_mau(Bv, Rv, ev, d1, d2))
        )
        nn = rng.randint(1, 10**6)
        out["sup_norm"] = max(
            out["sup_norm"],
            rel(cov.sup_norm_maurey_log_cover(Bv, Rv, ev, nn, d1), f_sup(Bv, Rv, ev, nn, d1)),
        )
        out["zhang"] = max(
            out["zhang"],
            rel(cov.zhang_log_cover(Bv, Rv, ev, nn), f_zh(Rv, Bv, ev, nn)),
        )
        out["euclid"] = max(
            out["euclid"], rel(cov.euclidean_ball_log_cover(Rv, ev, d1), f_eu(Rv, ev, d1))
        )
        cc = [u(-3, 3) for _ in range(3)]
        aa = [u(-1, 1) for _ in range(3)]
        ej, val = cov.allocate_scales(cc, ev, weights=aa)
        want = f_split(*cc, *aa, ev)
        out["allocation"] = max(
            out["allocation"],
            rel(val, f_av(*cc, *aa, ev)),
            *(rel(float(x), w) for x, w in zip(ej, want)),
            rel(float(cov.allocation_value(cc, ev, weights=aa)), f_av(*cc, *aa, ev)),
        )
    # edge cases of allocate_scales: one part of cost 1 (the sum S is exactly 1: eps_j = eps, value 1/eps^2) and
    # every cost 0 (S = 0: every scale 0, value 0)
    e1, v1 = cov.allocate_scales([1.0], 0.5)
    e0, v0 = cov.allocate_scales([0.0, 0.0], 0.5)
    out["allocation"] = max(
        out["allocation"],
        rel(float(e1[0]), 0.5),
        rel(v1, 4.0),
        0.0 if (float(e0.abs().sum()), v0) == (0.0, 0.0) else math.inf,
    )
    return out


def _equality_check(name):
    names = (name,) if isinstance(name, str) else tuple(name)

    def fn(seed):
        out = part1_equalities(seed)
        return max(out[k] for k in names) / EQUALITY_RTOL, 60

    return fn


def add_equalities(equalities: dict) -> None:
    """Give each claim of ``equalities`` (``label -> (key or keys of :func:`part1_equalities`, published
    functions it covers)``) one more numeric check: its published right side equals the statement (two-sided).
    Each chapter's module calls it, after registering its claims, for its own claims."""
    from dataclasses import replace as dc_replace

    for label, (key, covers) in equalities.items():
        c = _REGISTRY[label]
        numeric = (
            FunctionCheck(_equality_check(key))
            if c.numeric is None
            else AllOf((c.numeric, FunctionCheck(_equality_check(key))))
        )
        _REGISTRY[label] = dc_replace(c, numeric=numeric, covers=tuple(c.covers) + covers)
