"""The BERT grid's task: a seeded synthetic counting task (is token A more frequent than token B?).

>>> import torch
>>> ids, y = count_task(4, seq_len=8, generator=torch.Generator().manual_seed(0))
>>> ids.shape, y.shape, bool((ids[:, 0] == CLS).all())
(torch.Size([4, 8]), torch.Size([4]), True)
>>> bool(((y == 1) == ((ids == TOKEN_A).sum(1) > (ids == TOKEN_B).sum(1))).all())
True
"""

from __future__ import annotations

import torch

from ..._validate import check_positive_int
from .config import CLS, TOKEN_A, TOKEN_B

__all__ = ["count_task"]


def count_task(
    n: int, *, seq_len: int = 32, vocab: int = 24, generator: torch.Generator | None = None
):
    """``n`` sequences of a counting task: is token A more frequent than token B?

    Each sequence is ``[CLS]`` followed by ``seq_len - 1`` tokens drawn uniformly from the content ids
    ``2 .. vocab - 1`` (``TOKEN_A = 2`` and ``TOKEN_B = 3`` among them). The label is 1 when A occurs
    more often than B and 0 otherwise; ties are broken by overwriting the last token with A or B at
    random, so the label is always a strict comparison. Solving it needs attention to count tokens.

    Returns ``(input_ids, labels)`` of shapes ``(n, seq_len)`` and ``(n,)`` (int64).
    """
    n = check_positive_int(n, "n")
    seq_len = check_positive_int(seq_len, "seq_len", minimum=3)
    vocab = check_positive_int(vocab, "vocab", minimum=5)
    g = generator if generator is not None else torch.Generator().manual_seed(0)
    ids = torch.randint(2, vocab, (n, seq_len), generator=g)
    ids[:, 0] = CLS
    diff = (ids == TOKEN_A).sum(1) - (ids == TOKEN_B).sum(1)
    tie = diff == 0
    coin = torch.randint(0, 2, (n,), generator=g)
    # on a tie the last token decides; replacing it changes the difference by +-1 or +-2
    last = ids[:, -1]
    fix = torch.where(coin == 1, TOKEN_A, TOKEN_B)
    ids[:, -1] = torch.where(tie, fix, last)
    diff = (ids == TOKEN_A).sum(1) - (ids == TOKEN_B).sum(1)
    return ids, (diff > 0).long()
