"""A minimal causal character-level transformer (GPT-style, pre-LayerNorm, tied input/output embedding),
and its input: the start symbol, then the document shifted by one (:func:`inputs_of`).

The book's reference forward pass (:class:`genbound.nets.ReferenceTransformer`) reads real-valued
inputs and predicts at chosen positions; a language model needs a token embedding, causal
masking and a prediction at every position, so Part VII has this second reference net of its own.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["CharTransformer", "inputs_of", "n_params"]


class _Block(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        shape = (B, T, self.heads, d // self.heads)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(B, T, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class CharTransformer(nn.Module):
    """``V`` symbols (plus a start symbol, code ``V``, that is read but never predicted), width ``d``, ``layers`` blocks of ``max(1, d // 16)`` heads, contexts up to ``ctx``.
    ``forward(x)`` maps codes ``(B, T)`` to next-character logits ``(B, T, V)``: position ``t`` sees
    ``x[:, :t + 1]`` and predicts ``x[:, t + 1]``."""

    def __init__(self, V: int, d: int, layers: int, ctx: int):
        super().__init__()
        self.V = V
        self.emb = nn.Embedding(
            V + 1, d
        )  # code V: the start symbol before a document's first character
        self.pos = nn.Parameter(torch.zeros(ctx, d))
        self.blocks = nn.ModuleList(_Block(d, max(1, d // 16)) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        nn.init.normal_(self.emb.weight, std=0.02)
        nn.init.normal_(self.pos, std=0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The logits ``(B, L, V)`` of the next character at every position of the inputs ``x``
        (``(B, L)`` symbols, the start symbol ``V`` first: :func:`inputs_of`)."""
        h = self.emb(x) + self.pos[: x.shape[1]]
        for b in self.blocks:
            h = b(h)
        return self.ln(h) @ self.emb.weight[: self.V].T


def n_params(model: nn.Module) -> int:
    """The number of scalar parameters (each quantized and coded)."""
    return sum(p.numel() for p in model.parameters())


def inputs_of(docs: torch.Tensor, V: int) -> torch.Tensor:
    """The model's input for documents ``(B, L)``: the start symbol ``V``, then characters ``0 .. L - 2``."""
    start = torch.full((docs.shape[0], 1), V, dtype=docs.dtype)
    return torch.cat([start, docs[:, :-1]], dim=1)
