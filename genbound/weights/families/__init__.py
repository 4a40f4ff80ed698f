"""Architecture families: where each weight role lives in a checkpoint, one file per family.

A :class:`Family` names, relative to one layer's prefix, the tensors that play the roles of the
proxies (``query``, ``key``, ``value``, ``attn_out``, ``ff_in``, ``ff_out``; :data:`ROLES`; plus
``ff_gate`` of a gated block and the ``router`` of a mixture of experts), how each is stored (torch
``nn.Linear`` layout ``(out, in)`` or GPT-2's ``Conv1D`` layout ``(in, out)``, and which rows of a
fused tensor it is), which ``config.json`` keys give the sizes, the score scale the model applies,
and what in its block the papers' bound does not cover (:meth:`Family.coverage`). One module each:
:mod:`.bert` (BERT, RoBERTa, ELECTRA), :mod:`.distilbert`, :mod:`.gpt2`, :mod:`.opt`, :mod:`.vit`,
:mod:`.llama`, :mod:`.mistral`, :mod:`.qwen2`, :mod:`.qwen3`, :mod:`.gemma`, :mod:`.gemma2`,
:mod:`.phi3`, :mod:`.mixtral`, :mod:`.gpt_neox`, :mod:`.falcon`, :mod:`.gptj`, :mod:`.bloom`,
:mod:`.deberta_v2`.
:mod:`.encoder_decoder` holds :class:`Refusal` s: recognised, and refused with the reason. Adding a
family is one small module here (it imports from :mod:`.base`, never from this package: imports go
one way) plus one entry in :data:`FAMILIES`; the README's family table is checked against
:func:`family_table_markdown` by the tests.

>>> [f.name for f in FAMILIES][:3]
['bert', 'distilbert', 'gpt2']
>>> FAMILIES[2].anchor
'h.0.attn.c_attn.weight'
>>> family_of_model_type("mistral").name, family_of_model_type("t5") is None
('mistral', True)
"""

from __future__ import annotations

from . import (
    bert,
    bloom,
    deberta_v2,
    distilbert,
    encoder_decoder,
    falcon,
    gemma,
    gemma2,
    gpt2,
    gpt_neox,
    gptj,
    llama,
    mistral,
    mixtral,
    opt,
    phi3,
    qwen2,
    qwen3,
    vit,
)
from .base import (
    GATED_ROLES,
    ROLES,
    ROPE_TYPES,
    ROUTER_ROLE,
    Coverage,
    Family,
    Refusal,
    Role,
    config_value,
    fused_rows,
)

__all__ = [
    "ROLES",
    "GATED_ROLES",
    "ROUTER_ROLE",
    "ROPE_TYPES",
    "Role",
    "Family",
    "Refusal",
    "Coverage",
    "FAMILIES",
    "REFUSALS",
    "family_by_name",
    "family_of_model_type",
    "family_table_markdown",
    "config_value",
    "fused_rows",
]

#: The supported families. Without a ``model_type`` in the config, the tensor names decide; names
#: shared by several families (Llama's by Mistral, Qwen2, ...) then need the ``model_type``.
FAMILIES: tuple[Family, ...] = (
    bert.FAMILY,
    distilbert.FAMILY,
    gpt2.FAMILY,
    opt.FAMILY,
    vit.FAMILY,
    vit.MODULE_FAMILY,
    llama.FAMILY,
    mistral.FAMILY,
    qwen2.FAMILY,
    qwen3.FAMILY,
    gemma.FAMILY,
    gemma2.FAMILY,
    phi3.FAMILY,
    mixtral.FAMILY,
    mixtral.MODULE_FAMILY,
    gpt_neox.FAMILY,
    falcon.FAMILY,
    gptj.FAMILY,
    bloom.FAMILY,
    deberta_v2.FAMILY,
)
#: Families that are recognised and refused.
REFUSALS: tuple[Refusal, ...] = (encoder_decoder.T5, encoder_decoder.BART)


def family_by_name(name: str) -> Family:
    """The supported family called ``name``."""
    for f in FAMILIES:
        if f.name == name:
            return f
    raise KeyError(name)


def family_of_model_type(model_type: str) -> Family | None:
    """The supported family whose ``members`` hold ``model_type`` (case-insensitive), else ``None``."""
    mt = model_type.lower()
    return next((f for f in FAMILIES if mt in f.members), None)


def _covered_in_words(f: Family) -> str:
    """What the report gives for ``f`` at its default config, from :meth:`Family.coverage`."""
    sizes = {"heads": 1, "kv_heads": 1, "experts": 2, "experts_per_token": 1}
    off = [k for k, c in f.coverage({}, sizes).items() if not c.covered]
    if not off:
        return "the bound and per-matrix spectra"
    return "per-matrix spectra, no bound (not covered: " + ", ".join(off) + ")"


def family_table_markdown() -> str:
    """The README's table of families (one row per :data:`FAMILIES` entry, then the refusals)."""
    rows = [
        "| family | `model_type` | what genbound gives |",
        "|---|---|---|",
    ]
    seen = set()
    for f in FAMILIES:
        if f.name in seen:  # a second name map of one family (in-memory module names)
            continue
        seen.add(f.name)
        mts = ", ".join(f"`{m}`" for m in f.members)
        rows.append(f"| {f.title} | {mts} | {_covered_in_words(f)} |")
    for r in REFUSALS:
        mts = ", ".join(f"`{m}`" for m in r.members)
        rows.append(
            f"| {r.name.upper()}-like encoder-decoders | {mts} | refused (cross-attention) |"
        )
    return "\n".join(rows)
