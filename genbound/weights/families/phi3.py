"""Phi-3: a Llama-like decoder whose query-key-value and gate-up projections are fused.

Parameter names (after an optional ``model.`` prefix)::

    layers.{i}.self_attn.qkv_proj.weight   ((H + 2 KV) * dh, N)   rows: query [H*dh], key [KV*dh], value [KV*dh]
    layers.{i}.self_attn.o_proj.weight     (N, H*dh)
    layers.{i}.mlp.gate_up_proj.weight     (2F, N)                rows: gate [F], up [F]
    layers.{i}.mlp.down_proj.weight        (N, F)

The fused tensors are split by the config's sizes (``num_attention_heads``,
``num_key_value_heads``, ``head_dim`` or ``N / H``, ``intermediate_size``), as the model's forward
does. Rotary position embeddings, RMSNorm, SwiGLU: what is not covered is said per matrix.
"""

from .base import LLAMA_SIZES, Role, llama_like

FAMILY = llama_like(
    "phi3",
    "Phi-3",
    ("phi3",),
    roles={
        "query": Role("self_attn.qkv_proj.weight", layout="qkv", part=0),
        "key": Role("self_attn.qkv_proj.weight", layout="qkv", part=1),
        "value": Role("self_attn.qkv_proj.weight", layout="qkv", part=2),
        "attn_out": Role("self_attn.o_proj.weight"),
        "ff_gate": Role("mlp.gate_up_proj.weight", layout="gate_up", part=0),
        "ff_in": Role("mlp.gate_up_proj.weight", layout="gate_up", part=1),
        "ff_out": Role("mlp.down_proj.weight"),
    },
    sizes=LLAMA_SIZES,
)
