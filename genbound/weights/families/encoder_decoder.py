"""Encoder-decoder models (T5, BART and relatives): recognised and refused, with the reason.

Their decoder layers hold cross-attention, whose queries come from the decoder and whose keys and
values come from the encoder's output: a map of two sequences that the papers' single-sequence
block (and so every proxy here) does not describe. Reporting the encoder alone would describe part
of the model only.
"""

from .base import Refusal

REASON = (
    "an encoder-decoder model (model_type {mt!r}): its decoder layers hold cross-attention from "
    "the decoder to the encoder's output, a block the papers' bound does not describe, and "
    "reporting the encoder alone would describe part of the model only; genbound refuses it"
)

T5 = Refusal(
    name="t5",
    anchor="decoder.block.0.layer.1.EncDecAttention.q.weight",
    reason=REASON,
    members=("t5", "mt5", "umt5", "longt5", "switch_transformers"),
)
BART = Refusal(
    name="bart",
    anchor="decoder.layers.0.encoder_attn.q_proj.weight",
    reason=REASON,
    members=("bart", "mbart", "marian", "pegasus", "blenderbot", "plbart", "m2m_100", "nllb-moe"),
)
