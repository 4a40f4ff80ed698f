"""Training one model of the sweep: AdamW on the training documents, seeded, CPU, one thread.

Each step draws ``batch`` training documents uniformly (a torch generator seeded with ``seed``), reads
the start symbol then the document's first ``doc_len - 1`` characters, and is scored by the
cross-entropy of every character of the document. The learning rate warms up linearly over the first
``min(100, steps // 10)`` steps, then follows a cosine to a tenth of ``lr``.

**Quantization-aware training** (``qat_bits > 0``): from step ``qat_start * steps`` on, each step's
forward and backward pass use the weights rounded to the ``2**qat_bits - 1`` levels of
:func:`genbound.char_lm.evaluate.quantize` (per tensor, the scale from the current weights), and the gradient so
computed updates the float weights (the straight-through estimator); the float weights are kept.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch
import torch.nn.functional as F

from ...char_lm.model import CharTransformer, inputs_of

__all__ = ["train_model", "lr_at"]


def _round_in_place(params, bits: int) -> list:
    """Round every tensor to its ``2**bits - 1`` symmetric levels (as :func:`genbound.char_lm.evaluate.quantize` does);
    returns the float tensors it replaced."""
    top = 2 ** (bits - 1) - 1
    kept = []
    with torch.no_grad():
        for p in params:
            kept.append(p.detach().clone())
            amax = float(p.abs().max())
            s = float(np.float32(amax / top)) if amax > 0 else 1.0
            p.copy_(torch.clamp(torch.round(p / s), -top, top) * s)
    return kept


def lr_at(step: int, steps: int, lr: float) -> float:
    """The learning rate of ``step`` (0-based) of ``steps``: linear warm-up, cosine to ``lr / 10``."""
    warm = max(1, min(100, steps // 10))
    if step < warm:
        return lr * (step + 1) / warm
    t = (step - warm) / max(1, steps - warm)
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


def train_model(
    train_docs: np.ndarray,
    V: int,
    d: int,
    layers: int,
    *,
    steps: int,
    batch: int,
    lr: float,
    seed: int,
    progress=None,
    log_every: int = 0,
    qat_bits: int = 0,
    qat_start: float = 0.5,
) -> tuple[CharTransformer, dict]:
    """Train a :class:`CharTransformer` and return it with ``{"seconds", "curve"}`` (``curve``: the
    mean training loss in bits per character over each ``log_every`` steps, as ``(step, bits)``)."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    L = train_docs.shape[1]
    model = CharTransformer(V, d, layers, L)
    docs = torch.from_numpy(train_docs.astype(np.int64))
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01, betas=(0.9, 0.99))
    curve, acc, t0 = [], [], time.perf_counter()
    q_from = int(qat_start * steps) if qat_bits else steps
    params = list(model.parameters())
    for step in range(steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, steps, lr)
        idx = torch.randint(0, docs.shape[0], (batch,), generator=gen)
        y = docs[idx]
        kept = _round_in_place(params, qat_bits) if step >= q_from else None
        logits = model(inputs_of(y, V))
        loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if kept is not None:
            with torch.no_grad():
                for p, w in zip(params, kept):
                    p.copy_(w)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        acc.append(loss.item() / math.log(2))
        if log_every and (step + 1) % log_every == 0:
            curve.append((step + 1, float(np.mean(acc))))
            acc = []
            if progress is not None:
                progress(step + 1, curve[-1][1], time.perf_counter() - t0)
    model.eval()
    return model, {"seconds": time.perf_counter() - t0, "curve": curve}
