"""The BERT grid's models: the ``transformers.BertConfig`` of a grid point (:func:`bert_config`) and
its seeded initialisation (:func:`~genbound.experiments.bert_grid.initial_model`), the starting point of every trained
model.

``transformers`` is imported inside the functions (a heavy dependency the package's import does not need).
"""

from __future__ import annotations

import torch

from ..._validate import check_positive_int
from ...errors import ParameterError
from ..runtime.seeds import bert_point_seed
from .config import GridConfig

__all__ = ["bert_config", "initial_model", "accuracy"]


def bert_config(L: int, N: int, cfg: GridConfig = GridConfig()):
    """The ``transformers.BertConfig`` of the grid point ``(L, N)``: ``N / head_dim`` heads, FFN ``4 N``.

    Dropout is off (deterministic, brief training); everything else is BERT's default (GELU, post-LN).
    """
    from transformers import BertConfig

    L = check_positive_int(L, "L")
    N = check_positive_int(N, "N")
    if N % cfg.head_dim:
        raise ParameterError(f"N = {N} must be a multiple of head_dim = {cfg.head_dim}")
    return BertConfig(
        vocab_size=cfg.vocab,
        hidden_size=N,
        num_hidden_layers=L,
        num_attention_heads=N // cfg.head_dim,
        intermediate_size=4 * N,
        max_position_embeddings=cfg.seq_len,
        type_vocab_size=1,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        num_labels=2,
    )


def initial_model(L: int, N: int, cfg: GridConfig = GridConfig()):
    """The randomly initialised model that :func:`~genbound.experiments.bert_grid.train_bert` starts from,
    and its torch seed.

    ``torch.manual_seed(bert_point_seed(L, N, cfg.seed))`` then ``BertForSequenceClassification(...)``, in eval
    mode (no dropout anyway). The same call in ``train_bert`` makes the initialisation column of the
    grid exactly the starting point of each trained model (on the same torch version).
    """
    from transformers import BertForSequenceClassification

    conf = bert_config(L, N, cfg)
    seed = bert_point_seed(L, N, cfg.seed)
    torch.manual_seed(seed)
    model = BertForSequenceClassification(conf).float()
    model.eval()
    return model, seed


def accuracy(model, ids, y, batch: int = 256) -> float:
    """The fraction of ``(ids, y)`` a classifier gets right (evaluated in batches of ``batch``, no
    gradients; the model is left in training mode)."""
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(y), batch):
            logits = model(input_ids=ids[i : i + batch]).logits
            correct += int((logits.argmax(-1) == y[i : i + batch]).sum())
    model.train()
    return correct / len(y)
