"""Sympy facts about Schatten powers used in :ref:`ch-schatten`.

>>> from genbound.symbolic.schatten import verify_power_split, verify_rank_limit, verify_decreasing_in_p
>>> verify_power_split(), verify_rank_limit(), verify_decreasing_in_p()
(True, True, True)
"""

from __future__ import annotations

import sympy as sp

__all__ = [
    "sigma",
    "tau",
    "p",
    "verify_power_split",
    "verify_rank_limit",
    "verify_decreasing_in_p",
    "verify_markov_step",
]

sigma, tau = sp.symbols("sigma tau", positive=True)
p = sp.Symbol("p", nonnegative=True)


def verify_power_split() -> bool:
    """``sigma**2 = sigma**p * sigma**(2 - p)``: the step behind the truncation residual bound."""
    return sp.simplify(sigma**p * sigma ** (2 - p) - sigma**2) == 0


def verify_markov_step() -> bool:
    """For ``sigma > tau`` and ``p >= 0``: ``(sigma / tau)**p >= 1`` (the Markov step of spectral counting).

    Written as ``(sigma/tau)**p = exp(p * log(sigma/tau))`` whose exponent is ``>= 0`` when
    ``sigma/tau = 1 + u`` with ``u > 0``.
    """
    u = sp.Symbol("u", positive=True)
    expo = sp.expand_log(p * sp.log(1 + u), force=True)
    return bool(sp.ask(sp.Q.nonnegative(expo), sp.Q.positive(u) & sp.Q.nonnegative(p)))


def verify_rank_limit() -> bool:
    """``lim_{p -> 0+} sigma**p = 1`` for ``sigma > 0``, so ``sum_i sigma_i**p -> rank``."""
    q = sp.Symbol("q", positive=True)
    return sp.limit(sigma**q, q, 0, "+") == 1


def verify_decreasing_in_p() -> bool:
    """``d/dp sigma**p = sigma**p log(sigma)``, which is ``<= 0`` when ``sigma <= 1``."""
    d = sp.diff(sigma**p, p)
    return sp.simplify(d - sigma**p * sp.log(sigma)) == 0
