"""Claims of :ref:`ch-sparse-majority` (``book/part2/sparse_majority.md``): the supremum over all positions
of the norm of the authors' positional encoding (:mod:`genbound.positional`),
and what lets the Part II bounds be read at a trained network: a sequence-length-uniform input radius and the
union bound over a grid of radii."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import torch

from . import register
from ._core import (
    AllOf,
    Claim,
    FunctionCheck,
    InequalityCheck,
    Mutant,
    replaced,
    scaled,
    timed_check,
)
from ..bounds import radius_grid as _rg
from ..bounds import rows as _rows
from .. import positional as _en
from ..bounds import edelman as _ed
from ..bounds import trauger_tewari as _tt
from ._part2_rows import from_model_agreement, row_check

CH = "book/part2/sparse_majority.md"
F64 = torch.float64
_D = 64
_D_MAX = 64


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

    return torch.linalg.vector_norm(_en.encoding_rows(x, _D), dim=-1) / sup


def _sup_project(p: dict) -> dict:
    return {**p, "x": p["x"].clamp(min=0.0)}


def _chain_identity(seed: int) -> tuple[float, int]:
    """``||PE_x||^2`` of :func:`~genbound.positional.encoding_rows` against the chain
    form of the package, both ways (``max(a/b, b/a)``), at the integers below 5,000 and at 5,000
    uniform reals below ``10^6``."""

    rng = np.random.default_rng(seed)
    x = np.concatenate([np.arange(5000.0), rng.uniform(0.0, 1e6, 5000)])
    a = (_en.encoding_rows(torch.tensor(x), _D) ** 2).sum(-1).numpy()
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
    ok = (
        sp.simplify(
            sp.Integer(10000) ** (-(i + 16) / sp.Integer(64))
            / sp.Integer(10000) ** (-i / sp.Integer(64))
            - sp.Rational(1, 10)
        )
        == 0
    )
    om = [sp.Integer(10000) ** sp.Rational(-k, _D) for k in range(_D)]
    q = _D // 4
    ok &= all(
        om[k] == om[k % q + 3 * q] * sp.Integer(10) ** (3 - k // q) and k % 2 == (k % q) % 2
        for k in range(_D)
    )
    ok &= bool(sp.Poly(X**q - 10, X).is_irreducible)
    ok &= sp.expand(sp.Rational(_D, 8) * (4 + S) - (32 + 8 * S)) == 0
    ok &= sp.Integer(10000) ** sp.Rational(1, 4) == sp.nsimplify(_en.CHAIN_RATIO)
    return bool(ok)


register(
    Claim(
        label="prop-sm-encoding-sup",
        statement="sup over positions x >= 0 of ||PE_x||_2 (d = 64, frequencies 10000^(-i/64)) equals "
        "sqrt(32 + 8 S), S = sup_t sum_(a<4) sin^2(10^a t), about 7.968",
        chapter=CH,
        provenance="reconstructed",
        numeric=AllOf(
            (
                InequalityCheck(
                    _sup_sample,
                    _sup_ratio,
                    _sup_project,
                    trials=20000,
                    starts=16,
                    steps=60,
                    lr=0.01,
                    search=("x",),
                ),
                FunctionCheck(_chain_identity),
                FunctionCheck(_closed_form_vs_numeric),
            )
        ),
        symbolic=_encoding_sup_symbolic,
        rtol=1e-8,
        covers=(
            "genbound.positional.encoding_supremum",
            "genbound.positional.chain_sum_sup",
            "genbound.positional.encoding_norm_sq_by_chains",
            "genbound.positional.supremum_from_chain_sup",
        ),
        mutants=(
            replaced(
                _en,
                "CHAIN_RATIO",
                lambda old: 100.0,
                name="chain-ratio-100",
                what="frequencies d/4 apart in ratio 100 instead of 10",
            ),
            replaced(
                _en,
                "CHAIN_RATIO",
                lambda old: 10.0**1.001,
                name="chain-ratio-off",
                what="chain ratio 10^1.001: the chains almost, but not exactly, geometric in 10",
            ),
            replaced(
                _en,
                "supremum_from_chain_sup",
                lambda old: lambda S, d=64: math.sqrt(d),
                name="sqrt-d",
                what="the supremum taken to be sqrt(d) (every coordinate at +-1 at once)",
            ),
            replaced(
                _en,
                "supremum_from_chain_sup",
                lambda old: lambda S, d=64: math.sqrt(24 + 8 * S),
                name="constant-24",
                what="sqrt(24 + 8 S): the cosine chains' constant 4 d/8 = 32 miscounted",
            ),
            replaced(
                _en,
                "supremum_from_chain_sup",
                lambda old: lambda S, d=64: math.sqrt(d / 8 * S),
                name="cosine-chains-dropped",
                what="sqrt(8 S): only the sine chains counted",
            ),
        ),
    )
)


# ---------------------------------------------------------------------------------------------------
# lem-sm-uniform-radius
# ---------------------------------------------------------------------------------------------------
def _radius_sample(gen: torch.Generator, n: int) -> dict:
    """Rows ``e + p`` in dimension ``d`` (padded to 64 with a mask): ``e`` of l1 norm at most 1, ``p`` with
    coordinates in ``[-1, 1]``; a third of the instances put ``p`` at a sign vector aligned with ``e``
    (the extremal family of the triangle inequality), a third at a real encoding row ``PE_j``."""

    d = torch.randint(1, _D_MAX + 1, (n,), generator=gen)
    d[: n // 6] = 1  # d = 1: the bound is attained
    d[n // 6 : n // 3] = 64
    mask = (torch.arange(_D_MAX)[None, :] < d[:, None]).to(F64)
    e = torch.randn(n, _D_MAX, generator=gen, dtype=F64) * mask
    e = e / e.abs().sum(-1, keepdim=True) * torch.rand(n, 1, generator=gen, dtype=F64).sqrt()
    p = (torch.rand(n, _D_MAX, generator=gen, dtype=F64) * 2 - 1) * mask
    kind = torch.arange(n) % 3
    aligned = torch.where(e >= 0, 1.0, -1.0).to(F64) * mask
    j = torch.randint(0, 10**7, (n,), generator=gen)
    pe = _en.encoding_rows(j, _D_MAX)  # real encoding rows
    p = torch.where((kind == 1)[:, None], aligned, p)
    p = torch.where(((kind == 2) & (d == _D_MAX))[:, None], pe, p)
    return {"e": e, "p": p, "mask": mask}


def _radius_project(x: dict) -> dict:
    e = x["e"] * x["mask"]
    l1 = e.abs().sum(-1, keepdim=True).clamp(min=1.0)
    return {**x, "e": e / l1, "p": x["p"].clamp(-1.0, 1.0) * x["mask"]}


def _radius_ratio(e, p, mask):

    d = mask.sum(-1).round().long()
    bound = torch.tensor([_en.uniform_input_radius(int(k)) for k in d.tolist()], dtype=F64)
    return torch.linalg.vector_norm(e + p, dim=-1) / bound


register(
    Claim(
        label="lem-sm-uniform-radius",
        statement="every input row e + PE_j (||e||_1 <= 1, any position j, any T) has ||e + PE_j||_2 <= 1 + sqrt(d)",
        chapter=CH,
        provenance="reconstructed",
        numeric=InequalityCheck(
            _radius_sample,
            _radius_ratio,
            _radius_project,
            trials=3000,
            starts=12,
            steps=80,
            lr=0.05,
            search=("e", "p"),
        ),
        covers=(
            "genbound.positional.uniform_input_radius",
            "genbound.positional.encoding_rows",
        ),
        mutants=(
            replaced(
                _en,
                "uniform_input_radius",
                lambda old: lambda d: math.sqrt(d),
                name="token-term-dropped",
                what="B_X = sqrt(d): the token embedding's norm left out",
            ),
            replaced(
                _en,
                "uniform_input_radius",
                lambda old: lambda d: 1 + math.sqrt(d) / 2,
                name="encoding-halved",
                what="B_X = 1 + sqrt(d)/2: the encoding term halved",
            ),
        ),
    )
)


# ---------------------------------------------------------------------------------------------------
# thm-radius-union
# ---------------------------------------------------------------------------------------------------
def _rounding_ratio(seed: int) -> tuple[float, int]:
    """Grid rounding covers the norm and costs less than a factor 2: max of ``N / r`` and ``r / (2N)``
    over log-uniform norms and exact powers of two (where ``N / r = 1``)."""

    gen = torch.Generator().manual_seed(seed)
    N = (10 ** (torch.rand(3000, generator=gen, dtype=F64) * 12 - 4)).tolist()
    N += [2.0**k for k in range(-30, 31)] + [2.0**k * (1 + 1e-15) for k in range(-30, 31)]
    worst = 0.0
    for v in N:
        _, r = _rg.grid_point(v)
        worst = max(worst, v / r, r / (_rg.GRID_BASE * v))
    # at an exact power of the base the grid point is the norm itself (r / N = 1, not the next point up,
    # where float log may round the index up)
    for k in range(-60, 61):
        i, r = _rg.grid_point(2.0**k)
        worst = max(worst, r / 2.0**k, 2.0**k / r, 1.0 + abs(i - k))
    return worst, len(N) + 121


#: seconds the rounding part of thm-radius-union may take (it takes well under 1 s): a grid search that walks the
#: wrong way never returns, and the check must then fail rather than hang
ROUNDING_SECONDS = 30.0


def _rounding_check(seed: int) -> tuple[float, int]:
    """:func:`_rounding_ratio` under :data:`ROUNDING_SECONDS` (``inf`` when it does not return)."""
    return timed_check(lambda: _rounding_ratio(seed), ROUNDING_SECONDS)


def _union_mass_ratio(seed: int) -> tuple[float, int]:
    """Total confidence spent over a truncated grid of radius tuples, divided by ``delta``: at most 1.

    Sums ``union_delta(delta, (i_1, ..., i_k))`` over ``|i_j| <= M`` for ``k = 1, 2, 3`` radii and
    ``M`` up to 2,000 (the sum approaches 1 as ``M`` grows, so the check is tight), and compares each
    ``union_delta`` with ``delta`` times the product of the exact rational priors."""
    from fractions import Fraction

    worst, trials = 0.0, 0
    delta = 0.05
    one = {i: _rg.union_delta(delta, [i]) / delta for i in range(-2000, 2001)}
    worst = max(worst, math.fsum(one.values()))
    trials += len(one)
    for M, k in ((60, 2), (12, 3)):
        rng = range(-M, M + 1)
        if k == 2:
            tot = math.fsum(_rg.union_delta(delta, [a, b]) for a in rng for b in rng)
        else:
            tot = math.fsum(
                _rg.union_delta(delta, [a, b, c]) for a in rng for b in rng for c in rng
            )
        worst = max(worst, tot / delta)
        trials += len(rng) ** k
    gen = torch.Generator().manual_seed(seed)
    for _ in range(200):  # each share is delta * prod pi(i_j), exactly
        idx = torch.randint(
            -50, 51, (int(torch.randint(1, 12, (1,), generator=gen)),), generator=gen
        ).tolist()
        exact = Fraction(1)
        for i in idx:
            exact *= Fraction(2, 3 * (abs(i) + 1) * (abs(i) + 2))
        worst = max(worst, _rg.union_delta(delta, idx) / (delta * float(exact)))
        trials += 1
    return worst, trials


def _union_symbolic() -> bool:
    from ..symbolic import radius_grid as srg

    return (
        srg.verify_prior_sums_to_one()
        and srg.verify_rounding_factor()
        and abs(float(srg.prior_normaliser()) - _rg.PRIOR_NORMALISER) < 1e-15
        and _grid_matches_derivation()
    )


def _grid_matches_derivation() -> bool:
    """The numeric grid against the sympy derivation: ``N <= grid_point(N) < sup N`` with ``(1, sup)`` =
    :func:`~genbound.symbolic.radius_grid.rounding_range` at :data:`~genbound.bounds.radius_grid.GRID_BASE` (the ratio at a power of the
    base is the infimum, 1), ``union_delta`` equal to ``delta exp(-sum confidence_cost)`` on grid tuples of
    one to four radii, and the union over all tuples of ``k`` radii summing to ``delta``."""
    import sympy as sp

    from ..symbolic import radius_grid as srg

    lo, hi = (float(v) for v in srg.rounding_range(_rg.GRID_BASE))
    gen = torch.Generator().manual_seed(11)
    N = (10 ** (torch.rand(500, generator=gen, dtype=F64) * 12 - 6)).tolist()
    if not all(lo * v <= _rg.grid_point(v)[1] < hi * v for v in N):
        return False
    if not all(
        _rg.grid_point(_rg.GRID_BASE**k)[1] == lo * _rg.GRID_BASE**k for k in range(-20, 21)
    ):
        return False
    idx = torch.randint(-40, 41, (20, 4), generator=gen).tolist()
    for j, row in enumerate(idx):
        tup = row[: 1 + j % 4]
        want = float(srg.grid_confidence(sp.Rational(1, 20), tup))
        if abs(_rg.union_delta(0.05, tup) / want - 1.0) > 1e-12:
            return False
    delta = sp.Symbol("delta", positive=True)
    return all(sp.simplify(srg.union_failure(k) - delta) == 0 for k in (1, 2, 4))


register(
    Claim(
        label="thm-radius-union",
        statement="with prob >= 1 - delta, every network satisfies the fixed-radius bound at its norms rounded up "
        "to powers of 2, at confidence delta * prod_j (2/3)/((|i_j|+1)(|i_j|+2))",
        chapter=CH,
        provenance="standard",
        numeric=AllOf(
            (
                FunctionCheck(_rounding_check),
                FunctionCheck(_union_mass_ratio),
                FunctionCheck(from_model_agreement),
            )
        ),
        symbolic=_union_symbolic,
        covers=(
            "genbound.bounds.radius_grid.grid_point",
            "genbound.bounds.radius_grid.union_delta",
            "genbound.bounds.radius_grid.prior",
            "genbound.bounds.radius_grid.round_radii",
            "genbound.bounds.radius_grid.round_layer_radii",
            "genbound.bounds.trauger_tewari.trauger_tewari_bound_from_model",
            "genbound.bounds.edelman.edelman_bound_from_model",
        ),
        mutants=(
            scaled(
                _rg,
                "PRIOR_NORMALISER",
                1.5,
                name="prior-unnormalised",
                what="pi(i) = 1/((|i|+1)(|i|+2)): the shares sum to 3/2, not 1",
            ),
            replaced(
                _rg,
                "grid_point",
                lambda old: (
                    lambda r, base=2.0: (old(r, base=base)[0] - 1, old(r, base=base)[1] / base)
                ),
                name="round-down",
                what="radii rounded down to the grid (the network is not in the class)",
            ),
            replaced(
                _rg,
                "union_delta",
                lambda old: lambda delta, indices: delta,
                name="no-confidence-split",
                what="every grid point at the full delta (no union bound)",
            ),
        ),
    )
)


# ---------------------------------------------------------------------------------------------------
# prop-sm-row-bounds
# ---------------------------------------------------------------------------------------------------
def _forced(**fixed):
    """A patch maker: the function called with the keyword arguments ``fixed`` whatever the caller passed."""
    return lambda old: lambda net, **k: old(net, **{**k, **fixed})


register(
    Claim(
        label="prop-sm-row-bounds",
        statement="a saved row's bound columns are the fixed-radius theorems read at the row's saved norms: "
        "_bound and _trivial of the theorem at the norms rounded up to powers of 2 with confidence "
        "delta prod_j (2/3)/((|i_j|+1)(|i_j|+2)) over every radius (readout included), _capacity of the "
        "theorem at the norms themselves, _m_star the sample size at which the certified bound reaches 1/2; "
        "the Edelman-type bound on seq_len + 1 rows, and nan for a network of more than one layer",
        chapter=CH,
        provenance="reconstructed",
        numeric=FunctionCheck(row_check),
        covers=("genbound.bounds.rows.bound_fields", "genbound.bounds.rows.bound_results"),
        mutants=(
            Mutant(
                "no-radius-union",
                "the certified columns at the norms themselves (the union over the grid of radii dropped)",
                (
                    (_rows, "trauger_tewari_bound_from_model", _forced(radius_grid=False)),
                    (_rows, "edelman_bound_from_model", _forced(radius_grid=False)),
                ),
            ),
            Mutant(
                "readout-split-free",
                "the readout's grid indices left out of the confidence split (delta' too large)",
                (
                    (_tt, "round_radii", lambda old: lambda r, **k: (old(r, **k)[0], [])),
                    (_ed, "round_radii", lambda old: lambda r, **k: (old(r, **k)[0], [])),
                ),
            ),
            Mutant(
                "split-by-count",
                "delta' = delta / k over the k radii (a finite union, not the prior over the grid)",
                ((_rg, "union_delta", lambda old: lambda d, idx: d / len(list(idx))),),
            ),
            replaced(
                _rows,
                "trauger_tewari_bound_from_model",
                _forced(radius_grid=True),
                name="capacity-at-grid",
                what="the capacity read at the rounded radii, not at the network's own norms",
            ),
            replaced(
                _rows,
                "edelman_bound_from_model",
                lambda old: lambda net, **k: old(net, **{**k, "T": k["T"] - 1}),
                name="cls-row-dropped",
                what="the Edelman-type bound on seq_len rows (the [CLS] row left out)",
            ),
        ),
    )
)
