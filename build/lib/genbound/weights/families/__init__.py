"""Architecture families: where each of the six proxy roles lives in a checkpoint, one file per family.

A :class:`Family` names, relative to one layer's prefix, the tensors that play the six roles of the
proxies (``query``, ``key``, ``value``, ``attn_out``, ``ff_in``, ``ff_out``; :data:`ROLES`), how each
is stored (torch ``nn.Linear`` layout ``(out, in)`` or GPT-2's ``Conv1D`` layout ``(in, out)``, and
which block of a fused tensor it is), which ``config.json`` keys give the sizes, and the score scale
the model applies. Supported (one module each): :mod:`.bert` (BERT, RoBERTa, ELECTRA),
:mod:`.distilbert`, :mod:`.gpt2`. :mod:`.llama` is a :class:`Refusal`: recognised, and refused with
the reason. Adding a family is one small module here (it imports :class:`Family` and :class:`Role`
from :mod:`.base`, never from this package: imports go one way) plus one entry in :data:`FAMILIES`.

>>> [f.name for f in FAMILIES]
['bert', 'distilbert', 'gpt2']
>>> FAMILIES[2].anchor
'h.0.attn.c_attn.weight'
"""

from __future__ import annotations

from . import bert, distilbert, gpt2, llama
from .base import ROLES, Family, Refusal, Role, config_value

__all__ = [
    "ROLES",
    "Role",
    "Family",
    "Refusal",
    "FAMILIES",
    "REFUSALS",
    "family_by_name",
    "config_value",
]

#: The supported families, tried in this order.
FAMILIES: tuple[Family, ...] = (bert.FAMILY, distilbert.FAMILY, gpt2.FAMILY)
#: Families that are recognised and refused.
REFUSALS: tuple[Refusal, ...] = (llama.REFUSAL,)


def family_by_name(name: str) -> Family:
    """The supported family called ``name``."""
    for f in FAMILIES:
        if f.name == name:
            return f
    raise KeyError(name)
