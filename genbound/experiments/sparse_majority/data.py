"""The sparse-majority data of one run: the task and its training, validation and test sets (part of
:mod:`genbound.experiments.sparse_majority`). The training run, the one-bit baselines and the certificates
of Part VI all draw them here, so a row's data regenerate exactly without training.
"""

from __future__ import annotations

import torch

from ..runtime.seeds import sparse_majority_seed
from .config import SparseMajorityConfig
from .task import make_task

__all__ = ["regenerate_data"]


def regenerate_data(seq_len: int, seed: int, config: SparseMajorityConfig | None = None):
    """The task and the ``{"train", "val", "test"}`` pairs ``(bits, labels)`` of run ``(seq_len, seed)``,
    drawn exactly as :func:`~genbound.experiments.sparse_majority.run_seq_len` draws them: the task
    seeded ``sparse_majority_seed(T, seed, 0)``, then the training, validation and test sets in that order
    from one generator seeded ``sparse_majority_seed(T, seed, 1)``. The one place the data are drawn."""
    cfg = (config or SparseMajorityConfig()).validated()
    task = make_task(int(seq_len), s=cfg.s, d=cfg.d, seed=sparse_majority_seed(seq_len, seed, 0))
    g = torch.Generator().manual_seed(sparse_majority_seed(seq_len, seed, 1))
    data = {
        split: task.sample(n, g)
        for split, n in (("train", cfg.n_train), ("val", cfg.n_val), ("test", cfg.n_test))
    }
    return task, data
