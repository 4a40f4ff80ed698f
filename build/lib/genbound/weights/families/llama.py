"""Llama-family decoders (Llama, Mistral, Qwen2, ...): recognised and refused, with the reason.

Three things break the proxies' reading of a layer (book, Part III, chapter "Trained transformers",
section "Other architectures"):

* rotary position embeddings rotate queries and keys by position-dependent angles, so the score of
  positions ``s, t`` is ``x_s W_Q R_{t-s} W_K^T x_t^T`` (row-vector maps ``W_Q, W_K``): one bilinear
  form per relative offset, not the single ``W_Q W_K^T`` whose spectrum the proxy uses;
* the feed-forward block is gated, ``(SiLU(x W_gate^T) * (x W_up^T)) W_down^T``: a product of two
  branches, not ``phi(x M_in) M_out``, so its Lipschitz factor is not ``L_phi C2(M_in) C2(M_out)``;
* grouped-query attention shares one key and value projection among several query heads.
"""

from .base import Refusal

REFUSAL = Refusal(
    name="llama",
    anchor="layers.0.mlp.gate_proj.weight",
    reason=(
        "a Llama-family decoder (rotary position embeddings make the query-key form depend on the "
        "relative position, the feed-forward block is gated and key/value heads are shared); the "
        "proxies QK = W_Q W_K^T, M_in and M_out do not describe it, so genbound refuses it (see the "
        "book, Part III, 'Trained transformers', section 'Other architectures')"
    ),
)
