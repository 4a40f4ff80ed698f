"""Falcon: a decoder with a fused query-key-value projection in one of three layouts, chosen by the config.

Parameter names (after an optional ``transformer.`` prefix)::

    h.{i}.self_attention.query_key_value.weight   (rows, N)   fused, split as below
    h.{i}.self_attention.dense.weight             (N, H*dh)
    h.{i}.mlp.dense_h_to_4h.weight                (F, N)
    h.{i}.mlp.dense_4h_to_h.weight                (N, F)

The layout, as the model's ``_split_heads``: ``new_decoder_architecture`` (Falcon-40B/180B): per
key/value head ``g`` of ``num_kv_heads``, its ``H/KV`` query heads, then its key, then its value
(``[KV, H/KV + 2, dh]``); else ``multi_query`` (Falcon-7B): ``H`` query heads, one key, one value
(``[H + 2, dh]``, multi-query attention); else per head query, key, value (``[H, 3, dh]``).
Config keys ``hidden_size``, ``num_attention_heads``, ``ffn_hidden_size`` (null: ``4 N``),
``num_hidden_layers``. Rotary position embeddings unless ``alibi``; ``parallel_attn``: attention
and feed-forward read the same input. Scores scaled by ``1/sqrt(dh)``; GELU feed-forward block.
"""

from .base import Family, Role, config_value
from ...errors import ArchitectureError


def _flag(config, key: str, default: bool) -> bool:

    v = config_value(config, key)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise ArchitectureError(f"config key {key!r} must be true or false, got {v!r}")
    return v


def layout(config) -> str:
    """The fused layout the config selects (see the module docstring)."""
    if _flag(config, "new_decoder_architecture", False):
        return "qkv_groups"
    return "qkv" if _flag(config, "multi_query", True) else "qkv_heads"


def kv_heads(config, heads: int) -> int | None:
    """Key/value heads: ``num_kv_heads`` (new architecture), 1 (multi-query) or ``heads``."""
    if _flag(config, "new_decoder_architecture", False):
        return config_value(config, "num_kv_heads")  # checked as a size by the loader
    return 1 if _flag(config, "multi_query", True) else heads


def _alibi(config):
    if not _flag(config, "alibi", False):
        return []
    return [
        "ALiBi adds a position-dependent bias to every score, which the papers' bound does not "
        "describe; not covered"
    ]


FAMILY = Family(
    name="falcon",
    title="Falcon",
    members=("falcon",),
    layer="h.{i}.",
    roles={
        "query": Role("self_attention.query_key_value.weight", layout=layout, part=0),
        "key": Role("self_attention.query_key_value.weight", layout=layout, part=1),
        "value": Role("self_attention.query_key_value.weight", layout=layout, part=2),
        "attn_out": Role("self_attention.dense.weight"),
        "ff_in": Role("mlp.dense_h_to_4h.weight"),
        "ff_out": Role("mlp.dense_4h_to_h.weight"),
    },
    sizes={
        "hidden": "hidden_size",
        "heads": "num_attention_heads",
        "d_ff": "ffn_hidden_size",
        "layers": "num_hidden_layers",
    },
    default_d_ff=lambda hidden: 4 * hidden,
    kv_heads_of=kv_heads,
    rotary=lambda config: not _flag(config, "alibi", False),
    qk_notes=_alibi,
    block="causal decoder, LayerNorm, parallel attention and feed-forward (parallel_attn), GELU",
)
