"""Gemma: Llama's parameter names with a GeGLU feed-forward block and an explicit ``head_dim``.

Names, sizes and score scale as :mod:`.llama` (``head_dim`` is a config key, 256 in the released
models, and need not be ``N / H``); the gate's activation is the tanh-approximate GELU; the RMSNorm
gain is ``1 + w`` (not a matrix, left out). Embeddings are multiplied by ``sqrt(N)`` (outside the
layers).
"""

from .base import llama_like

FAMILY = llama_like(
    "gemma",
    "Gemma",
    ("gemma",),
    block="pre-RMSNorm causal decoder, rotary position embeddings, GeGLU gated feed-forward block",
)
