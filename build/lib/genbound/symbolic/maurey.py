"""Sympy steps behind Maurey's lemma and the uniform matrix cover (:ref:`ch-linear-classes`).

>>> from genbound.symbolic.maurey import verify_variance_identity, verify_cover_scale, verify_zero_atom_law
>>> verify_variance_identity(), verify_cover_scale(), verify_zero_atom_law()
(True, True, True)
"""

from __future__ import annotations

import sympy as sp

__all__ = ["verify_variance_identity", "verify_cover_scale", "verify_zero_atom_law"]


def verify_variance_identity() -> bool:
    """``E (g - w)^2 = E g^2 - w^2`` for ``w = E g`` (two-atom law): the identity behind
    ``E ||w - w_K||^2 = (E ||g||^2 - ||w||^2) / K``."""
    p, g1, g2 = sp.symbols("p g1 g2", real=True)
    w = p * g1 + (1 - p) * g2
    direct = p * (g1 - w) ** 2 + (1 - p) * (g2 - w) ** 2
    return sp.expand(direct - (p * g1**2 + (1 - p) * g2**2 - w**2)) == 0


def verify_cover_scale() -> bool:
    """With ``K = B^2 R^2 / eps^2`` atoms (the ceiling only helps): ``R * B / sqrt(K) = eps``, so the operator
    error ``R ||W - W_K||_op <= R ||W - W_K||_F <= R B / sqrt(K)`` is at most ``eps``."""
    B, R, eps = sp.symbols("B R epsilon", positive=True)
    Ks = sp.Symbol("K", positive=True)
    at_K = sp.simplify(R * B / sp.sqrt(B**2 * R**2 / eps**2) - eps) == 0
    decreasing = sp.diff(R * B / sp.sqrt(Ks), Ks).is_negative  # more atoms, smaller error
    return bool(at_K and decreasing)


def verify_zero_atom_law() -> bool:
    """For the ``l_{1,1}`` ball, atoms ``+-B E_ij`` with probabilities ``|W_ij|/B`` and the zero matrix with
    the rest: ``E ||g||_F^2 = sum_ij (|W_ij|/B) B^2 = B ||W||_{1,1}`` (two entries suffice to show the sum)."""
    B = sp.Symbol("B", positive=True)
    w1, w2 = sp.symbols("w1 w2", positive=True)
    second_moment = (w1 / B) * B**2 + (w2 / B) * B**2 + (1 - (w1 + w2) / B) * 0
    return sp.simplify(second_moment - B * (w1 + w2)) == 0
