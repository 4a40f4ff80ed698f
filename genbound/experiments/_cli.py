"""``genbound experiment``: run the book's experiments from the command line.

Each experiment package registers its own subcommand (its ``_cli`` module): ``sparse-majority``
(:mod:`genbound.experiments.sparse_majority`), ``predict-gap`` (:mod:`genbound.experiments.predict_gap`),
``certify`` (:mod:`genbound.experiments.certify`), ``certify-lm``
(:mod:`genbound.experiments.certify_lm`) and ``bert-grid`` (:mod:`genbound.experiments.bert_grid`); what their options share (ranges, lists, shards, the line an
interrupted run prints) is :mod:`genbound.experiments.runtime.cli`.

One concept: the ``experiment`` command, the list of its subcommands.
"""

from __future__ import annotations

from .bert_grid._cli import add_bert_grid
from .certify._cli import add_certify
from .certify_lm._cli import add_certify_lm
from .predict_gap._cli import add_predict_gap
from .sparse_majority._cli import add_sparse_majority

__all__ = ["add_parser"]


def add_parser(sub) -> None:
    """Register ``experiment`` and its subcommands, one per experiment package."""
    p = sub.add_parser(
        "experiment",
        help="run an experiment of the book",
        description="Run an experiment of the book.",
    )
    psub = p.add_subparsers(dest="experiment", metavar="EXPERIMENT")
    p.set_defaults(func=lambda args: (p.print_help(), 0)[1])
    add_sparse_majority(psub)
    add_predict_gap(psub)
    add_certify(psub)
    add_certify_lm(psub)
    add_bert_grid(psub)
