"""DistilBERT: a post-LayerNorm encoder like BERT, with its own parameter and config names.

Parameter names (after an optional ``distilbert.`` prefix)::

    transformer.layer.{i}.attention.{q_lin,k_lin,v_lin}.weight   (N, N)   nn.Linear (out, in)
    transformer.layer.{i}.attention.out_lin.weight               (N, N)
    transformer.layer.{i}.ffn.lin1.weight                        (d_ff, N)
    transformer.layer.{i}.ffn.lin2.weight                        (N, d_ff)

Config keys ``dim``, ``n_heads``, ``hidden_dim``, ``n_layers``. The query is divided by
``sqrt(d_head)`` before the scores are taken, so the score scale is ``1/sqrt(d_head)``.
"""

from .base import Family, Role

FAMILY = Family(
    name="distilbert",
    title="DistilBERT",
    members=("distilbert",),
    layer="transformer.layer.{i}.",
    roles={
        "query": Role("attention.q_lin.weight"),
        "key": Role("attention.k_lin.weight"),
        "value": Role("attention.v_lin.weight"),
        "attn_out": Role("attention.out_lin.weight"),
        "ff_in": Role("ffn.lin1.weight"),
        "ff_out": Role("ffn.lin2.weight"),
    },
    sizes={"hidden": "dim", "heads": "n_heads", "d_ff": "hidden_dim", "layers": "n_layers"},
    block="post-LayerNorm bidirectional encoder (LayerNorm after each residual sum)",
    embeddings=(
        ("embed_tokens", "embeddings.word_embeddings.weight"),
        ("embed_positions", "embeddings.position_embeddings.weight"),
    ),
    heads=(("lm_head", "vocab_projector.weight"),),
)
