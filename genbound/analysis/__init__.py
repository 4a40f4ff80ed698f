"""The analysis of one model's weights, the app floor's room: ``genbound.analyze(model)`` and the
``genbound analyze`` command.

Book: :ref:`ch-sakai-trained`. Modules, from the bottom up:

* :mod:`~genbound.analysis.identity`: which bytes a report was computed from (the ``checkpoint``
  record: files, sizes, SHA-256, or a digest of tensors in memory);
* :mod:`~genbound.analysis.report`: what a report says (console text, ``--json`` keys, per-matrix
  rows, the verdict line);
* :mod:`~genbound.analysis.api`: :func:`~genbound.analysis.api.analyze` (a model object, a state dict
  with its config, or a folder) and its results, :class:`~genbound.analysis.api.Analysis` or, for a
  model the papers' bound does not cover, :class:`~genbound.analysis.api.SpectraOnly`;
* :mod:`~genbound.analysis.compare`: two checkpoints of one architecture, matrix by matrix;
* :mod:`~genbound.analysis.figures`: the ``--plot`` figure;
* :mod:`~genbound.analysis.cli`: the ``genbound analyze`` subcommand (imported by the command line
  only, not by this package).

Importing the package loads neither torch nor matplotlib: they are imported where a model is read or
a figure drawn.

>>> import genbound
>>> from genbound.analysis import analyze
>>> genbound.analyze is analyze
True
"""

from __future__ import annotations

from .api import Analysis, NoBoundError, SpectraOnly, analyze, weights_of
from .compare import COMPARED, check_same_architecture, compare_checkpoints, compare_table
from .report import (
    DEFINED_IN,
    JSON_FIELDS,
    KINDS,
    MATRIX_FIELDS,
    SPECTRA_FIELDS,
    matrix_table,
    verdict,
)

#: The API page documents each module of this package (api, report, compare, figures, cli), not the
#: re-exports below (genbound.claims links a statement to the module that defines it).
__api_by_module__ = True

__all__ = [
    "analyze",
    "Analysis",
    "SpectraOnly",
    "NoBoundError",
    "weights_of",
    "verdict",
    "matrix_table",
    "compare_checkpoints",
    "compare_table",
    "check_same_architecture",
    "KINDS",
    "JSON_FIELDS",
    "MATRIX_FIELDS",
    "SPECTRA_FIELDS",
    "DEFINED_IN",
    "COMPARED",
]
