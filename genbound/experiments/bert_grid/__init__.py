"""A grid of small BERT-style models that genbound trains itself. Book: :ref:`ch-sa-trained`.

The BERT Miniatures used by {cite:t}`sakai2026spectrum` are hub-only, so the depth and width scaling of
the two proxies cannot be reproduced offline on them. This package trains its own grid instead: randomly
initialised ``transformers`` BERT encoders (``BertForSequenceClassification``) with ``L`` layers, hidden
width ``N``, heads of width 64 (so ``N / 64`` heads) and an intermediate width ``4 N``, on a seeded
synthetic counting task (:func:`count_task`). Training is brief (AdamW, float32, CPU).

Modules by concept: ``config`` (:class:`GridConfig`, the depths and widths, the token ids),
``data`` (the counting task), ``model`` (the ``BertConfig`` of a grid point and its initialisation),
``train`` (one model, the grid, the retry rule), ``files`` (the spectra file) and ``_cli`` (the
subcommand). Two steps, so that the slow part runs once and the book only reads a small file:

1. ``genbound experiment bert-grid train``: train every ``(L, N, seed)`` model and save it
   (``save_pretrained``) under a work folder, skipping models already saved there (resumable per cell
   and seed; ``--budget-s`` stops between models so that a long run goes in chunks) (:func:`train_grid`);
2. ``genbound experiment bert-grid extract``: read every saved model with
   :func:`genbound.weights.load_weights` and store **only** what the proxies need (the exact nonzero
   singular values and the ``(2,1)`` norm of every matrix, as :class:`genbound.weights.Spectra` arrays,
   the training metrics and the machine record) into a small compressed ``.npz`` file
   (:func:`save_spectra`, :data:`~genbound.experiments.bert_grid.files.DEFAULT_SPECTRA_FILE`), together with the same
   arrays at each model's
   initialisation (:func:`initial_model`). ``--merge`` carries over rows of an earlier file whose
   weights were not kept. The chapter recomputes every proxy from that file (:func:`load_spectra`
   returns ``Spectra`` objects, which :func:`genbound.bounds.sakai_imaizumi.spectral_adaptive_bound` and
   ``edelman_proxy`` accept directly).

``python -m genbound.experiments.bert_grid train|extract`` runs the same two commands. Commands used
for the stored file: ``genbound/data/bert_grid_spectra.md``.

>>> import torch
>>> ids, y = count_task(4, seq_len=8, generator=torch.Generator().manual_seed(0))
>>> ids.shape, y.shape, bool((ids[:, 0] == CLS).all())
(torch.Size([4, 8]), torch.Size([4]), True)
>>> bool(((y == 1) == ((ids == TOKEN_A).sum(1) > (ids == TOKEN_B).sum(1))).all())
True
"""

from __future__ import annotations

from ..runtime.seeds import bert_point_seed
from .config import CLS, DEPTHS, PAD, STAGES, TOKEN_A, TOKEN_B, WIDTHS, GridConfig
from .data import count_task
from .files import (
    DEFAULT_SPECTRA_FILE,
    load_spectra,
    model_spectra,
    point_key,
    save_spectra,
    spectra_from_arrays,
)
from .model import bert_config, initial_model
from .train import MAX_RETRIES, MIN_TEST_ACC, train_bert, train_grid

__all__ = [
    "GridConfig",
    "DEPTHS",
    "WIDTHS",
    "count_task",
    "initial_model",
    "train_bert",
    "train_grid",
    "save_spectra",
    "load_spectra",
    "DEFAULT_SPECTRA_FILE",
]
