"""ViT: a pre-LayerNorm bidirectional encoder over image patches, with BERT-like projections.

Parameter names (after an optional ``vit.`` prefix)::

    encoder.layer.{i}.attention.attention.{query,key,value}.weight   (N, N)   nn.Linear (out, in)
    encoder.layer.{i}.attention.output.dense.weight                  (N, N)
    encoder.layer.{i}.intermediate.dense.weight                      (F, N)
    encoder.layer.{i}.output.dense.weight                            (N, F)

Config keys as BERT's. The patch embedding (a convolution), the class token and the learned
positions are outside the layers. Scores scaled by ``1/sqrt(dh)``; GELU feed-forward block.
"""

from .base import Family, Role

FAMILY = Family(
    name="vit",
    title="ViT",
    members=("vit",),
    layer="encoder.layer.{i}.",
    roles={
        "query": Role("attention.attention.query.weight"),
        "key": Role("attention.attention.key.weight"),
        "value": Role("attention.attention.value.weight"),
        "attn_out": Role("attention.output.dense.weight"),
        "ff_in": Role("intermediate.dense.weight"),
        "ff_out": Role("output.dense.weight"),
    },
    sizes={
        "hidden": "hidden_size",
        "heads": "num_attention_heads",
        "d_ff": "intermediate_size",
        "layers": "num_hidden_layers",
    },
    block="pre-LayerNorm bidirectional encoder over image patches, GELU feed-forward block",
)

#: transformers 5 holds a ViT *module*'s parameters under other names (it writes the names above on
#: saving): ``layers.{i}.attention.{q,k,v,o}_proj.weight``, ``layers.{i}.mlp.fc1/fc2.weight``.
MODULE_FAMILY = Family(
    name="vit",
    title="ViT",
    members=("vit",),
    layer="layers.{i}.",
    roles={
        "query": Role("attention.q_proj.weight"),
        "key": Role("attention.k_proj.weight"),
        "value": Role("attention.v_proj.weight"),
        "attn_out": Role("attention.o_proj.weight"),
        "ff_in": Role("mlp.fc1.weight"),
        "ff_out": Role("mlp.fc2.weight"),
    },
    sizes=FAMILY.sizes,
    block=FAMILY.block,
)
