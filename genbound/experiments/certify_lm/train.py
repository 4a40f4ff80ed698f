"""Training one model of the sweep: AdamW on the training documents, seeded, CPU, one thread.

Each step draws ``batch`` training documents uniformly (a torch generator seeded with ``seed``), reads
the start symbol then the document's first ``doc_len - 1`` characters, and is scored by the
cross-entropy of every character of the document. The learning rate warms up linearly over the first
``min(100, steps // 10)`` steps, then follows a cosine to a tenth of ``lr``.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch
import torch.nn.functional as F

from ...char_lm.model import CharTransformer, inputs_of

__all__ = ["train_model", "lr_at"]


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
    for step in range(steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, steps, lr)
        idx = torch.randint(0, docs.shape[0], (batch,), generator=gen)
        y = docs[idx]
        logits = model(inputs_of(y, V))
        loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
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
