"""GPT-NeoX (Pythia, GPT-NeoX-20B): a decoder with a per-head fused query-key-value projection.

Parameter names (after an optional ``gpt_neox.`` prefix)::

    layers.{i}.attention.query_key_value.weight   (3N, N)   rows per head h: query, key, value [h, 3, dh]
    layers.{i}.attention.dense.weight             (N, N)
    layers.{i}.mlp.dense_h_to_4h.weight           (F, N)
    layers.{i}.mlp.dense_4h_to_h.weight           (N, F)

The fused rows are split per head as the model's forward does (``view(..., H, 3 dh)``). Config keys
``hidden_size``, ``num_attention_heads``, ``intermediate_size``, ``num_hidden_layers``. Rotary
embeddings on a fraction of each head (``partial_rotary_factor``, formerly ``rotary_pct``);
``use_parallel_residual`` adds attention and feed-forward outputs to the same residual input
(the proxies, as the authors', leave residuals and LayerNorms out). GELU feed-forward block.
"""

from .base import Family, Role

FAMILY = Family(
    name="gpt_neox",
    title="GPT-NeoX",
    members=("gpt_neox",),
    layer="layers.{i}.",
    roles={
        "query": Role("attention.query_key_value.weight", layout="qkv_heads", part=0),
        "key": Role("attention.query_key_value.weight", layout="qkv_heads", part=1),
        "value": Role("attention.query_key_value.weight", layout="qkv_heads", part=2),
        "attn_out": Role("attention.dense.weight"),
        "ff_in": Role("mlp.dense_h_to_4h.weight"),
        "ff_out": Role("mlp.dense_4h_to_h.weight"),
    },
    sizes={
        "hidden": "hidden_size",
        "heads": "num_attention_heads",
        "d_ff": "intermediate_size",
        "layers": "num_hidden_layers",
    },
    buffers=("attention.bias", "attention.masked_bias"),
    rotary=lambda config: True,
    block=(
        "pre-LayerNorm causal decoder, parallel residual (use_parallel_residual), partial rotary "
        "position embeddings, GELU feed-forward block"
    ),
    embeddings=(("embed_tokens", "embed_in.weight"),),
    heads=(("lm_head", "lm_head.weight"),),
)
