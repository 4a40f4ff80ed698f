"""DeBERTa-v2 and -v3: BERT's post-LayerNorm encoder with disentangled (relative-position) attention.

Parameter names (after an optional ``deberta.`` prefix)::

    encoder.layer.{i}.attention.self.{query,key,value}_proj.weight   (N, N)   nn.Linear (out, in)
    encoder.layer.{i}.attention.output.dense.weight                  (N, N)
    encoder.layer.{i}.intermediate.dense.weight                      (d_ff, N)
    encoder.layer.{i}.output.dense.weight                            (N, d_ff)

Config keys ``hidden_size``, ``num_attention_heads``, ``intermediate_size``, ``num_hidden_layers`` and
``attention_head_size`` (``dh``; default ``N / H``).
Scores are scaled by ``1/sqrt(dh (1 + |{c2p, p2c} in pos_att_type|))``. With ``relative_attention``
the scores add content-to-position and position-to-content terms, bilinear forms of the queries or
keys with projected relative-position embeddings (``encoder.rel_embeddings``, outside the layers):
not the form ``x W_Q W_K^T y^T`` of the papers' bound (QK not covered). ``share_att_key=false``
gives each layer its own position projections (``pos_key_proj``, ``pos_query_proj``), matrices the
proxies do not consume: the loader refuses them by name.
"""

import math

from .base import Family, Role, config_value

DISENTANGLED_NOTE = (
    "disentangled attention: every score adds content-to-position and position-to-content terms "
    "(the queries and keys against projected relative-position embeddings) to x W_Q W_K^T y^T, "
    "which the papers' bound does not describe; not covered"
)


def _pos_terms(config) -> int:
    kinds = config_value(config, "pos_att_type") or []
    if isinstance(kinds, str):  # older configs: "p2c|c2p"
        kinds = kinds.lower().split("|")
    return sum(k in kinds for k in ("c2p", "p2c"))


def _score_scale(config, layer: int, d_head: int) -> float:
    return 1.0 / math.sqrt(d_head * (1 + _pos_terms(config)))


FAMILY = Family(
    name="deberta_v2",
    title="DeBERTa-v2, DeBERTa-v3",
    members=("deberta-v2",),
    layer="encoder.layer.{i}.",
    roles={
        "query": Role("attention.self.query_proj.weight"),
        "key": Role("attention.self.key_proj.weight"),
        "value": Role("attention.self.value_proj.weight"),
        "attn_out": Role("attention.output.dense.weight"),
        "ff_in": Role("intermediate.dense.weight"),
        "ff_out": Role("output.dense.weight"),
    },
    sizes={
        "hidden": "hidden_size",
        "heads": "num_attention_heads",
        "d_ff": "intermediate_size",
        "layers": "num_hidden_layers",
        "head_dim": "attention_head_size",
    },
    score_scale=_score_scale,
    # without relative_attention (no released checkpoint; an absent key is read as on, so no bound
    # is claimed for a model that has it) the scores are BERT's
    qk_notes=lambda config: (
        [] if config_value(config, "relative_attention") is False else [DISENTANGLED_NOTE]
    ),
    block="post-LayerNorm bidirectional encoder (LayerNorm after each residual sum), disentangled "
    "relative-position attention",
)
