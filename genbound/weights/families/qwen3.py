"""Qwen3: Llama's parameter names, plus an RMSNorm of every head's queries and keys.

Names, sizes and score scale as :mod:`.llama` (``head_dim`` is a config key and need not be
``N / H``). ``layers.{i}.self_attn.q_norm.weight`` and ``k_norm.weight`` (``(dh,)``) normalise each
head's query and key before the rotation, so the scores are not a bilinear form of the layer input:
the ``QK`` record says so.
"""

from .base import LLAMA_BLOCK, QK_NORM_NOTE, llama_like

FAMILY = llama_like(
    "qwen3",
    "Qwen3",
    ("qwen3",),
    qk_notes=lambda config: [QK_NORM_NOTE],
    block=LLAMA_BLOCK + "; RMSNorm of each head's queries and keys",
)
