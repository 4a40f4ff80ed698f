"""Llama (with and without grouped-query attention) and the decoders that share its parameter names.

Parameter names (after an optional ``model.`` prefix), ``dh`` the head size (``head_dim``, else
``N / H``), ``KV`` the key/value heads (``num_key_value_heads``, else ``H``)::

    layers.{i}.self_attn.q_proj.weight   (H*dh, N)    nn.Linear (out, in)
    layers.{i}.self_attn.k_proj.weight   (KV*dh, N)
    layers.{i}.self_attn.v_proj.weight   (KV*dh, N)
    layers.{i}.self_attn.o_proj.weight   (N, H*dh)
    layers.{i}.mlp.gate_proj.weight      (F, N)       gated feed-forward: (act(x W_gate) * x W_up) W_down
    layers.{i}.mlp.up_proj.weight        (F, N)
    layers.{i}.mlp.down_proj.weight      (N, F)

Config keys ``hidden_size``, ``num_attention_heads``, ``num_key_value_heads``, ``head_dim``,
``intermediate_size``, ``num_hidden_layers``. Scores are scaled by ``1/sqrt(dh)``. RMSNorm before
attention and before the feed-forward block (its gains are not matrices: left out, as LayerNorm's
are for BERT). What the papers' bound does not cover (rotary QK, the gated block) is said per matrix
(:meth:`~genbound.weights.families.base.Family.coverage`). :func:`llama_like` builds the families
that share these names (Mistral, Qwen2, Qwen3, Gemma, Gemma 2).
"""

from .base import llama_like

FAMILY = llama_like("llama", "Llama", ("llama",))
