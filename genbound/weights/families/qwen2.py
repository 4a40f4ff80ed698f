"""Qwen2: Llama's parameter names and block, with biases on the query, key and value projections.

Names, sizes and score scale as :mod:`.llama`; the biases are vectors, left out as for every family.
"""

from .base import llama_like

FAMILY = llama_like("qwen2", "Qwen2", ("qwen2",))
