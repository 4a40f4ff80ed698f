"""Claims of :ref:`ch-tt-single-layer` (``book/part2/single_layer.md``): the one-layer perturbation bound
(checked at T = 12 and T = 1024 by random instances plus projected gradient ascent), the one-layer cover
(built constructively) with its value two-sided against sympy, and the m-free capacity of Dudley's closed
form with the contract of ``samples_needed``.
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch

from .. import rademacher as rad_mod
from ..bounds import _result as _result_mod
from ..bounds import trauger_tewari as tt_mod
from ..symbolic import trauger_tewari as sym
from ..symbolic import tt_chain
from . import AllOf, Claim, FunctionCheck, InequalityCheck, register, replaced
from ._core import timed_check
from ._part2 import (
    CAPACITY_MUTANTS,
    CONFIDENCE_3_TO_4,
    COVER_A_HALVED,
    COVER_CONSTANT_DOUBLED,
    QK_RHO_QUARTERED,
    RHO_HALVED,
    TT_COVERS,
    TT_VALUE_CONFIGS,
    VALUE_RTOL,
    _capacity_fn,
    _constructive_cover_ratio,
    _net_sample,
    _op,
    _perturbation_ratio,
    _randn,
    _rel,
    _scales,
    _tt_case,
    _tt_value_check,
    _tt_values,
    one_matrix_checks,
    score_path_check,
    score_path_sample,
)
from ..symbolic import dudley as sd
from ..bounds import _result

CH = "book/part2/single_layer.md"


SINGLE_LONG_T = 1024


def _single_sample(gen, n):
    p = _net_sample(gen, n, L=1, H=2, d=4, T=12, K=1, dense=False, bias=False)
    X = _randn(gen, n, SINGLE_LONG_T, 4) * _scales(gen, n, 1, 1, lo=-0.5, hi=0.5)
    rep = (torch.arange(n) % 3 == 0)[:, None, None]  # long runs of one token plus a few others
    p["X_long"] = torch.where(rep, X[:, :1].expand_as(X) + 0.01 * X, X)
    return p


def cls_forward(QK, V, w, X, act=torch.relu):
    """One layer read at the last row only, ``O(T d^2)``: ``sigma(sum_h softmax(x_cls QK_h X^T) X V_h) w``
    (no dense map, no bias); equal to :func:`genbound.nets.forward_effective` for that class (a test checks)."""
    x = X[:, -1]  # (n, d)
    s = torch.einsum("ni,nhij,ntj->nht", x, QK[:, 0], X)
    a = torch.softmax(s, dim=-1)
    u = torch.einsum("nht,nti,nhid->nd", a, X, V[:, 0])
    return torch.einsum("nd,ndk->nk", act(u), w)


def _single_ratio(**p):
    """Worst of a short sequence (T = 12) and a long one (T = 1024), both searched adversarially."""
    short = _perturbation_ratio(p, bias=False, row_norm=False)
    X = p["X_long"]
    lhs = torch.linalg.vector_norm(
        cls_forward(p["QK"], p["V"], p["w"], X)
        - cls_forward(p["QK_hat"], p["V_hat"], p["w_hat"], X),
        dim=-1,
    )
    H = p["QK"].shape[2]
    spec = [
        ([_op(p["QK"][:, 0, h]) for h in range(H)], [_op(p["V"][:, 0, h]) for h in range(H)], None)
    ]
    B_X = torch.linalg.vector_norm(X, dim=-1).amax(-1)
    rho, _, _ = tt_mod.sensitivities_raw(spec, B_X=B_X, B_w=_op(p["w_hat"]))
    bound = rho["w"] * _op(p["w"] - p["w_hat"])
    for h in range(H):
        bound = bound + rho[f"QK[1,{h + 1}]"] * _op(p["QK"][:, 0, h] - p["QK_hat"][:, 0, h])
        bound = bound + rho[f"V[1,{h + 1}]"] * _op(p["V"][:, 0, h] - p["V_hat"][:, 0, h])
    return torch.maximum(short, lhs / bound)


register(
    Claim(
        label="lem-tt-single-perturbation",
        covers=("genbound.bounds.trauger_tewari.sensitivities_raw",),
        statement="one layer, H heads, no dense map: |f(X) - f_hat(X)| <= rho_w ||w - w_hat|| + sum_h rho_V ||V_h - V_hat_h||_op "
        "+ sum_h rho_QK^h ||W_QK^h - W_hat_QK^h||_op with rho_w = L_sigma B_X sum_h S_V^h, rho_V = B_w L_sigma B_X, "
        "rho_QK^h = B_w L_sigma S_V^h kappa B_X^3 (kappa = 1), for every X of every length (checked at T = 12 "
        "and T = 1024)",
        chapter=CH,
        provenance="reconstructed",
        numeric=AllOf(
            (
                InequalityCheck(
                    _single_sample, _single_ratio, trials=200, starts=6, steps=30, lr=0.03
                ),
                *one_matrix_checks(
                    _single_sample,
                    _single_ratio,
                    ("QK", "V", "w"),
                    trials=100,
                    starts=4,
                    steps=20,
                    lr=0.03,
                ),
                score_path_check(
                    lambda gen, n: score_path_sample(
                        gen, n, H=2, d=4, T=12, K=1, dense=False, bias=False
                    ),
                    lambda **p: _perturbation_ratio(p, bias=False, row_norm=False),
                    trials=60,
                    starts=4,
                    steps=20,
                    lr=0.01,
                ),
            )
        ),
        symbolic=lambda: (
            sym.verify_single_layer_factorisation()
            and tt_chain.verify_chain(1, 1, dense=False)
            and tt_chain.verify_against_code(1, 2, dense=False, trials=3)
        ),
        mutants=(RHO_HALVED, QK_RHO_QUARTERED),
    )
)


#: the round-off slack of Maurey's atom count: ``K = ceil(x^2 - ATOM_SLACK)``, ``x = f rho B / eps_j``
ATOM_SLACK = 1e-12


def _atoms_check(seed):
    """:meth:`~genbound.bounds.trauger_tewari.InverseSquareCover.atoms_per_term` equals ``ceil(x^2 - 1e-12)`` with
    ``x = f rho B / eps_j`` at its own scales, evaluated in exact rational arithmetic (``fractions``), on covers of one
    to three maps whose ``x^2`` sits at ``k + delta`` for ``delta`` in ``{-3, -0.5, 0, 0.5, 1.5, 3} x 1e-12`` and a
    random offset: inside the slack the count is ``k``, past it ``k + 1``. Ratio ``0`` when every count agrees
    (``inf`` otherwise), so the claim's worst ratio stays that of its inequalities."""
    import random
    from fractions import Fraction

    rng = random.Random(seed)
    slack = Fraction(ATOM_SLACK)
    worst, trials = 0.0, 0
    for k in (1, 2, 7, 40, 333):
        for delta in (-3e-12, -0.5e-12, 0.0, 0.5e-12, 1.5e-12, 3e-12, rng.uniform(0.01, 0.99)):
            if k + delta < 1:
                continue
            n_terms = 1 + trials % 3
            terms = [
                tt_mod.CoverTerm(
                    f"M{j}",
                    rng.uniform(0.5, 2.0),
                    rng.uniform(0.5, 2.0),
                    math.log(2 * 4 * 4),
                    2.0 if j == 1 else 1.0,
                )
                for j in range(n_terms)
            ]
            cover = tt_mod.InverseSquareCover(tuple(terms))
            t0 = terms[0]
            x0 = t0.factor * t0.rho * t0.radius
            # eps such that the first map's share eps_0 gives x0^2 / eps_0^2 = k + delta
            share = cover.scales(1.0)[t0.name]
            eps = x0 / math.sqrt(k + delta) / share
            sc, K = cover.scales(eps), cover.atoms_per_term(eps)
            for t in terms:
                x = Fraction(t.factor * t.rho * t.radius) / Fraction(sc[t.name])
                want = max(1, math.ceil(x * x - slack))
                worst = max(worst, 0.0 if K[t.name] == want else math.inf)
            trials += 1
    return worst, trials


def _atoms_with_slack(slack):
    """Mutant maker: :meth:`InverseSquareCover.atoms_per_term` with another round-off slack."""

    def make(old):
        def atoms_per_term(self, eps):
            sc = self.scales(eps)
            return {
                t.name: (
                    1
                    if t.factor * t.rho * t.radius == 0 or sc[t.name] == 0
                    else max(1, math.ceil((t.factor * t.rho * t.radius / sc[t.name]) ** 2 - slack))
                )
                for t in self.terms
            }

        return atoms_per_term

    return make


register(
    Claim(
        label="thm-tt-single-layer",
        statement="one layer, no dense map: log N_unif(F, eps) <= C_1^2/eps^2 + Lambda_Sigma with "
        "C_1 = [sum_j (rho_j B_j sqrt(Lambda_j))^{2/3}]^{3/2} (no T, no m); then Dudley and the Rademacher "
        "generalization bound",
        chapter=CH,
        provenance="reconstructed",
        numeric=AllOf(
            (
                FunctionCheck(
                    lambda s: _constructive_cover_ratio(
                        s, L=1, H=2, dense=False, bias=False, row_norm=False
                    )
                ),
                FunctionCheck(_tt_value_check("single")),
                FunctionCheck(_atoms_check),
            )
        ),
        symbolic=sym.verify_single_layer_factorisation,
        mutants=(
            COVER_A_HALVED,
            COVER_CONSTANT_DOUBLED,
            CONFIDENCE_3_TO_4,
            replaced(
                tt_mod.InverseSquareCover,
                "atoms_per_term",
                _atoms_with_slack(2 * ATOM_SLACK),
                name="atom-slack-doubled",
                what="Maurey's atom count rounded down within 2e-12 of an integer",
            ),
            replaced(
                tt_mod.InverseSquareCover,
                "atoms_per_term",
                _atoms_with_slack(0.0),
                name="atom-slack-dropped",
                what="Maurey's atom count with no round-off slack",
            ),
        ),
        covers=TT_COVERS + ("genbound.bounds.trauger_tewari.InverseSquareCover.atoms_per_term",),
    )
)


@lru_cache(maxsize=None)
def _integral_fn():
    """``int_alpha^{c/2} (sqrt(A)/eps + sqrt(Lambda)) d eps`` (sympy), lambdified."""

    expr = sym.sp.integrate(
        sym.sp.sqrt(sd.A) / sd.eps + sym.sp.sqrt(sd.Lam), (sd.eps, sd.alpha, sd.c / 2)
    )
    return sym.sp.lambdify((sd.A, sd.Lam, sd.alpha, sd.c), expr, modules="math")


@lru_cache(maxsize=None)
def _tt_loss_cover_fn(L, H, dense, bias, row_norm, multiclass):
    A, Lam, names = sym.tt_loss_cover(
        L, H, dense=dense, bias=bias, row_norm=row_norm, multiclass=multiclass
    )
    keys = tuple(names)
    return keys, sym.sp.lambdify([names[k] for k in keys], [A, Lam], modules="math")


def tt_capacity_ratios(seed: int, n: int = 12) -> tuple[float, float, float, int]:
    """For :prf:ref:`cor-tt-capacity`: ``(worst inequality ratio, worst tight ratio, worst relative
    difference from sympy, trials)``.

    (a) ``rademacher / (capacity * log_factor / sqrt(m))`` of :func:`~genbound.bounds.trauger_tewari.trauger_tewari_bound`
    on the random cases of the value check (every architecture); (b) the extremal instance ``Lambda = 0``,
    ``3 sqrt(A)/sqrt(m) <= c/2``, where the corollary is an equality: ``max(r, 1/r)`` of
    :func:`genbound.rademacher.dudley_inverse_square` over :func:`~genbound.rademacher.inverse_square_capacity`
    times :func:`~genbound.rademacher.inverse_square_log_factor` over ``sqrt(m)``; (c) ``capacity`` and
    ``log_factor`` of the bound against the sympy capacity of the sympy loss cover."""
    import random

    rng = random.Random(seed)
    fc, fl = _capacity_fn()
    ineq, tight, sym_err, trials = 0.0, 0.0, 0.0, 0
    for configs in TT_VALUE_CONFIGS.values():
        for L, H, dense, bias, row_norm, out_dim in configs:
            keys, fA = _tt_loss_cover_fn(L, H, dense, bias, row_norm, out_dim > 1)
            for i in range(n):
                layers, kw = _tt_case(rng, L, H, dense, i)
                r = tt_mod.trauger_tewari_bound(
                    layers, out_dim=out_dim, bias=bias, row_norm=row_norm, **kw
                )
                ineq = max(ineq, r.rademacher / (r.capacity * r.log_factor / math.sqrt(r.m)))
                vals = _tt_values(layers, kw, out_dim)
                A, Lam = fA(*[vals[k] for k in keys])
                c = float(sym.LOSS_DIAMETER)
                sym_err = max(
                    sym_err, _rel(r.capacity, fc(A, Lam, c)), _rel(r.log_factor, fl(A, r.m, c))
                )
                trials += 1
    for _ in range(4 * n):
        A, c = 10 ** rng.uniform(-4, 4), 10 ** rng.uniform(-1, 1)
        m = math.ceil(36 * A / c**2 * 10 ** rng.uniform(0, 8))
        d = rad_mod.dudley_inverse_square(A, 0.0, m=m, diameter=c)
        bound = (
            rad_mod.inverse_square_capacity(A, 0.0, diameter=c)
            * rad_mod.inverse_square_log_factor(A, m=m, diameter=c)
            / math.sqrt(m)
        )
        r_t = d.value / bound
        tight = max(tight, r_t, 1 / r_t)
        Lam = 10 ** rng.uniform(-2, 3)
        dl = rad_mod.dudley_inverse_square(A, Lam, m=m, diameter=c)
        if 0 < dl.alpha < c / 2:  # the reported integral is the statement's integral at the cut-off
            sym_err = max(sym_err, _rel(dl.integral, _integral_fn()(A, Lam, dl.alpha, c)))
        sym_err = max(
            sym_err,
            _rel(rad_mod.inverse_square_capacity(A, Lam, diameter=c), fc(A, Lam, c)),
            _rel(rad_mod.inverse_square_log_factor(A, m=m, diameter=c), fl(A, m, c)),
        )
        trials += 1
    return ineq, tight, sym_err, trials


def _tt_capacity_check(seed):
    ineq, tight, err, trials = tt_capacity_ratios(seed)
    return max(ineq, tight, err / VALUE_RTOL), trials


class _Recorded:
    """``value_at`` that records where it is evaluated (and gives up after ``limit`` evaluations)."""

    def __init__(self, fn, limit: int = 5000):
        self.fn, self.limit, self.calls = fn, limit, []

    def __call__(self, m):
        self.calls.append(m)
        if len(self.calls) > self.limit:
            raise RuntimeError(f"more than {self.limit} evaluations")
        return self.fn(m)


def _follows_bisection(calls, values, target, tol, max_m, M) -> bool:
    """Whether the evaluations ``calls`` (with ``values``) and the result ``M`` follow the documented search of
    :func:`genbound.bounds._result.smallest_m`: first ``max_m`` (``inf`` if it fails), then ``1`` (``1`` if it
    meets), then each point the midpoint of the bracket ``[lo, hi]`` that the earlier evaluations leave --
    ``isqrt(lo hi)`` while ``hi > 4 lo``, else ``(lo + hi) // 2``, inside ``(lo, hi)`` -- evaluated only while the
    bracket is wider than the tolerance (``hi - lo > 1`` and ``hi > lo 10**tol``), and ``M = hi`` once it is not."""
    if not calls or calls[0] != max_m:
        return False
    if values[0] > target:
        return M == math.inf and len(calls) == 1
    if len(calls) < 2 or calls[1] != 1:
        return False
    if values[1] <= target:
        return M == 1 and len(calls) == 2
    lo, hi = 1, max_m
    for m, v in zip(calls[2:], values[2:]):
        if not (hi - lo > 1 and hi > lo * 10**tol):
            return False
        mid = math.isqrt(lo * hi) if hi > 4 * lo else (lo + hi) // 2
        if type(m) is not int or m != min(max(mid, lo + 1), hi - 1):
            return False
        lo, hi = (lo, m) if v <= target else (m, hi)
    return not (hi - lo > 1 and hi > lo * 10**tol) and type(M) is int and M == hi


def samples_needed_contract(seed: int, n: int = 3) -> tuple[float, int]:
    """For :prf:ref:`cor-tt-capacity`: :func:`genbound.bounds._result.smallest_m` (behind every
    ``samples_needed``) and ``samples_needed(target, tol)`` of the Trauger-Tewari bound, at ``tol`` from 0 to 2
    decades. On each: the returned ``M`` meets the target and ``floor(M / 10**tol)`` (``M - 1`` at ``tol = 0``) does
    not, and the evaluations follow the documented bisection (:func:`_follows_bisection`). Instances: ``C / sqrt(m)``
    with ``m*`` from ``10`` to ``10^14`` (geometric and arithmetic steps), the bracket meeting the tolerance exactly
    (``[1, 10]`` at ``tol = 1``) and the switch ``hi = 4 lo`` (``[2, 8]``), the target equal to ``value_at(max_m)``
    and to ``value_at(1)``, and a step function equal to the target from ``m*`` on. Also the trivial rule
    (:func:`genbound.bounds._result.dudley_trivial_reason`) at and just below each of its thresholds. Ratio
    ``0`` when all hold (``inf`` otherwise)."""
    import random

    rng = random.Random(seed)
    bad, trials = False, 0

    def meets(value_at, target, tol, M):
        if M == math.inf:
            return value_at(10**40) > target
        if not (type(M) is int and M >= 1 and value_at(M) <= target):
            return False
        below = M - 1 if tol == 0 else math.floor(M / 10**tol)
        return below < 1 or value_at(below) > target

    def run(fn, target, tol, max_m=10**40):
        rec = _Recorded(fn)
        try:
            M = _result.smallest_m(rec, target, tol=tol, max_m=max_m)
        except RuntimeError:
            return False
        vals = [fn(m) for m in rec.calls]
        return _follows_bisection(rec.calls, vals, target, tol, max_m, M) and (
            max_m != 10**40 or meets(fn, target, tol, M)
        )

    tols = (0.0, 0.01, 0.05, 0.2, 0.3, 0.5, 1.0, 2.0)
    for i in range(8 * n):
        C, t = (
            10 ** rng.uniform(1, 5.5),
            rng.uniform(0.05, 1.0),
        )  # m* below 10^14: v steps by more than an ulp
        bad |= not run(lambda m, C=C: C / math.sqrt(m), t, tols[i % len(tols)])
        trials += 1
    C = rng.uniform(0.5, 1.0)
    for fn, t, tol, max_m in (
        (lambda m: 1.0 / math.sqrt(m), 1.0 / math.sqrt(5), 1.0, 10**32),  # [1, 100] -> [1, 10]
        (lambda m: 1.0 / math.sqrt(m), 1.0 / math.sqrt(6), 0.0, 2**96),  # [1, 8] -> [2, 8]
        (
            lambda m: C / math.sqrt(m),
            C / math.sqrt(10**40),
            0.0,
            10**40,
        ),  # target = value_at(max_m)
        (lambda m: C / math.sqrt(m), C, 0.3, 10**40),  # target = value_at(1)
        (lambda m: 1.0 if m < 12345 else 0.5, 0.5, 0.0, 10**40),  # equal from m* on
        (lambda m: 1.0 if m < 10**9 else 0.5, 0.5, 0.01, 10**40),
    ):
        bad |= not run(fn, t, tol, max_m)
        trials += 1
    configs = TT_VALUE_CONFIGS["single"]
    for i in range(n):
        L, H, dense, bias, row_norm, out_dim = configs[i % len(configs)]
        layers, kw = _tt_case(rng, L, H, dense, i)
        r = tt_mod.trauger_tewari_bound(layers, out_dim=out_dim, bias=bias, row_norm=row_norm, **kw)
        for tol in (0.0, 0.3):
            t = rng.uniform(0.2, 1.0)
            bad |= not meets(lambda m: r.at(m).value, t, tol, r.samples_needed(t, tol=tol))
            trials += 1
    # the trivial rule behind every Dudley-based result, at and next to each of its three thresholds
    from types import SimpleNamespace

    for dv, val, a, want in (
        (0.5, 0.9, 0.0, True),
        (0.5 - 1e-12, 0.9, 0.0, False),
        (0.1, 1.0, 0.0, True),
        (0.1, 1.0 - 1e-12, 0.0, False),
        (0.1, 0.5, 0.5, True),
        (0.1, 0.5, 0.5 - 1e-12, False),
    ):
        bad |= _result.is_trivial(SimpleNamespace(value=dv, alpha=a, diameter=1.0), val) != want
        trials += 1
    return (math.inf if bad else 0.0), trials


#: seconds the samples_needed part of cor-tt-capacity may take (it takes well under 1 s): a bisection that never
#: narrows must fail the check rather than hang it
SAMPLES_CHECK_SECONDS = 30.0


def _samples_needed_check(seed):
    return timed_check(lambda: samples_needed_contract(seed), SAMPLES_CHECK_SECONDS)


def _smallest_m_overshoot(old):
    """Mutant maker: ``smallest_m`` returning ``ceil(10**tol M)`` (``M + 1`` at ``tol = 0``): still meets the target."""

    def smallest_m(value_at, target, *, tol=0.0, max_m=10**40):
        M = old(value_at, target, tol=tol, max_m=max_m)
        return M if M == math.inf else max(M + 1, math.ceil(M * 10**tol))

    return smallest_m


register(
    Claim(
        label="cor-tt-capacity",
        statement="for log N(eps) <= A/eps^2 + Lambda at diameter c, Dudley's closed form is at most "
        "capacity * max(1, 1 + log(c sqrt(m) / (6 sqrt(A)))) / sqrt(m) for every m, with the m-free "
        "capacity = 12 (sqrt(A) + (c/2) sqrt(Lambda)); equality when Lambda = 0 and 3 sqrt(A)/sqrt(m) <= c/2; "
        "for the Trauger-Tewari bounds A = L_loss^2 A_cover, c = 1/2",
        chapter=CH,
        provenance="reconstructed",
        numeric=AllOf((FunctionCheck(_tt_capacity_check), FunctionCheck(_samples_needed_check))),
        symbolic=lambda: __import__(
            "genbound.symbolic.dudley", fromlist=["x"]
        ).verify_capacity_bound(),
        mutants=CAPACITY_MUTANTS
        + (
            replaced(
                _result_mod,
                "smallest_m",
                _smallest_m_overshoot,
                name="m-star-overshoot",
                what="samples_needed one tolerance step too large (still meets the target)",
            ),
        ),
        covers=(
            "genbound.rademacher.inverse_square_capacity",
            "genbound.rademacher.inverse_square_log_factor",
            "genbound.rademacher.dudley_inverse_square",
            "genbound.bounds.trauger_tewari.TTBound.capacity",
            "genbound.bounds.trauger_tewari.TTBound.log_factor",
            "genbound.bounds.trauger_tewari.trauger_tewari_bound",
            "genbound.bounds._result.smallest_m",
            "genbound.bounds._result.BoundResult.samples_needed",
            "genbound.bounds._result.dudley_trivial_reason",
        ),
    )
)
