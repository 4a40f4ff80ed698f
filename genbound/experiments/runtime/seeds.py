"""Seeds: one derivation for new code (:func:`derive_seed`) and, by name, the formulas that the saved
results were drawn with (a saved row reproduces only through the formula that drew it, so these stay as
they are).

* :func:`sparse_majority_seed`: run ``(T, seed)`` of the sparse-majority sweep, one ``salt`` per use
  (0 the task, 1 the data, 2 the initialisation, 3 the shuffling).
* :func:`family_data_seed`, :func:`init_seed`, :func:`flip_seed`, :func:`batch_seed`: the Part V family's
  data, initialisation, input corruption and mini-batches of seed index ``seed`` on ``task`` (functions
  of the two only, so models of one seed index are coupled across settings).
* :func:`bert_point_seed`: grid point ``(L, N)`` of the BERT grid.

One concept: how every experiment turns its indices into generator seeds.

>>> derive_seed("certify-lm", "xs", 0) == derive_seed("certify-lm", "xs", 0)
True
>>> derive_seed("certify-lm", "xs", 0) != derive_seed("certify-lm", "xs", 1)
True
"""

from __future__ import annotations

import hashlib

__all__ = [
    "derive_seed",
    "sparse_majority_seed",
    "family_data_seed",
    "init_seed",
    "flip_seed",
    "batch_seed",
    "bert_point_seed",
]

#: Seeds are kept below ``2**63 - 1`` (torch's and numpy's generators take them).
SEED_MODULUS = 2**63 - 1


def derive_seed(*parts) -> int:
    """A seed in ``[0, 2**63 - 1)`` from the experiment's name and indices (``str`` or ``int`` parts):
    the first 8 bytes of the BLAKE2b hash of their ``repr``, so that it is the same on every machine and
    Python (no ``hash()`` randomisation) and two different tuples of parts give unrelated seeds."""
    text = "\x1f".join(repr(p) for p in parts).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big") % SEED_MODULUS


def sparse_majority_seed(seq_len: int, seed: int, salt: int) -> int:
    """The sparse-majority sweep's seed of run ``(seq_len, seed)`` for use ``salt``:
    ``(seed * 1000003 + seq_len * 7919 + salt) mod (2**63 - 1)``.

    >>> sparse_majority_seed(16, 0, 1)
    126705
    """
    return (int(seed) * 1_000_003 + int(seq_len) * 7919 + salt) % SEED_MODULUS


def family_data_seed(task: str, seed: int) -> int:
    """The Part V family's data seed of seed index ``seed`` on ``task``."""
    return 7919 * int(seed) + (0 if task == "sparse-majority" else 104729)


def init_seed(task: str, seed: int) -> int:
    """The initialisation seed of every model of seed index ``seed`` on ``task``: a function of the two
    only, so that models of one seed index are coupled across all settings.

    >>> init_seed("digits", 3) == init_seed("digits", 3), init_seed("digits", 3) == init_seed("digits", 4)
    (True, False)
    """
    return 1_000_003 * int(seed) + (17 if task == "sparse-majority" else 29)


def flip_seed(task: str, seed: int) -> int:
    """The seed of the input-corruption draws of every model of seed index ``seed`` on ``task`` (coupled
    like :func:`init_seed`)."""
    return init_seed(task, seed) + 11


def batch_seed(task: str, seed: int) -> int:
    """The seed of the mini-batch draws of every model of seed index ``seed`` on ``task`` (coupled like
    :func:`init_seed`)."""
    return init_seed(task, seed) + 5


def bert_point_seed(L: int, N: int, seed: int) -> int:
    """The torch seed of BERT-grid point ``(L, N)`` for run seed ``seed``: ``seed * 1000003 + 1009 L + N``.

    >>> bert_point_seed(2, 64, 0), bert_point_seed(2, 64, 1)
    (2082, 1002085)
    """
    return seed * 1_000_003 + 1009 * L + N
