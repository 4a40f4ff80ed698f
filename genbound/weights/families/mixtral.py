"""Mixtral: Llama-like attention and a sparse mixture of gated experts in place of the feed-forward block.

Parameter names (after an optional ``model.`` prefix; attention as :mod:`.llama`)::

    layers.{i}.block_sparse_moe.gate.weight             (E, N)   the router
    layers.{i}.block_sparse_moe.experts.{e}.w1.weight   (F, N)   expert e's gate
    layers.{i}.block_sparse_moe.experts.{e}.w3.weight   (F, N)   expert e's up
    layers.{i}.block_sparse_moe.experts.{e}.w2.weight   (N, F)   expert e's down

``E = num_local_experts``; each token goes to the ``num_experts_per_tok`` experts with the largest
router scores, whose outputs are summed with the softmax router weights. Every expert's three
matrices are reported (column ``expert``), and the router as kind ``router``; none is covered by
the papers' bound (the router's weights multiply the experts' outputs).

transformers 5 holds the experts of a Mixtral *module* stacked, ``layers.{i}.mlp.experts.gate_up_proj``
``(E, 2F, N)`` (gate rows first, as its forward's ``chunk(2)``) and ``mlp.experts.down_proj``
``(E, N, F)``, with the router at ``mlp.gate.weight``, and writes the names above on saving:
:data:`MODULE_FAMILY` reads the module's names (the same family, ``mixtral``).
"""

from .base import LLAMA_ROLES, LLAMA_SIZES, Role, llama_like

FAMILY = llama_like(
    "mixtral",
    "Mixtral",
    ("mixtral",),
    roles={
        **{k: LLAMA_ROLES[k] for k in ("query", "key", "value", "attn_out")},
        "ff_gate": Role("block_sparse_moe.experts.{e}.w1.weight"),
        "ff_in": Role("block_sparse_moe.experts.{e}.w3.weight"),
        "ff_out": Role("block_sparse_moe.experts.{e}.w2.weight"),
        "router": Role("block_sparse_moe.gate.weight"),
    },
    sizes={
        **LLAMA_SIZES,
        "experts": "num_local_experts",
        "experts_per_token": "num_experts_per_tok",
    },
    ffn="moe",
    block=(
        "pre-RMSNorm causal decoder, rotary position embeddings, sparse mixture of SwiGLU experts "
        "with a softmax top-k router"
    ),
)

MODULE_FAMILY = llama_like(
    "mixtral",
    "Mixtral",
    ("mixtral",),
    roles={
        **{k: LLAMA_ROLES[k] for k in ("query", "key", "value", "attn_out")},
        "ff_gate": Role("mlp.experts.gate_up_proj", layout="gate_up", part=0, stacked=True),
        "ff_in": Role("mlp.experts.gate_up_proj", layout="gate_up", part=1, stacked=True),
        "ff_out": Role("mlp.experts.down_proj", stacked=True),
        "router": Role("mlp.gate.weight"),
    },
    sizes=FAMILY.sizes,
    ffn="moe",
    block=FAMILY.block,
)
