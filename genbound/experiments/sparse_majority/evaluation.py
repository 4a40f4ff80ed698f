"""Losses, accuracies and ramp risks of stacks of networks (part of
:mod:`genbound.experiments.sparse_majority`)."""

from __future__ import annotations

import torch

from .model import cls_logits

__all__ = ["bce_one_hot", "evaluate_stack", "ramp_risk"]


def bce_one_hot(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Keras' ``BinaryCrossentropy(from_logits=True)`` on one-hot targets: the mean over the two logits
    (and over the sequence axis) of the sigmoid cross-entropies; returns one loss per model ``(K,)``.

    >>> import math
    >>> z = torch.tensor([[[0.0, 0.0]]], dtype=torch.float64)
    >>> abs(bce_one_hot(z, torch.tensor([[1]])).item() - math.log(2)) < 1e-15
    True
    """
    target = torch.nn.functional.one_hot(labels, 2).to(logits.dtype)
    per = torch.nn.functional.binary_cross_entropy_with_logits(logits, target, reduction="none")
    return per.mean(dim=(-2, -1))


@torch.no_grad()
def evaluate_stack(params, bits, labels, embeddings, encoding, score_scale, *, chunk: int = 2000):
    """Loss (:func:`bce_one_hot`) and argmax accuracy of every model on its own data, in chunks:
    returns two tensors ``(K,)`` (float64)."""
    K, n = bits.shape[:2]
    loss = torch.zeros(K, dtype=torch.float64, device=bits.device)
    correct = torch.zeros(K, dtype=torch.float64, device=bits.device)
    for st in range(0, n, chunk):
        bb, yy = bits[:, st : st + chunk], labels[:, st : st + chunk]
        z = cls_logits(params, bb, embeddings, encoding, score_scale)
        loss += bce_one_hot(z, yy).double() * bb.shape[1]
        correct += (z.argmax(-1) == yy).double().sum(1)
    return loss / n, correct / n


@torch.no_grad()
def ramp_risk(params, bits, labels, embeddings, encoding, score_scale, *, margin: float = 1.0):
    """Empirical ramp risk ``mean clip(1 - M / margin, 0, 1)`` of every model, with the multiclass margin
    ``M = z_y - max_{j != y} z_j``: the empirical term of the margin bounds (``(K,)``, float64)."""
    z = cls_logits(params, bits, embeddings, encoding, score_scale).double()
    zy = z.gather(-1, labels[..., None]).squeeze(-1)
    other = z.gather(-1, (1 - labels)[..., None]).squeeze(-1)
    return torch.clamp(1 - (zy - other) / margin, 0.0, 1.0).mean(-1)
