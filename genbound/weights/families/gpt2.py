"""GPT-2: a causal, pre-LayerNorm decoder with a fused query-key-value projection in Conv1D layout.

Parameter names (after an optional ``transformer.`` prefix)::

    h.{i}.attn.c_attn.weight    (N, 3N)     Conv1D (in, out): columns [0, N) query, [N, 2N) key, [2N, 3N) value
    h.{i}.attn.c_proj.weight    (N, N)      Conv1D: the attention output
    h.{i}.mlp.c_fc.weight       (N, d_ff)   Conv1D: the feed-forward input
    h.{i}.mlp.c_proj.weight     (d_ff, N)   Conv1D: the feed-forward output

A ``Conv1D`` computes ``x W + b``, so its weight is the transpose of an ``nn.Linear`` weight; the
loader transposes it, and the proxies are then formed exactly as for BERT. Config keys ``n_embd``,
``n_head``, ``n_inner`` (``null`` means ``4 N``) and ``n_layer``. ``h.{i}.attn.bias`` and
``h.{i}.attn.masked_bias`` in older checkpoints are the causal mask, not weights. Scores are scaled by
``1/sqrt(d_head)`` when ``scale_attn_weights`` is true (the default) and additionally by
``1/(i + 1)`` in layer ``i`` when ``scale_attn_by_inverse_layer_idx`` is true. Cross-attention
(``crossattention.*``, ``add_cross_attention``) is refused by name.
"""

import math

from .base import Family, Role, config_value
from ...errors import ArchitectureError


def _flag(config, key: str, default: bool) -> bool:

    v = config_value(config, key)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise ArchitectureError(f"config key {key!r} must be true or false, got {v!r}")
    return v


def score_scale(config, layer: int, d_head: int) -> float:
    """GPT-2's score factor in layer ``layer`` (0-based), from ``scale_attn_weights`` and
    ``scale_attn_by_inverse_layer_idx``."""
    s = 1.0 / math.sqrt(d_head) if _flag(config, "scale_attn_weights", True) else 1.0
    if _flag(config, "scale_attn_by_inverse_layer_idx", False):
        s /= layer + 1
    return s


FAMILY = Family(
    name="gpt2",
    title="GPT-2",
    members=("gpt2",),
    layer="h.{i}.",
    roles={
        "query": Role("attn.c_attn.weight", conv1d=True, layout="qkv", part=0),
        "key": Role("attn.c_attn.weight", conv1d=True, layout="qkv", part=1),
        "value": Role("attn.c_attn.weight", conv1d=True, layout="qkv", part=2),
        "attn_out": Role("attn.c_proj.weight", conv1d=True),
        "ff_in": Role("mlp.c_fc.weight", conv1d=True),
        "ff_out": Role("mlp.c_proj.weight", conv1d=True),
    },
    sizes={"hidden": "n_embd", "heads": "n_head", "d_ff": "n_inner", "layers": "n_layer"},
    default_d_ff=lambda hidden: 4 * hidden,
    buffers=("attn.bias", "attn.masked_bias"),
    score_scale=score_scale,
    block="pre-LayerNorm causal decoder (LayerNorm before attention and feed-forward, causal mask)",
    embeddings=(("embed_tokens", "wte.weight"), ("embed_positions", "wpe.weight")),
    heads=(("lm_head", "lm_head.weight"),),
)
