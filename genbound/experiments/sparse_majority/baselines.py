"""The one-relevant-bit baseline of a saved run, chosen on its **training** set (part of
:mod:`genbound.experiments.sparse_majority`).

A saved row's ``one_bit_acc`` is the best of the ``s`` relevant bits **on the test set itself**, a
maximum that is biased upward (:func:`expected_test_max_one_bit`). Every run's task and data are
seeded by ``(T, seed)`` (:func:`~genbound.experiments.sparse_majority.run_seq_len` draws the task
with seed ``sparse_majority_seed(T, seed, 0)``, then the training, validation and test sets in that order from
one generator seeded ``sparse_majority_seed(T, seed, 1)``), so the data regenerate exactly without training:
:func:`regenerate_data` does it, and :func:`one_bit_baselines` picks the relevant bit that agrees most
often with the label on the training set and scores that bit on the test set.
"""

from __future__ import annotations

import math


from ..._validate import check_positive_int
from .config import SparseMajorityConfig
from .data import regenerate_data

__all__ = [
    "regenerate_data",
    "one_bit_baselines",
    "one_bit_expectation",
    "expected_test_max_one_bit",
]


def one_bit_baselines(rows, config: SparseMajorityConfig | None = None):
    """For each row (``seq_len``, ``seed``) of ``rows`` (a DataFrame): ``train_bit`` (index into the
    relevant positions of the bit agreeing most often with the label on the training set, the first on
    ties), ``one_bit_train`` (that bit's accuracy on the test set: a baseline chosen without the test
    set), ``one_bit_test_max`` (the best relevant bit on the test set, as the saved ``one_bit_acc``)
    and ``one_bit_val`` (the bit chosen on the validation set, scored on the test set). A DataFrame
    aligned with ``rows``."""
    import pandas as pd

    out = []
    for T, sd in zip(rows["seq_len"], rows["seed"]):
        task, data = regenerate_data(int(T), int(sd), config)

        def agree(split):
            bits, y = data[split]
            return (bits[:, task.positions].long() == y.long()[:, None]).double().mean(0)

        test = agree("test")
        k_tr, k_va = int(agree("train").argmax()), int(agree("val").argmax())
        out.append(
            {
                "train_bit": k_tr,
                "one_bit_train": float(test[k_tr]),
                "one_bit_val": float(test[k_va]),
                "one_bit_test_max": float(test.max()),
            }
        )
    return pd.DataFrame(out, index=rows.index)


def one_bit_expectation(s: int = 9) -> float:
    """The accuracy of one fixed relevant bit on uniform bits, ``1/2 + C(s-1, (s-1)/2) / 2^s``: the bit
    decides the majority exactly when the other ``s - 1`` tie.

    >>> round(one_bit_expectation(9), 6)
    0.636719
    """
    s = check_positive_int(s, "s")
    return 0.5 + math.comb(s - 1, (s - 1) // 2) / 2**s


def expected_test_max_one_bit(
    n_test: int = 10_000, s: int = 9, *, reps: int = 2000, seed: int = 0
) -> dict:
    """Monte Carlo estimate of ``E max_i acc_i`` where ``acc_i`` is the test-set accuracy of relevant bit
    ``i`` on ``n_test`` uniform sequences: the expectation of a test-set-chosen one-bit baseline. Only
    the ``s`` relevant bits matter, so each replicate draws ``n_test x s`` bits. Returns ``{"mean",
    "se", "reps"}`` (``se``: Monte Carlo standard error)."""
    import numpy as np

    n_test, s, reps = (
        check_positive_int(v, nm) for v, nm in ((n_test, "n_test"), (s, "s"), (reps, "reps"))
    )
    rng = np.random.default_rng(seed)
    best = np.empty(reps)
    for r in range(reps):
        bits = rng.integers(0, 2, size=(n_test, s), dtype=np.int8)
        y = (2 * bits.sum(1) >= s).astype(np.int8)
        best[r] = (bits == y[:, None]).mean(0).max()
    return {
        "mean": float(best.mean()),
        "se": float(best.std(ddof=1) / math.sqrt(reps)),
        "reps": reps,
    }
