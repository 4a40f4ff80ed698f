"""GPT-J: a causal decoder with separate projections, rotary embeddings and parallel attention/feed-forward.

Parameter names (after an optional ``transformer.`` prefix)::

    h.{i}.attn.{q,k,v}_proj.weight   (N, N)   nn.Linear (out, in), no biases
    h.{i}.attn.out_proj.weight       (N, N)
    h.{i}.mlp.fc_in.weight           (F, N)
    h.{i}.mlp.fc_out.weight          (N, F)

Config keys ``n_embd``, ``n_head``, ``n_inner`` (null: ``4 N``), ``n_layer``. Rotary embeddings on
the first ``rotary_dim`` coordinates of each head (rotate-every-two); one LayerNorm feeds both
attention and the feed-forward block, whose outputs are added to the residual. Scores divided by
``sqrt(dh)``. ``h.{i}.attn.bias`` and ``masked_bias`` in older files are the causal mask.
"""

from .base import Family, Role

FAMILY = Family(
    name="gptj",
    title="GPT-J",
    members=("gptj",),
    layer="h.{i}.",
    roles={
        "query": Role("attn.q_proj.weight"),
        "key": Role("attn.k_proj.weight"),
        "value": Role("attn.v_proj.weight"),
        "attn_out": Role("attn.out_proj.weight"),
        "ff_in": Role("mlp.fc_in.weight"),
        "ff_out": Role("mlp.fc_out.weight"),
    },
    sizes={"hidden": "n_embd", "heads": "n_head", "d_ff": "n_inner", "layers": "n_layer"},
    default_d_ff=lambda hidden: 4 * hidden,
    buffers=("attn.bias", "attn.masked_bias"),
    rotary=lambda config: True,
    block="causal decoder, one LayerNorm feeding parallel attention and feed-forward, rotary, GELU",
)
