"""Gemma 2: Gemma's parameter names, with norms after each sub-block and soft-capped scores.

Names and sizes as :mod:`.llama` (explicit ``head_dim``). Scores are scaled by
``query_pre_attn_scalar ** -0.5`` (not ``1/sqrt(dh)``) and soft-capped,
``cap * tanh(s / cap)`` with ``cap = attn_logit_softcapping``; layers alternate sliding-window and
global attention (masks, no weight changes). The extra ``post_attention_layernorm`` and
``post_feedforward_layernorm`` gains are vectors, left out.
"""

import math

from .base import config_value, llama_like
from ...errors import ArchitectureError


def score_scale(config, layer: int, d_head: int) -> float:
    """Gemma 2's score factor: ``query_pre_attn_scalar ** -0.5``."""

    v = config_value(config, "query_pre_attn_scalar")
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
        raise ArchitectureError(f"config key 'query_pre_attn_scalar' must be positive, got {v!r}")
    return 1.0 / math.sqrt(v)


def _softcap(config):
    cap = config_value(config, "attn_logit_softcapping")
    if cap is None:
        return []
    return [f"scores soft-capped as {cap} * tanh(s / {cap}) (attn_logit_softcapping)"]


FAMILY = llama_like(
    "gemma2",
    "Gemma 2",
    ("gemma2",),
    score_scale=score_scale,
    qk_notes=_softcap,
    block=(
        "causal decoder with RMSNorm before and after attention and feed-forward, rotary position "
        "embeddings, soft-capped scores, GeGLU gated feed-forward block"
    ),
)
