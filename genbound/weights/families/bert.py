"""BERT, RoBERTa and ELECTRA: post-LayerNorm encoders with separate query, key and value projections.

Parameter names (after an optional model prefix such as ``bert.``, ``roberta.``, ``electra.``)::

    encoder.layer.{i}.attention.self.{query,key,value}.weight   (N, N)   nn.Linear (out, in)
    encoder.layer.{i}.attention.output.dense.weight             (N, N)
    encoder.layer.{i}.intermediate.dense.weight                 (d_ff, N)
    encoder.layer.{i}.output.dense.weight                       (N, d_ff)

Config keys ``hidden_size``, ``num_attention_heads``, ``intermediate_size``, ``num_hidden_layers``.
Scores are scaled by ``1/sqrt(d_head)``. Cross-attention (``crossattention.*``, BERT as a decoder)
and Longformer's global projections (``query_global`` ...) are per-layer matrices the proxies do not
describe; the loader refuses them by name.
"""

from .base import Family, Role

FAMILY = Family(
    name="bert",
    title="BERT, RoBERTa, ELECTRA",
    members=("bert", "roberta", "electra", "camembert", "xlm-roberta"),  # same names
    layer="encoder.layer.{i}.",
    roles={
        "query": Role("attention.self.query.weight"),
        "key": Role("attention.self.key.weight"),
        "value": Role("attention.self.value.weight"),
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
    block="post-LayerNorm bidirectional encoder (LayerNorm after each residual sum)",
    embeddings=(
        ("embed_tokens", "embeddings.word_embeddings.weight"),
        ("embed_positions", "embeddings.position_embeddings.weight"),
    ),
    heads=(("lm_head", "cls.predictions.decoder.weight"), ("classifier", "classifier.weight")),
)
