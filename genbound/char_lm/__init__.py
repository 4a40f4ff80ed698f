"""Part VII's character-level language model: the network (``genbound.char_lm.model``) and what its
certificate reads off it (``genbound.char_lm.evaluate``: the quantized weights and their symbols, the
smoothed log-loss and top-1 errors on documents).

It stands on the ground floor, beside the reference transformer of :mod:`genbound.nets`: the Part VII
claims check these functions and the experiment (:mod:`genbound.experiments.certify_lm`) trains and
certifies with them.
"""

from __future__ import annotations

from .evaluate import document_losses, quantize, symbol_counts
from .model import CharTransformer, inputs_of, n_params

__all__ = [
    "CharTransformer",
    "inputs_of",
    "n_params",
    "quantize",
    "symbol_counts",
    "document_losses",
]
