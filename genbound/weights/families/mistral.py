"""Mistral: Llama's parameter names and block; sliding-window attention (a mask, no weight changes).

Names, sizes and score scale as :mod:`.llama`; ``sliding_window`` restricts which positions a query
sees and changes no matrix.
"""

from .base import LLAMA_BLOCK, llama_like

FAMILY = llama_like(
    "mistral", "Mistral", ("mistral",), block=LLAMA_BLOCK + "; sliding-window causal mask"
)
