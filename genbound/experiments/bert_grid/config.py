"""The BERT grid's configuration: the token ids of the counting task, the grid's depths and widths, the
hyper-parameters every model shares (:class:`~genbound.experiments.bert_grid.GridConfig`) and the stages stored per
model.

>>> GridConfig().steps, DEPTHS, WIDTHS
(300, (2, 4, 6, 8), (64, 128, 256))
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PAD", "CLS", "TOKEN_A", "TOKEN_B", "DEPTHS", "WIDTHS", "GridConfig", "STAGES"]

#: Special token ids of the synthetic task (padding, the classification token, and the two counted tokens).
PAD, CLS, TOKEN_A, TOKEN_B = 0, 1, 2, 3
#: Default depths of the grid (numbers of layers ``L``).
DEPTHS = (2, 4, 6, 8)
#: Default widths of the grid (hidden widths ``N``, multiples of the head width 64).
WIDTHS = (64, 128, 256)
#: The two stages stored per (cell, seed), the trained model and its initialisation.
STAGES = ("trained", "init")


@dataclass(frozen=True)
class GridConfig:
    """Hyper-parameters shared by every model of the grid."""

    vocab: int = 24
    seq_len: int = 32
    head_dim: int = 64
    steps: int = 300
    batch: int = 32
    lr: float = 5e-4
    warmup: int = 30
    weight_decay: float = 0.01
    n_test: int = 1024
    seed: int = 0
