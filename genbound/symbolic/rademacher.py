"""Sympy derivations behind the Rademacher chapter (:ref:`ch-rademacher`): every constant of
:mod:`genbound.rademacher` is produced here.

* :func:`mcdiarmid_deviation`: the deviation ``t`` at which McDiarmid's tail equals ``delta``;
* :func:`generalization_gap`: ``2 R + 3 b sqrt(log(2/delta)/(2m))`` assembled from two McDiarmid steps;
* :func:`massart_bound`: the optimised Chernoff step ``r sqrt(2 log N)`` of Massart's lemma;
* ``verify_*``: steps of the proofs that sympy proves.

>>> from genbound.symbolic import rademacher as sr
>>> sr.generalization_gap()
2*R + 3*sqrt(2)*b*sqrt(log(2/delta))/(2*sqrt(m))
>>> sr.verify_chernoff_exponent(), sr.verify_massart_optimum(), sr.verify_gap_constants()
(True, True, True)
"""

from __future__ import annotations

import sympy as sp

__all__ = [
    "R",
    "b",
    "m",
    "delta",
    "t",
    "lam",
    "c",
    "r",
    "N",
    "B",
    "d",
    "colnorm",
    "gamma",
    "mcdiarmid_deviation",
    "generalization_gap",
    "gap_coefficients",
    "gap_from_union",
    "SYMMETRIZATION_SUMS",
    "massart_bound",
    "l1_linear_bound",
    "verify_chernoff_exponent",
    "verify_massart_optimum",
    "verify_gap_constants",
    "verify_ramp_slope",
    "l2_second_moment",
    "verify_l2_second_moment",
    "chernoff_exponent_coef",
    "sup_norm_atoms",
    "verify_sup_norm_atoms",
]

R, b, m, delta, t, lam, c, r, N, B, d, colnorm, gamma = sp.symbols(
    "R b m delta t lambda c r N B d colnorm gamma", positive=True
)


def mcdiarmid_deviation(conf=None, diffs=None):
    """Solve ``exp(-2 t^2 / sum_i c_i^2) = conf`` for ``t`` with ``m`` equal differences ``c_i = b/m``.

    Returns ``b sqrt(log(1/conf) / (2m))`` (as a sympy expression in ``b, m`` and ``conf``).
    """
    conf = sp.Symbol("delta_1", positive=True) if conf is None else conf
    diffs = b / m if diffs is None else diffs
    sol = sp.solve(sp.Eq(sp.exp(-2 * t**2 / (m * diffs**2)), conf), t)
    pos = [s for s in sol if s.is_positive is not False]
    return sp.simplify(pos[0])


def generalization_gap():
    """The two-step McDiarmid argument of :prf:ref:`thm-rademacher-generalization`.

    Step 1: ``Phi(S) = sup_g (E g - E_S g)`` has bounded differences ``b/m`` so, with probability
    ``>= 1 - delta/2``, ``Phi <= E Phi + t(delta/2)``. Step 2: symmetrization gives
    ``E Phi <= 2 R_m`` and ``R_m <= R_S + t(delta/2)`` (McDiarmid again on ``R_S``, differences ``b/m``).
    A union bound over the two events gives ``2 R_S + 3 t(delta/2)``.
    """
    gap, _failure = gap_from_union()
    return gap


#: ``E sup_g (E g - E_S g) <= 2 R_m``: the ghost sample turns the gap into a difference of two
#: Rademacher sums of the same law (:prf:ref:`lem-symmetrization`), each at most ``R_m``.
SYMMETRIZATION_SUMS = sp.Integer(2)


def gap_from_union(delta_1=None, delta_2=None):
    """The gap bound assembled from its two failure events and the union bound, with the split of
    ``delta`` left free: ``(gap, failure)``.

    Event 1 (McDiarmid on ``Phi``, differences ``b/m``) fails with probability ``delta_1``:
    ``Phi <= E Phi + t(delta_1)``; symmetrization gives ``E Phi <= 2 R_m``; event 2 (McDiarmid on ``R_S``,
    differences ``b/m``) fails with probability ``delta_2``: ``R_m <= R_S + t(delta_2)``. Outside both,
    ``Phi <= t(delta_1) + 2 (R_S + t(delta_2))``; the union bound makes the failure ``delta_1 + delta_2``.
    Without arguments the split is the equal one, ``delta_1 = delta_2 = delta/2`` (failure ``delta``); the
    ``3`` of the confidence term is then ``1 + 2``: one deviation from event 1, two from event 2 through
    symmetrization."""
    d1 = delta / 2 if delta_1 is None else delta_1
    d2 = delta / 2 if delta_2 is None else delta_2
    gap = mcdiarmid_deviation(d1) + SYMMETRIZATION_SUMS * (R + mcdiarmid_deviation(d2))
    return sp.simplify(gap), sp.simplify(d1 + d2)


def gap_coefficients() -> tuple[sp.Expr, sp.Expr]:
    """``(coefficient of R, coefficient of b sqrt(log(2/delta)/(2m)))`` in :func:`generalization_gap`.

    >>> gap_coefficients()
    (2, 3)
    """
    gap = sp.expand(generalization_gap())
    unit = b * sp.sqrt(sp.log(2 / delta) / (2 * m))
    coef_r = sp.simplify(gap.coeff(R))
    coef_t = sp.simplify((gap - coef_r * R) / unit)
    return coef_r, coef_t


def verify_gap_constants() -> bool:
    """The generalization gap equals ``2 R + 3 b sqrt(log(2/delta)/(2m))`` exactly."""
    target = 2 * R + 3 * b * sp.sqrt(sp.log(2 / delta) / (2 * m))
    return sp.simplify(generalization_gap() - target) == 0


def verify_chernoff_exponent() -> bool:
    """``min_lambda (-lambda t + lambda^2 c^2 / 8) = -2 t^2 / c^2`` (Hoeffding's lemma then Chernoff;
    the exponent of :prf:ref:`lem-mcdiarmid`)."""
    expo = -lam * t + lam**2 * c**2 / 8
    crit = sp.solve(sp.diff(expo, lam), lam)
    return (
        len(crit) == 1
        and sp.simplify(expo.subs(lam, crit[0]) + 2 * t**2 / c**2) == 0
        and sp.diff(expo, lam, 2).is_positive
    )


def chernoff_exponent_coef():
    """The ``2`` of ``exp(-2 t^2 / c^2)``: minus the minimum over ``lambda`` of ``-lambda t + lambda^2 c^2 / 8``
    (Hoeffding's lemma in Chernoff's bound), divided by ``t^2 / c^2``.

    >>> chernoff_exponent_coef()
    2
    """
    expo = -lam * t + lam**2 * c**2 / 8
    crit = sp.solve(sp.diff(expo, lam), lam)
    return sp.simplify(-expo.subs(lam, crit[0]) * c**2 / t**2)


def massart_bound():
    """``min_lambda log(N)/lambda + lambda r^2 / 2 = r sqrt(2 log N)`` (Massart's finite-class lemma,
    before dividing by ``m``)."""
    logn = sp.Symbol("L", positive=True)
    expo = logn / lam + lam * r**2 / 2
    crit = [s for s in sp.solve(sp.diff(expo, lam), lam) if s.is_positive]
    return sp.simplify(expo.subs(lam, crit[0]).subs(logn, sp.log(N)))


def verify_massart_optimum() -> bool:
    """:func:`massart_bound` equals ``r sqrt(2 log N)``."""
    return sp.simplify(massart_bound() - r * sp.sqrt(2 * sp.log(N))) == 0


def l1_linear_bound():
    """Massart for ``{x -> w.x : ||w||_1 <= B}``: ``2d`` extreme points ``+-B e_j``, each of norm
    ``B ||X_{:,j}||_2 <= B colnorm``; dividing by ``m`` gives ``B colnorm sqrt(2 log(2d)) / m``."""
    return sp.simplify(massart_bound().subs({r: B * colnorm, N: 2 * d}) / m)


def verify_ramp_slope() -> bool:
    """On its sloped piece the ramp loss ``1 - y f/gamma`` has derivative of absolute value ``1/gamma``."""
    f, y = sp.symbols("f y", real=True)
    slope = sp.diff(1 - y * f / gamma, f)
    return (
        sp.simplify(sp.Abs(slope).subs(y, 1) - 1 / gamma) == 0
        and sp.simplify(sp.Abs(slope).subs(y, -1) - 1 / gamma) == 0
    )


def sup_norm_atoms():
    """The number of atoms ``K`` at which the union bound of :prf:ref:`lem-sup-norm-maurey` reaches 1.

    Each of ``n`` points has error ``> eps`` with probability at most ``2 exp(-2 K eps^2 / (2 a B)^2)``
    (Hoeffding for a mean of ``K`` terms in ``[-aB, aB]``); solving ``2 n exp(-K eps^2/(2 a^2 B^2)) = 1``
    gives ``K = 2 a^2 B^2 log(2n) / eps^2``; any larger ``K`` leaves a positive probability of success.
    """
    K, n, a, e = sp.symbols("K n a epsilon", positive=True)
    hoeffding = 2 * sp.exp(-2 * K * e**2 / (2 * a * B) ** 2)
    sol = sp.solve(sp.Eq(n * hoeffding, 1), K)
    return sp.expand_log(sp.simplify(sol[0]), force=True)


def verify_sup_norm_atoms() -> bool:
    """:func:`sup_norm_atoms` equals ``2 a^2 B^2 log(2n) / eps^2``."""
    n, a, e = sp.symbols("n a epsilon", positive=True)
    target = 2 * a**2 * B**2 * sp.log(2 * n) / e**2
    return sp.simplify(sp.expand_log(sup_norm_atoms() - target, force=True)) == 0


def l2_second_moment(n_points: int = 3, dim: int = 2):
    """``E_sigma ||X^T sigma||_2^2`` for ``n_points`` rows of a symbolic ``X`` in ``R^dim``, computed by
    sympy's probability module with independent uniform signs ``sigma_i in {-1, +1}``."""
    from sympy.stats import E, Rademacher

    sig = [Rademacher(f"sigma{i}") for i in range(n_points)]
    X = sp.Matrix(n_points, dim, lambda i, j: sp.Symbol(f"x{i}{j}", real=True))
    v = X.T * sp.Matrix(sig)
    return sp.expand(E(sp.expand((v.T * v)[0])))


def verify_l2_second_moment(n_points: int = 3, dim: int = 2) -> bool:
    """:func:`l2_second_moment` equals ``sum_i ||x_i||^2`` (cross terms average out): with Jensen,
    ``E ||X^T sigma||_2 <= sqrt(sum_i ||x_i||^2)``, the right side of :prf:ref:`cor-l2-linear-rademacher`."""
    X = sp.Matrix(n_points, dim, lambda i, j: sp.Symbol(f"x{i}{j}", real=True))
    return (
        sp.expand(
            l2_second_moment(n_points, dim)
            - sum(X[i, j] ** 2 for i in range(n_points) for j in range(dim))
        )
        == 0
    )
