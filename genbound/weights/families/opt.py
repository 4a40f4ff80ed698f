"""OPT: a pre-LayerNorm causal decoder with separate projections and learned absolute positions.

Parameter names (after an optional ``model.`` prefix)::

    decoder.layers.{i}.self_attn.{q,k,v}_proj.weight   (N, N)   nn.Linear (out, in)
    decoder.layers.{i}.self_attn.out_proj.weight       (N, N)
    decoder.layers.{i}.fc1.weight                      (F, N)
    decoder.layers.{i}.fc2.weight                      (N, F)

Config keys ``hidden_size``, ``num_attention_heads``, ``ffn_dim``, ``num_hidden_layers``. The
queries are multiplied by ``1/sqrt(dh)`` (score scale). ReLU feed-forward block; positions are
learned embeddings added to the input (outside the layers), so the layer's matrices are the
papers' blocks: covered as GPT-2's are.
"""

from .base import Family, Role

FAMILY = Family(
    name="opt",
    title="OPT",
    members=("opt",),
    layer="decoder.layers.{i}.",
    roles={
        "query": Role("self_attn.q_proj.weight"),
        "key": Role("self_attn.k_proj.weight"),
        "value": Role("self_attn.v_proj.weight"),
        "attn_out": Role("self_attn.out_proj.weight"),
        "ff_in": Role("fc1.weight"),
        "ff_out": Role("fc2.weight"),
    },
    sizes={
        "hidden": "hidden_size",
        "heads": "num_attention_heads",
        "d_ff": "ffn_dim",
        "layers": "num_hidden_layers",
    },
    block="pre-LayerNorm causal decoder (do_layer_norm_before), learned positions, ReLU feed-forward",
    embeddings=(
        ("embed_tokens", "decoder.embed_tokens.weight"),
        ("embed_positions", "decoder.embed_positions.weight"),
    ),
    heads=(("lm_head", "lm_head.weight"),),
)
