"""Part I's claims, by their old address: they live in one module per chapter --
:mod:`genbound.claims.part1_rademacher` (:ref:`ch-rademacher`), :mod:`genbound.claims.part1_covering`
(:ref:`ch-covering`), :mod:`genbound.claims.part1_linear_classes` (:ref:`ch-linear-classes`),
:mod:`genbound.claims.part1_softmax_attention` (:ref:`ch-softmax-attention`), with the two-sided equality checks
of their published right-hand sides in :mod:`genbound.claims.part1_equalities` and what they share in
``genbound.claims._part1``.

This module re-exports every name of those modules (the settings the chapters glue, ``toolkit.M_MAX``,
``toolkit.GEN_DELTA``, and the helpers they call, ``toolkit.maurey_law_table``, ...), so that
``from genbound.claims import toolkit`` keeps working. Mutants patch the defining module, not this one.

>>> from genbound.claims import toolkit, part1_rademacher
>>> toolkit.GEN_DELTA == part1_rademacher.GEN_DELTA and toolkit.generalization_quantiles is part1_rademacher.generalization_quantiles
True
"""

from __future__ import annotations

from . import _part1, part1_covering, part1_equalities, part1_linear_classes, part1_rademacher, part1_softmax_attention

_MODULES = (_part1, part1_rademacher, part1_covering, part1_linear_classes, part1_softmax_attention, part1_equalities)

for _mod in _MODULES:
    globals().update({k: v for k, v in vars(_mod).items()
                      if not (k.startswith("__") and k.endswith("__")) and k not in ("_THIS", "annotations")})
del _mod
