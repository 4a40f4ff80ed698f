"""Sympy behind Part VI (:mod:`genbound.bounds.pac_bayes`): every identity and constant the certificates
use, derived or verified symbolically.

>>> kl_inverse_at_zero()
1 - exp(-c)
>>> pinsker_constant()
2
>>> verify_gibbs_attains_change_of_measure(), verify_bernoulli_mgf_term()
(True, True)
>>> verify_small_kl_derivative(), verify_binomial_beta_identity(6)
(True, True)
>>> isotropic_optimum()
(D + S)/d
>>> verify_gaussian_kl_1d(), verify_union_bookkeeping()
(True, True)
"""

from __future__ import annotations

import sympy as sp

__all__ = [
    "binary_kl",
    "kl_inverse_at_zero",
    "pinsker_constant",
    "verify_pinsker_derivative",
    "verify_small_kl_derivative",
    "small_kl_root",
    "verify_gibbs_attains_change_of_measure",
    "verify_bernoulli_mgf_term",
    "gaussian_kl_1d",
    "verify_gaussian_kl_1d",
    "isotropic_optimum",
    "verify_binomial_beta_identity",
    "verify_union_bookkeeping",
]

q, p, c = sp.symbols("q p c", positive=True)


def binary_kl(qq=q, pp=p) -> sp.Expr:
    """``kl(q || p) = q ln(q/p) + (1-q) ln((1-q)/(1-p))``."""
    return qq * sp.log(qq / pp) + (1 - qq) * sp.log((1 - qq) / (1 - pp))


def kl_inverse_at_zero() -> sp.Expr:
    """Solve ``kl(0 || p) = -ln(1 - p) = c`` for ``p``: ``1 - e^(-c)``."""
    (sol,) = sp.solve(sp.Eq(-sp.log(1 - p), c), p)
    return sp.simplify(sol)


def verify_pinsker_derivative() -> bool:
    """``g(p) = kl(q||p) - 2 (p-q)^2`` has ``g(q) = 0`` and ``g'(p) = (p-q) (1/(p(1-p)) - 4)``; as
    ``p(1-p) <= 1/4`` (its maximum, at ``p = 1/2``), ``g`` increases for ``p >= q``: Pinsker's
    ``kl(q||p) >= 2 (p-q)^2``."""
    g = binary_kl() - 2 * (p - q) ** 2
    ok_zero = sp.simplify(g.subs(p, q)) == 0
    ok_der = sp.simplify(sp.diff(g, p) - (p - q) * (1 / (p * (1 - p)) - 4)) == 0
    crit = sp.solve(sp.diff(p * (1 - p), p), p)
    ok_max = crit == [sp.Rational(1, 2)] and (p * (1 - p)).subs(p, crit[0]) == sp.Rational(1, 4)
    return bool(ok_zero and ok_der and ok_max)


def pinsker_constant() -> sp.Expr:
    """The constant ``a`` of ``kl(q||p) >= a (p-q)^2``: half the minimum over ``p`` of
    ``d^2/dp^2 kl(p_0 || p)|_{p_0 = p} = 1/(p(1-p))``, i.e. ``4/2 = 2`` (the derivative argument above)."""
    curv = sp.simplify(sp.diff(binary_kl(), p, 2).subs(q, p))
    crit = sp.solve(sp.diff(curv, p), p)
    return sp.nsimplify(min(curv.subs(p, x) for x in crit) / 2)


def verify_small_kl_derivative() -> bool:
    """``h(p) = kl(q||p) - (p-q)^2/(2p)`` has ``h(q) = 0`` and ``h'(p) = ((p-q)/p) (1/(1-p) - (p+q)/(2p))``,
    which is ``>= 0`` for ``q <= p < 1`` (``1/(1-p) >= 1 >= (p+q)/(2p)``): ``kl(q||p) >= (p-q)^2/(2p)``."""
    h = binary_kl() - (p - q) ** 2 / (2 * p)
    ok_zero = sp.simplify(h.subs(p, q)) == 0
    ok_der = sp.simplify(sp.diff(h, p) - (p - q) / p * (1 / (1 - p) - (p + q) / (2 * p))) == 0
    return bool(ok_zero and ok_der)


def small_kl_root() -> sp.Expr:
    """The larger root of ``(p - q)^2 = 2 p c``: ``q + c + sqrt(c^2 + 2 q c)``, at most
    ``q + sqrt(2 q c) + 2 c`` (subadditivity of the square root)."""
    roots = sp.solve(sp.Eq((p - q) ** 2, 2 * p * c), p)
    return max(roots, key=lambda r: r.subs({q: sp.Rational(1, 3), c: sp.Rational(1, 5)}))


def verify_gibbs_attains_change_of_measure() -> bool:
    """On two points with ``P = (a, 1-a)`` and ``f = (f1, f2)``, the Gibbs measure ``Q ∝ P e^f`` gives
    ``E_Q f - KL(Q || P) = ln E_P e^f`` exactly (the supremum of the Donsker-Varadhan formula is attained)."""
    a = sp.Symbol("a", positive=True)
    f1, f2 = sp.symbols("f1 f2", real=True)
    Z = a * sp.exp(f1) + (1 - a) * sp.exp(f2)
    q1, q2 = a * sp.exp(f1) / Z, (1 - a) * sp.exp(f2) / Z
    lhs = q1 * f1 + q2 * f2 - (q1 * sp.log(q1 / a) + q2 * sp.log(q2 / (1 - a)))
    diff = sp.expand_log(lhs - sp.log(Z), force=True)
    return bool(sp.simplify(diff) == 0)


def verify_bernoulli_mgf_term() -> bool:
    """For Bernoulli losses of mean ``p``, the term ``k`` of ``E[exp(n kl(k/n || p))]`` is
    ``C(n,k) p^k (1-p)^(n-k) exp(n kl(k/n || p)) = C(n,k) (k/n)^k (1-k/n)^(n-k)``: ``p`` cancels, so the
    moment equals Maurer's ``xi(n)`` for every ``p`` (checked on the logarithm, ``0 < k < n``)."""
    n, k = sp.symbols("n k", positive=True)
    log_lhs = k * sp.log(p) + (n - k) * sp.log(1 - p) + n * binary_kl(k / n, p)
    log_rhs = k * sp.log(k / n) + (n - k) * sp.log(1 - k / n)
    return bool(sp.simplify(sp.expand_log(log_lhs - log_rhs, force=True)) == 0)


def gaussian_kl_1d() -> sp.Expr:
    """``KL(N(m1, s1^2) || N(m2, s2^2))`` by integrating ``q ln(q/p)`` over the line."""
    x, m1, m2 = sp.symbols("x m1 m2", real=True)
    s1, s2 = sp.symbols("s1 s2", positive=True)
    dens = lambda m, s: sp.exp(-((x - m) ** 2) / (2 * s**2)) / (s * sp.sqrt(2 * sp.pi))  # noqa: E731
    log_ratio = sp.expand(sp.expand_log(sp.log(dens(m1, s1)) - sp.log(dens(m2, s2)), force=True))
    return sp.simplify(sp.integrate(dens(m1, s1) * log_ratio, (x, -sp.oo, sp.oo)))


def verify_gaussian_kl_1d() -> bool:
    """The integral equals ``(1/2) [s1^2/s2^2 + (m1-m2)^2/s2^2 - 1 + 2 ln(s2/s1)]``, the per-coordinate term
    of :func:`genbound.bounds.pac_bayes.kl_diag_gaussians`."""
    m1, m2 = sp.symbols("m1 m2", real=True)
    s1, s2 = sp.symbols("s1 s2", positive=True)
    want = (s1**2 / s2**2 + (m1 - m2) ** 2 / s2**2 - 1 + 2 * sp.log(s2 / s1)) / 2
    return bool(sp.simplify(sp.expand_log(gaussian_kl_1d() - want, force=True)) == 0)


def isotropic_optimum() -> sp.Expr:
    """``argmin_v (1/2) [S/v + D/v - d + d ln v - sum ln s_i^2]`` with ``S = sum s_i^2``,
    ``D = ||mu_q - mu_p||^2``: the stationary point of the diagonal-Gaussian KL in the prior variance ``v``
    (a minimum: the second derivative there is ``d^3 / (2 (S + D)^2) > 0``)."""
    v, S, D, d = sp.symbols("v S D d", positive=True)
    kl = (S / v + D / v - d + d * sp.log(v)) / 2
    (sol,) = sp.solve(sp.diff(kl, v), v)
    assert sp.simplify(sp.diff(kl, v, 2).subs(v, sol) - d**3 / (2 * (S + D) ** 2)) == 0
    return sol


def verify_binomial_beta_identity(n_max: int = 8) -> bool:
    """``P[Bin(n, p) <= k] = I_{1-p}(n-k, k+1)`` for every ``0 <= k < n <= n_max``: both sides are 1 at
    ``p = 0`` and have the same derivative in ``p``, ``-n C(n-1, k) p^k (1-p)^(n-1-k)`` (the sum telescopes;
    ``1/B(n-k, k+1) = n C(n-1, k)``), exactly in sympy."""
    t = sp.Symbol("t", positive=True)
    for n in range(1, n_max + 1):
        for k in range(n):
            cdf = sum(sp.binomial(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))
            beta = (
                sp.integrate(t ** (n - k - 1) * (1 - t) ** k, (t, 0, 1 - p))
                * sp.factorial(n)
                / (sp.factorial(n - k - 1) * sp.factorial(k))
            )
            if sp.simplify(sp.expand(cdf - beta)) != 0:
                return False
            der = -n * sp.binomial(n - 1, k) * p**k * (1 - p) ** (n - 1 - k)
            if sp.simplify(sp.expand(sp.diff(cdf, p) - der)) != 0:
                return False
    return True


def verify_union_bookkeeping() -> bool:
    """``K`` grid points at ``delta/K`` each fail with total probability ``delta``; the Monte Carlo step adds
    ``delta'``: the certificate holds with probability ``>= 1 - delta - delta'``."""
    K = sp.Symbol("K", positive=True, integer=True)
    j = sp.Symbol("j", positive=True, integer=True)
    delta, delta_mc = sp.symbols("delta delta_mc", positive=True)
    grid = sp.summation(delta / K, (j, 1, K))
    return bool(
        sp.simplify(grid - delta) == 0
        and sp.simplify(1 - (grid + delta_mc) - (1 - delta - delta_mc)) == 0
    )
