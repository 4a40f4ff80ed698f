"""Claims of :ref:`ch-softmax-attention` (``book/part1/softmax_attention.md``, Part I: softmax and attention).

Each claim's numeric check computes ``ratio = left side / right side`` on random instances and, where the
quantities are differentiable, pushes the ratio up by projected gradient ascent. Rademacher averages are
computed **exactly** (all ``2^m`` sign vectors) on small instances, so the checks have no Monte Carlo
error unless a docstring says so.
"""

from __future__ import annotations

import math
import sys

import torch

from ..symbolic import softmax as sym_soft
from . import AllOf, Claim, FunctionCheck, InequalityCheck, register, scaled
from ._part1 import CH_SOFT, F64, _TINY

_THIS = sys.modules[__name__]  # mutants patch the right-hand-side functions defined here


SM_T = 8  #: sequence length of the check of lem-softmax-linf-l1
ATT_PLAN = [(2, 1000, 100), (8, 400, 60), (64, 64, 30), (1024, 4, 6)]  #: (T, trials, ascent steps)


def _sm_sample(gen, n):
    y = torch.randn(n, SM_T, generator=gen, dtype=F64) * 10 ** (
        3 * torch.rand(n, 1, generator=gen, dtype=F64) - 2
    )
    dx = torch.randn(n, SM_T, generator=gen, dtype=F64) * 10 ** (
        4 * torch.rand(n, 1, generator=gen, dtype=F64) - 4
    )
    return {"x": y + dx, "y": y}


def _sm_linf_ratio(x, y):
    num = (torch.softmax(x, -1) - torch.softmax(y, -1)).abs().sum(-1)
    return num / (float(sym_soft.KAPPA_LINF_L1) * (x - y).abs().amax(-1)).clamp(min=_TINY)


def _sm_l2_ratio(x, y):
    num = torch.linalg.vector_norm(torch.softmax(x, -1) - torch.softmax(y, -1), dim=-1)
    return num / (float(sym_soft.KAPPA_L2) * torch.linalg.vector_norm(x - y, dim=-1)).clamp(
        min=_TINY
    )


register(
    Claim(
        label="lem-softmax-linf-l1",
        covers=(
            "genbound.symbolic.softmax.KAPPA_LINF_L1",
            "genbound.bounds.trauger_tewari.KAPPA_DEFAULT",
        ),
        statement="||softmax(x) - softmax(y)||_1 <= ||x - y||_inf (kappa = 1, tight; Edelman et al. use 2)",
        chapter=CH_SOFT,
        provenance="reconstructed",
        numeric=InequalityCheck(
            _sm_sample, _sm_linf_ratio, trials=4000, starts=32, steps=200, lr=0.01
        ),
        symbolic=sym_soft.verify_linf_l1_identity,
        mutants=(
            scaled(
                sym_soft, "KAPPA_LINF_L1", 0.5, name="kappa-halved", what="kappa = 1/2 instead of 1"
            ),
        ),
    )
)

register(
    Claim(
        label="lem-softmax-l2",
        covers=("genbound.symbolic.softmax.KAPPA_L2",),
        statement="||softmax(x) - softmax(y)||_2 <= (1/2) ||x - y||_2",
        chapter=CH_SOFT,
        provenance="reconstructed",
        numeric=InequalityCheck(
            _sm_sample, _sm_l2_ratio, trials=4000, starts=32, steps=200, lr=0.01
        ),
        symbolic=sym_soft.verify_l2_half,
        mutants=(
            scaled(sym_soft, "KAPPA_L2", 0.5, name="constant-halved", what="1/4 instead of 1/2"),
        ),
    )
)


def self_attention(Z: torch.Tensor, W_qk: torch.Tensor, W_v: torch.Tensor) -> torch.Tensor:
    """``SA(Z)_i = sum_t softmax_t(z_i^T W_qk z_t) W_v^T z_t`` for ``Z`` of shape ``(..., T, d)``
    (the reconstructed self-attention of the digest, no ``1/sqrt(d)``: it is absorbed in ``W_qk``)."""
    scores = Z @ W_qk @ Z.transpose(-1, -2)
    return torch.softmax(scores, -1) @ (Z @ W_v)


def attention_lipschitz_constant(S_v, S_qk, B, kappa=1.0):
    """``S_V (1 + 2 kappa B^2 S_QK)``; the ``2`` is :data:`genbound.symbolic.softmax.SCORE_OCCURRENCES`, derived
    from the head's derivative (:func:`genbound.symbolic.softmax.attention_lipschitz`)."""
    return S_v * (1 + sym_soft.SCORE_OCCURRENCES * kappa * B**2 * S_qk)


def att_make(T, d=4, dv=3):
    """``(sample, ratio, project)`` of the attention-Lipschitz check at sequence length ``T`` (token width ``d``,
    value width ``dv``): the chapter runs the same search at several ``T``."""

    def sample(gen, n):
        B = 0.3 + 2.7 * torch.rand(n, generator=gen, dtype=F64)
        Z = torch.randn(n, T, d, generator=gen, dtype=F64)
        Z = (
            Z
            / torch.linalg.vector_norm(Z, dim=-1, keepdim=True)
            * B.view(-1, 1, 1)
            * torch.rand(n, T, 1, generator=gen, dtype=F64)
        )
        dZ = torch.randn(n, T, d, generator=gen, dtype=F64) * 10 ** (
            2 * torch.rand(n, 1, 1, generator=gen, dtype=F64) - 3
        )
        return {
            "Z": Z,
            "Zp": Z + dZ,
            "B": B,
            "Wqk": torch.randn(n, d, d, generator=gen, dtype=F64) / math.sqrt(d),
            "Wv": torch.randn(n, d, dv, generator=gen, dtype=F64) / math.sqrt(d),
        }

    def project(x):
        out = dict(x)
        for key in ("Z", "Zp"):
            nrm = torch.linalg.vector_norm(x[key], dim=-1, keepdim=True)
            out[key] = x[key] * torch.clamp(x["B"].view(-1, 1, 1) / nrm.clamp(min=_TINY), max=1.0)
        return out

    def ratio(Z, Zp, B, Wqk, Wv):
        diff = torch.linalg.vector_norm(
            self_attention(Z, Wqk, Wv) - self_attention(Zp, Wqk, Wv), dim=-1
        ).amax(-1)
        dz = torch.linalg.vector_norm(Z - Zp, dim=-1).amax(-1)
        S_qk = torch.linalg.matrix_norm(Wqk, ord=2)
        S_v = torch.linalg.matrix_norm(Wv, ord=2)
        L = _THIS.attention_lipschitz_constant(S_v, S_qk, B, float(sym_soft.KAPPA_LINF_L1))
        return diff / (L * dz).clamp(min=_TINY)

    return sample, ratio, project


def _att_checks():
    out = []
    for T, trials, steps in ATT_PLAN:
        s, r, p = att_make(T)
        out.append(
            InequalityCheck(s, r, p, trials=trials, starts=min(8, trials), steps=steps, lr=0.02)
        )
    return tuple(out)


register(
    Claim(
        label="lem-attention-maxrow-lipschitz",
        covers=(
            "genbound.claims.part1_softmax_attention.attention_lipschitz_constant",
            "genbound.symbolic.softmax.SCORE_OCCURRENCES",
        ),
        statement="rows <= B: ||SA(Z) - SA(Z')||_row <= S_V (1 + 2 kappa B^2 S_QK) ||Z - Z'||_row, kappa = 1, for every T",
        chapter=CH_SOFT,
        provenance="reconstructed",
        numeric=AllOf(_att_checks()),
        symbolic=sym_soft.verify_attention_lipschitz_form,
        mutants=(
            scaled(
                _THIS,
                "attention_lipschitz_constant",
                0.5,
                name="rhs-halved",
                what="attention_lipschitz_constant returns half of S_V (1 + 2 kappa B^2 S_QK)",
            ),
        ),
    )
)


def no_global_lipschitz_instance(B: float, delta: float):
    """The two-token construction of :prf:ref:`prop-no-global-lipschitz`: ``z_1 = (B, 0)``, ``z_2 = 0``,
    ``z_2' = (0, delta)``, ``W_qk = e_1 e_2^T``, ``W_v = I``. Returns
    ``(observed ratio ||SA(Z) - SA(Z')||_row / ||Z - Z'||_row, lower bound B^2/4 (1 - B^2 delta^2/12),
    upper bound 1 + 2 B^2)``."""
    Z = torch.tensor([[B, 0.0], [0.0, 0.0]], dtype=F64)
    Zp = torch.tensor([[B, 0.0], [0.0, delta]], dtype=F64)
    Wqk = torch.tensor([[0.0, 1.0], [0.0, 0.0]], dtype=F64)
    Wv = torch.eye(2, dtype=F64)
    diff = torch.linalg.vector_norm(
        self_attention(Z, Wqk, Wv) - self_attention(Zp, Wqk, Wv), dim=-1
    ).amax()
    observed = float(diff / delta)
    return (
        observed,
        _THIS.no_global_lower(B, delta),
        float(attention_lipschitz_constant(1.0, 1.0, B)),
    )


def no_global_lower(B: float, delta: float) -> float:
    """``B^2/4 (1 - B^2 delta^2/12)``: :func:`genbound.symbolic.softmax.no_global_lower_bound`, evaluated."""
    dl = sym_soft.sp.Symbol("delta", positive=True)
    return float(sym_soft.no_global_lower_bound().subs({sym_soft.B: B, dl: delta}))


def _noglobal_check(seed):
    worst, n = 0.0, 0
    for B in [0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 100.0]:
        for delta in [1e-1 / B, 1e-2 / B, 1e-3 / B]:
            obs, low, up = no_global_lipschitz_instance(B, delta)
            worst = max(worst, low / obs, obs / up)
            n += 1
    return worst, n


register(
    Claim(
        label="prop-no-global-lipschitz",
        covers=("genbound.claims.part1_softmax_attention.no_global_lipschitz_instance",),
        statement="on rows <= B the best max-row Lipschitz constant of self-attention is >= B^2/4 (for S_V = S_QK = 1): no global constant",
        chapter=CH_SOFT,
        provenance="reconstructed",
        numeric=FunctionCheck(_noglobal_check),
        symbolic=sym_soft.verify_sigmoid_lower,
        mutants=(
            scaled(
                _THIS,
                "no_global_lower",
                2.0,
                name="lower-doubled",
                what="the local constant claimed to be at least B^2/2 (1 - B^2 delta^2/12)",
            ),
        ),
    )
)
