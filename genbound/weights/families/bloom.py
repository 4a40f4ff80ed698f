"""BLOOM: a decoder with a per-head fused query-key-value projection and ALiBi position biases.

Parameter names (after an optional ``transformer.`` prefix; Falcon's names, told apart by the
config's ``model_type``)::

    h.{i}.self_attention.query_key_value.weight   (3N, N)   rows per head h: query, key, value [h, 3, dh]
    h.{i}.self_attention.dense.weight             (N, N)
    h.{i}.mlp.dense_h_to_4h.weight                (4N, N)
    h.{i}.mlp.dense_4h_to_h.weight                (N, 4N)

The fused rows are split per head as the model's ``_reshape`` does (``view(..., H, 3, dh)``). Config
keys ``hidden_size``, ``n_head``, ``n_layer``; the feed-forward width is always ``4 N``. Scores are
scaled by ``1/sqrt(dh)`` (``inv_norm_factor``) and ALiBi adds a per-head linear bias in the key
position to every score: the scores are not the bilinear form the papers' bound describes (QK not
covered). Pre-LayerNorm, GELU feed-forward block.
"""

from .base import Family, Role

ALIBI_NOTE = (
    "ALiBi adds a position-dependent bias to every score, which the papers' bound does not "
    "describe; not covered"
)

FAMILY = Family(
    name="bloom",
    title="BLOOM",
    members=("bloom",),
    layer="h.{i}.",
    roles={
        "query": Role("self_attention.query_key_value.weight", layout="qkv_heads", part=0),
        "key": Role("self_attention.query_key_value.weight", layout="qkv_heads", part=1),
        "value": Role("self_attention.query_key_value.weight", layout="qkv_heads", part=2),
        "attn_out": Role("self_attention.dense.weight"),
        "ff_in": Role("mlp.dense_h_to_4h.weight"),
        "ff_out": Role("mlp.dense_4h_to_h.weight"),
    },
    sizes={
        "hidden": "hidden_size",
        "heads": "n_head",
        "d_ff": "ffn_hidden_size",  # BLOOM has none: always 4 N (default_d_ff)
        "layers": "n_layer",
    },
    default_d_ff=lambda hidden: 4 * hidden,
    qk_notes=lambda config: [ALIBI_NOTE],
    block="pre-LayerNorm causal decoder, ALiBi position biases, GELU feed-forward block",
)
