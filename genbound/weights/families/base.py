"""What a checkpoint family is: :class:`Family` (where the roles live), :class:`Role`, :class:`Refusal`.

The family modules (:mod:`genbound.weights.families.bert`, ...) import these from here, and
:mod:`genbound.weights.families` imports the family modules: imports go one way (no cycle).

A family says, per layer, where each weight role lives (:data:`ROLES`: the attention roles, the
feed-forward roles and, for gated or mixture-of-experts blocks, :data:`GATED_ROLES` and
:data:`ROUTER_ROLE`), how a fused tensor is split (``LAYOUTS``), which ``config.json`` keys give
the sizes, and what in its block the papers' bound does not describe (:meth:`Family.coverage`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

__all__ = [
    "ROLES",
    "GATED_ROLES",
    "ROUTER_ROLE",
    "LAYOUTS",
    "ROPE_TYPES",
    "Role",
    "Family",
    "Refusal",
    "Coverage",
    "config_value",
    "fused_rows",
]

#: The six weight roles of a layer every family has, in the torch ``(out, in)`` orientation.
ROLES = ("query", "key", "value", "attn_out", "ff_in", "ff_out")
#: The extra role of a gated feed-forward block: ``ff_gate`` (``ff_in`` is then the "up" branch).
GATED_ROLES = ("ff_gate",)
#: The router of a mixture-of-experts block (``E x N``), read once per layer.
ROUTER_ROLE = "router"

#: How a fused tensor's output axis is split (see :func:`fused_rows`).
LAYOUTS = {
    None: "the whole tensor is the role's weight",
    "qkv": "query, key, value concatenated: [H*dh | KV*dh | KV*dh] (GPT-2, Phi-3, Falcon multi-query)",
    "qkv_heads": "interleaved per head: [H, 3, dh] (GPT-NeoX, Falcon without multi-query)",
    "qkv_groups": "grouped per key/value head: [KV, H/KV + 2, dh] (Falcon's new decoder architecture)",
    "gate_up": "gate and up concatenated: [F | F] (Phi-3)",
}

#: Rotary scaling types genbound knows (``rope_type`` / ``type`` of ``rope_scaling`` or
#: ``rope_parameters``); none changes a weight matrix, each changes the rotation angles only.
ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "longrope", "llama3", "su", "proportional")


def fused_rows(layout: str | None, part: int, s: Mapping[str, int]):
    """``(total_rows, rows)``: the stored tensor's output size and the rows (a ``slice`` or a list of
    indices, in the model's head order) that are block ``part`` of ``layout``, for sizes ``s`` with
    ``H``, ``KV``, ``dh`` and ``F`` (``part``: 0 query, 1 key, 2 value; gate 0, up 1).

    >>> fused_rows("qkv", 1, {"H": 4, "KV": 2, "dh": 3, "F": 5})
    (24, slice(12, 18, None))
    >>> fused_rows("qkv_heads", 1, {"H": 2, "KV": 2, "dh": 2, "F": 5})
    (12, [2, 3, 8, 9])
    >>> fused_rows("qkv_groups", 0, {"H": 4, "KV": 2, "dh": 1, "F": 5})
    (8, [0, 1, 4, 5])
    """
    H, KV, dh, F = s["H"], s["KV"], s["dh"], s["F"]
    if layout == "qkv":
        sizes = (H * dh, KV * dh, KV * dh)
        start = sum(sizes[:part])
        return sum(sizes), slice(start, start + sizes[part])
    if layout == "qkv_heads":
        return 3 * H * dh, [(h * 3 + part) * dh + j for h in range(H) for j in range(dh)]
    if layout == "qkv_groups":
        rep = H // KV
        width = (rep + 2) * dh
        if part == 0:
            rows = [
                g * width + r * dh + j for g in range(KV) for r in range(rep) for j in range(dh)
            ]
        else:
            rows = [g * width + (rep + part - 1) * dh + j for g in range(KV) for j in range(dh)]
        return KV * width, rows
    if layout == "gate_up":
        return 2 * F, slice(part * F, (part + 1) * F)
    raise ValueError(f"unknown layout {layout!r}")  # a family-definition bug, not user input


@dataclass(frozen=True)
class Role:
    """Where one role's weight lives, relative to the layer prefix.

    ``conv1d=True``: stored ``(in, out)`` (GPT-2's ``Conv1D``, ``y = x W + b``), transposed on
    loading. ``layout``/``part``: the role is block ``part`` of a fused tensor split as ``layout``
    (``LAYOUTS``; a callable of the config for families whose layout depends on it, as Falcon's).
    A name holding ``{e}`` is one tensor per expert; ``stacked=True`` is one tensor whose first axis
    is the expert (transformers 5's in-memory ``experts.gate_up_proj``, ``(E, out, in)``).
    """

    name: str
    conv1d: bool = False
    part: int = 0
    layout: str | None | Callable = None
    stacked: bool = False

    @property
    def per_expert(self) -> bool:
        return self.stacked or "{e}" in self.name

    def layout_for(self, config) -> str | None:
        return self.layout(config) if callable(self.layout) else self.layout

    def stored_shape(self, out: int, inp: int, total: int | None = None) -> tuple[int, int]:
        """The shape the stored tensor must have for an ``(out, in)`` role (``total``: a fused
        tensor's whole output size)."""
        total = out if total is None else total
        return (inp, total) if self.conv1d else (total, inp)


@dataclass(frozen=True)
class Coverage:
    """Whether the papers' bound describes a matrix kind of this family, and what to say about it."""

    covered: bool
    note: str = ""


def _inverse_sqrt_head(config, layer: int, d_head: int) -> float:
    return 1.0 / math.sqrt(d_head)


def _never(config) -> bool:
    return False


GQA_NOTE = (
    "grouped-query attention: {KV} key/value heads for {H} query heads; query head h uses "
    "key/value head h // {rep}, and each head's map is formed with its shared head (the bound "
    "treats the {H} maps as separate: the sharing is not exploited)"
)
ROTARY_NOTE = (
    "rotary position embeddings: the score of positions s, t is x_s W_Q R_(t-s) W_K^T x_t^T, "
    "one bilinear form per relative offset; the matrix reported is the offset-0 product "
    "W_Q W_K^T, and the papers' bound, which has one fixed QK per head, does not cover it"
)
QK_NORM_NOTE = (
    "an RMSNorm of each head's queries and keys (q_norm, k_norm) sits between W_Q and W_K^T, so "
    "the scores are not the bilinear form x W_Q W_K^T y^T; not covered"
)
GATED_NOTE = (
    "gated feed-forward block (act(x W_gate) * (x W_up)) W_down, three matrices: {role}; the "
    "elementwise product of two branches is Lipschitz only on bounded inputs, and the papers' "
    "block act(x M_in) M_out does not describe it; not covered"
)
MOE_NOTE = (
    "mixture of experts: one of {E} experts (column expert; top-{k} routing); the block's output is the sum of "
    "the chosen experts' outputs, each multiplied by its softmax router weight (a product of the "
    "router's output with the expert's), which the papers' bound does not describe; not covered"
)
ROUTER_NOTE = (
    "the router of a mixture-of-experts block (E x N scores, softmax, top-{k}); it multiplies each "
    "expert's output, so it enters the block as a product, not as a matrix of the papers' bound"
)


@dataclass(frozen=True)
class Family:
    """One architecture family's names and conventions (see the module docstring).

    ``sizes`` maps ``hidden``, ``heads``, ``d_ff`` and ``layers`` (and, where the family has them,
    ``kv_heads``, ``head_dim``, ``experts``, ``experts_per_token``) to ``config.json`` keys;
    ``default_d_ff`` gives ``d_ff`` from ``hidden`` when the config leaves it null (GPT-2's
    ``n_inner``); ``kv_heads_of(config, heads)`` overrides ``kv_heads`` (Falcon's flags).
    ``buffers`` are per-layer tensors that are not weights (GPT-2's causal mask). ``title`` names
    the architectures in words, ``members`` their ``model_type`` values. ``score_scale(config,
    layer, d_head)`` is the factor the model multiplies the scores ``x W_Q W_K^T y^T`` by
    (``attention_scale=True`` puts it into ``QK``). ``block`` says in words where the norms sit and
    whether attention is causal. ``ffn`` is ``"plain"`` (``act(x M_in) M_out``), ``"gated"``
    (roles ``ff_gate``, ``ff_in`` = up, ``ff_out`` = down) or ``"moe"`` (gated experts named with
    ``{e}``, and a ``router``). ``rotary(config)``: whether queries and keys are rotated by
    position; ``qk_notes(config)``: further reasons, in words, why the scores are not the bilinear
    form ``x W_Q W_K^T y^T`` (Qwen3's per-head query/key norms, Falcon's ALiBi).
    ``embeddings`` and ``heads`` are ``(kind, name)`` pairs of the matrices outside the blocks that
    :func:`genbound.weights.extras.extra_spectra` reports as spectra only (no bound reads them):
    ``embeddings`` after the model prefix (``embed_tokens``, ``embed_positions``), ``heads`` after
    the prefix's parent, the task model (``lm_head``, ``classifier``).
    """

    name: str
    title: str
    members: tuple[str, ...]
    layer: str
    roles: Mapping[str, Role]
    sizes: Mapping[str, str]
    block: str
    default_d_ff: Callable[[int], int] | None = None
    buffers: tuple[str, ...] = ()
    score_scale: Callable = field(default=_inverse_sqrt_head)
    ffn: str = "plain"
    rotary: Callable = field(default=_never)
    qk_notes: Callable = field(default=lambda config: [])
    kv_heads_of: Callable | None = None
    embeddings: tuple[tuple[str, str], ...] = ()
    heads: tuple[tuple[str, str], ...] = ()

    @property
    def anchor(self) -> str:
        """The name (relative to the model prefix) whose presence identifies the family."""
        return self.layer.format(i=0) + self.roles["query"].name

    @property
    def matrix_roles(self) -> tuple[str, ...]:
        """The weight roles of one layer (per expert for the feed-forward roles of a MoE block)."""
        extra = GATED_ROLES if self.ffn in ("gated", "moe") else ()
        return ROLES + extra

    def layer_prefix(self, prefix: str, i: int) -> str:
        return prefix + self.layer.format(i=i)

    def tensor_name(self, prefix: str, i: int, role: str, expert: int | None = None) -> str:
        name = self.roles[role].name
        if "{e}" in name:
            name = name.format(e=expert)
        return self.layer_prefix(prefix, i) + name

    def coverage(self, config, sizes: Mapping[str, int]) -> dict[str, Coverage]:
        """Per matrix kind (``QK``, ``V``, ``M_in``, ``M_out``, and ``M_gate``/``router`` where the
        block has them): whether the papers' bound covers it, and the note the report prints."""
        H, KV = sizes["heads"], sizes["kv_heads"]
        gqa = GQA_NOTE.format(KV=KV, H=H, rep=H // KV) if KV != H else ""
        qk_reasons = []
        if self.rotary(config):
            qk_reasons.append(ROTARY_NOTE)
        qk_reasons += list(self.qk_notes(config))
        qk_note = "; ".join([r for r in (gqa, *qk_reasons) if r])
        out = {
            "QK": Coverage(not qk_reasons, qk_note),
            "V": Coverage(True, gqa),
        }
        if self.ffn == "plain":
            out["M_in"] = Coverage(True, "")
            out["M_out"] = Coverage(True, "")
            return out
        for kind, role in (("M_gate", "gate"), ("M_in", "up"), ("M_out", "down")):
            note = GATED_NOTE.format(role=f"this is W_{role}")
            if self.ffn == "moe":
                moe = MOE_NOTE.format(E=sizes["experts"], k=sizes["experts_per_token"])
                note = moe + "; " + note
            out[kind] = Coverage(False, note)
        if self.ffn == "moe":
            out["router"] = Coverage(False, ROUTER_NOTE.format(k=sizes["experts_per_token"]))
        return out


@dataclass(frozen=True)
class Refusal:
    """A family genbound recognises and refuses, with the reason (said in the error).

    ``members`` are the ``model_type`` values refused; ``anchor`` a parameter name that identifies it
    when the config has no ``model_type``.
    """

    name: str
    anchor: str
    reason: str
    members: tuple[str, ...] = ()


def config_value(config, key: str):
    """``config[key]`` for a dict, ``getattr(config, key)`` for a config object; ``None`` when absent."""
    if isinstance(config, Mapping):
        return config.get(key)
    return getattr(config, key, None)


# ---- Llama's parameter names, shared by Mistral, Qwen2, Qwen3, Gemma, Gemma 2, Phi-3, Mixtral

LLAMA_ROLES = {
    "query": Role("self_attn.q_proj.weight"),
    "key": Role("self_attn.k_proj.weight"),
    "value": Role("self_attn.v_proj.weight"),
    "attn_out": Role("self_attn.o_proj.weight"),
    "ff_gate": Role("mlp.gate_proj.weight"),
    "ff_in": Role("mlp.up_proj.weight"),
    "ff_out": Role("mlp.down_proj.weight"),
}

LLAMA_SIZES = {
    "hidden": "hidden_size",
    "heads": "num_attention_heads",
    "kv_heads": "num_key_value_heads",
    "head_dim": "head_dim",
    "d_ff": "intermediate_size",
    "layers": "num_hidden_layers",
}

LLAMA_BLOCK = (
    "pre-RMSNorm causal decoder (RMSNorm before attention and feed-forward), rotary position "
    "embeddings, gated feed-forward block"
)


def _rotary(config) -> bool:
    return True


def llama_like(name: str, title: str, members: tuple[str, ...], **kw) -> Family:
    """A family with Llama's parameter names (``kw`` overrides ``block``, ``score_scale``, ...)."""
    args: dict[str, Any] = dict(
        name=name,
        title=title,
        members=members,
        layer="layers.{i}.",
        roles=LLAMA_ROLES,
        sizes=LLAMA_SIZES,
        block=LLAMA_BLOCK,
        ffn="gated",
        rotary=_rotary,
        embeddings=(("embed_tokens", "embed_tokens.weight"),),
        heads=(("lm_head", "lm_head.weight"),),
    )
    args.update(kw)
    return Family(**args)
