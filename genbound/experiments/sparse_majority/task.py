"""The sparse-majority task: bits, relevant positions and token embeddings (part of
:mod:`genbound.experiments.sparse_majority`); the authors' positional encoding and the ``T``-uniform
input radius it implies are :mod:`genbound.positional`."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..._validate import check_positive_int
from ...device import resolve_device, resolve_dtype
from ...errors import ParameterError
from ...positional import D_MODEL, encoding_rows, sinusoidal_encoding, uniform_input_radius

__all__ = [
    "D_MODEL",
    "N_HEADS",
    "D_HEAD",
    "S_RELEVANT",
    "sinusoidal_encoding",
    "encoding_rows",
    "token_embeddings",
    "SparseMajorityTask",
    "uniform_input_radius",
    "make_task",
]

#: Heads, head width and number of relevant positions of the authors' script (its width is
#: :data:`genbound.positional.D_MODEL`).
N_HEADS, D_HEAD, S_RELEVANT = 2, 64, 9


def token_embeddings(d: int, generator: torch.Generator) -> torch.Tensor:
    """Rows ``e_0, e_1, e_cls`` (shape ``(3, d)``): ``U(-1, 1)^d`` draws, Gram-Schmidt, unit l1 norm each.

    ``e_1`` is orthogonalised against ``e_0``, ``e_cls`` against both (in that order, as in the original).

    >>> E = token_embeddings(8, torch.Generator().manual_seed(0))
    >>> abs(float(E[0] @ E[1])) < 1e-15 and abs(float(E[2] @ E[1])) < 1e-15
    True
    """
    d = check_positive_int(d, "d", minimum=3)
    e = torch.rand(3, d, generator=generator, dtype=torch.float64) * 2 - 1
    e0, e1, ec = e[0], e[1], e[2]
    e1 = e1 - (e1 @ e0) / (e0 @ e0) * e0
    ec = ec - (ec @ e0) / (e0 @ e0) * e0
    ec = ec - (ec @ e1) / (e1 @ e1) * e1
    E = torch.stack([e0, e1, ec])
    return E / E.abs().sum(1, keepdim=True)


@dataclass(frozen=True)
class SparseMajorityTask:
    """One instance of the task: ``seq_len`` bits, the ``s`` relevant ``positions``, ``embeddings`` ``(3, d)``
    (rows ``e_0, e_1, e_cls``) and the positional ``encoding`` ``(seq_len + 1, d)``, all float64."""

    seq_len: int
    s: int
    positions: torch.Tensor
    embeddings: torch.Tensor
    encoding: torch.Tensor

    @property
    def d(self) -> int:
        """Token width."""
        return int(self.embeddings.shape[1])

    def label(self, bits: torch.Tensor) -> torch.Tensor:
        """``1{sum of the relevant bits >= s/2}`` (the majority, ``s`` odd), as ``int64``."""
        return (bits[..., self.positions].long().sum(-1) * 2 >= self.s).long()

    def one_bit_accuracy(self, bits: torch.Tensor, labels: torch.Tensor) -> float:
        """The best accuracy on ``(bits, labels)`` of a rule that reads one relevant bit (predict the
        label equal to bit ``positions[i]``, the best ``i``): what a network that found one relevant
        position and memorised nothing else would score. For uniform bits its expectation is
        ``1/2 + C(s-1, (s-1)/2) / 2^s`` (0.637 for ``s = 9``), since the bit decides the label exactly
        when the other ``s - 1`` relevant bits tie."""
        agree = bits[..., self.positions].long() == labels.long()[..., None]
        return float(agree.double().mean(0).max())

    def sample(self, n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """``n`` i.i.d. sequences: bits ``(n, seq_len)`` (``uint8``, duplicates allowed) and labels ``(n,)``."""
        n = check_positive_int(n, "n (number of samples)")
        bits = torch.randint(0, 2, (n, self.seq_len), generator=generator, dtype=torch.uint8)
        return bits, self.label(bits)

    def embed(self, bits: torch.Tensor, *, dtype=torch.float64, device=None) -> torch.Tensor:
        """The model input ``X`` ``(n, seq_len + 1, d)``: rows ``e_{b_t} + PE_t``, then ``e_cls + PE_T``."""
        E = self.embeddings
        rows = E[bits.long()]  # (n, T, d)
        cls = E[2].expand(bits.shape[0], 1, E.shape[1])
        X = torch.cat([rows, cls], dim=1) + self.encoding
        return X.to(dtype=resolve_dtype(dtype), device=resolve_device(device) if device else None)

    def input_radius(self) -> float:
        """``max ||x_t||_2`` over every row any sequence of **this** length can have (``3 (T+1)``
        candidates), exact. It grows with ``T``; the bounds use :func:`~genbound.positional.uniform_input_radius` instead."""
        tokens = self.embeddings[:2, None, :] + self.encoding[None, :-1, :]  # (2, T, d)
        cls = self.embeddings[2] + self.encoding[-1]
        return max(
            float(torch.linalg.vector_norm(tokens, dim=-1).max()),
            float(torch.linalg.vector_norm(cls)),
        )


def make_task(
    seq_len: int, *, s: int = S_RELEVANT, d: int = D_MODEL, seed: int = 0
) -> SparseMajorityTask:
    """A seeded task: the relevant positions (``s`` of ``seq_len``, without replacement), then the embeddings.

    Raises :class:`~genbound.errors.ParameterError` for ``s`` even or ``< 1`` and for ``seq_len < s``.

    >>> make_task(5, s=9)
    Traceback (most recent call last):
    ...
    genbound.errors.ParameterError: seq_len T = 5 must be >= s = 9 (the number of relevant positions)
    """
    s, seq_len = _check_task(seq_len, s)
    gen = torch.Generator().manual_seed(int(seed))
    positions = torch.sort(torch.randperm(seq_len, generator=gen)[:s]).values
    return SparseMajorityTask(
        seq_len, s, positions, token_embeddings(d, gen), sinusoidal_encoding(seq_len + 1, d)
    )


def _check_task(seq_len, s) -> tuple[int, int]:
    s = check_positive_int(s, "s (number of relevant positions)")
    if s % 2 == 0:
        raise ParameterError(f"s = {s} must be odd so that the majority is never tied")
    seq_len = check_positive_int(seq_len, "seq_len T")
    if seq_len < s:
        raise ParameterError(
            f"seq_len T = {seq_len} must be >= s = {s} (the number of relevant positions)"
        )
    return s, seq_len
