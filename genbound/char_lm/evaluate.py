"""Quantizing a trained model and measuring its smoothed log-loss and top-1 errors on documents.

**Quantization** (per tensor): with ``b`` bits, the ``2**b - 1`` symmetric levels
``s * k``, ``k in {-(2**(b-1) - 1), ..., 2**(b-1) - 1}``, ``s = max|w| / (2**(b-1) - 1)`` (the scale
stored as a float32); each weight is rounded to its nearest level. The decoder rebuilds the weights
from the scales and the integer symbols ``k``.

**Smoothing**: the predicted distribution ``p`` is mixed with the uniform one,
``p_alpha = (1 - alpha) p + alpha / V``, so that the log-loss ``-log2 p_alpha(y)`` lies in
``[-log2(1 - alpha + alpha / V), log2(V / alpha)]``. The top-1 prediction is the arg max of ``p``
(the same for every ``alpha``).

The logits are computed in float32 on the CPU, the log-probabilities and the sums in float64: the
hypothesis the bound is about is the function this code computes from the decoded weights.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch

from .model import CharTransformer, inputs_of

__all__ = ["quantize", "symbol_counts", "document_losses"]


def quantize(model: CharTransformer, bits: int) -> tuple[CharTransformer, list[np.ndarray], list]:
    """``(quantized copy, symbols per tensor, float32 scales)`` at ``bits`` bits per weight.

    Book: :prf:ref:`lem-lm-quantization`.
    """
    q = copy.deepcopy(model)
    top = 2 ** (bits - 1) - 1
    symbols, scales = [], []
    with torch.no_grad():
        for p in q.parameters():
            amax = float(p.detach().abs().max())
            s = np.float32(amax / top) if amax > 0 else np.float32(1.0)
            k = torch.clamp(torch.round(p / float(s)), -top, top)
            p.copy_(k * float(s))
            symbols.append(k.to(torch.int64).numpy().ravel())
            scales.append(s)
    return q, symbols, scales


def symbol_counts(symbols: list[np.ndarray], bits: int) -> np.ndarray:
    """How often each of the ``2**bits - 1`` levels occurs over all tensors (index 0: the lowest level)."""
    top = 2 ** (bits - 1) - 1
    return np.bincount(np.concatenate(symbols) + top, minlength=2 * top + 1).astype(np.int64)


def document_losses(model: CharTransformer, docs: np.ndarray, alphas, *, batch: int = 256) -> dict:
    """Sums over ``docs`` ``(n, L)``: ``{"raw": bits of -log2 p(y), "smoothed": {alpha: bits of
    -log2 p_alpha(y)}, "smoothed_sq": {alpha: sum of the squares of those bits}, "errors": top-1
    mistakes, "chars": n L, "docs": n}``. The documents are read ``batch`` at a time, in their order;
    the float32 logits may depend on ``batch`` (the kernels block differently), so the hypothesis is
    the function this code computes with that ``batch``.

    Book: :prf:ref:`lem-lm-smoothing-cost`.
    """
    V = model.V
    raw, errors = [], 0
    sm = {float(a): [] for a in alphas}
    sq = {float(a): [] for a in alphas}
    with torch.no_grad():
        for i in range(0, docs.shape[0], batch):
            y = torch.from_numpy(docs[i : i + batch].astype(np.int64))
            logits = model(inputs_of(y, V)).double()
            logp = torch.log_softmax(logits, dim=-1)
            lp = logp.gather(-1, y[..., None])[..., 0]
            raw.append(float((-lp).sum()) / math.log(2))
            p = lp.exp()
            for a in sm:
                la = -torch.log2((1 - a) * p + a / V)
                sm[a].append(float(la.sum()))
                sq[a].append(float((la * la).sum()))
            errors += int((logits.argmax(-1) != y).sum())
    return {
        "raw": math.fsum(raw),
        "smoothed": {a: math.fsum(v) for a, v in sm.items()},
        "smoothed_sq": {a: math.fsum(v) for a, v in sq.items()},
        "errors": errors,
        "chars": int(docs.size),
        "docs": int(docs.shape[0]),
    }
