"""What a checkpoint family is: :class:`Family` (where the six roles live), :class:`Role`, :class:`Refusal`.

The family modules (:mod:`genbound.weights.families.bert`, ...) import these from here, and
:mod:`genbound.weights.families` imports the family modules: imports go one way (no cycle).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Mapping

__all__ = ["ROLES", "Role", "Family", "Refusal", "config_value"]

#: The six weight roles of a layer, in the torch ``(out, in)`` orientation after loading.
ROLES = ("query", "key", "value", "attn_out", "ff_in", "ff_out")


@dataclass(frozen=True)
class Role:
    """Where one role's weight lives, relative to the layer prefix.

    ``conv1d=True``: stored ``(in, out)`` (GPT-2's ``Conv1D``, ``y = x W + b``), transposed on
    loading. ``part``/``parts``: the role is block ``part`` of ``parts`` equal blocks of the output
    axis of a fused tensor (GPT-2's ``c_attn`` holds query, key and value).
    """

    name: str
    conv1d: bool = False
    part: int = 0
    parts: int = 1

    def stored_shape(self, out: int, inp: int) -> tuple[int, int]:
        """The shape the stored tensor must have for an ``(out, in)`` role."""
        total = out * self.parts
        return (inp, total) if self.conv1d else (total, inp)


def _inverse_sqrt_head(config, layer: int, d_head: int) -> float:
    return 1.0 / math.sqrt(d_head)


@dataclass(frozen=True)
class Family:
    """One architecture family's names and conventions (see the module docstring).

    ``sizes`` maps ``hidden``, ``heads``, ``d_ff`` and ``layers`` to the family's ``config.json`` keys;
    ``default_d_ff`` gives ``d_ff`` from ``hidden`` when the config leaves it null (GPT-2's
    ``n_inner``). ``buffers`` are per-layer tensors that are not weights (GPT-2's causal mask).
    ``title`` names the architectures in words, ``members`` their ``model_type`` values.
    ``score_scale(config, layer, d_head)`` is the factor the model multiplies the scores
    ``x W_Q W_K^T y^T`` (row-vector maps) by (``attention_scale=True`` puts it into ``QK``). ``block`` says in words
    where the LayerNorms sit and whether attention is causal.
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

    @property
    def anchor(self) -> str:
        """The name (relative to the model prefix) whose presence identifies the family."""
        return self.layer.format(i=0) + self.roles["query"].name

    def layer_prefix(self, prefix: str, i: int) -> str:
        return prefix + self.layer.format(i=i)

    def tensor_name(self, prefix: str, i: int, role: str) -> str:
        return self.layer_prefix(prefix, i) + self.roles[role].name


@dataclass(frozen=True)
class Refusal:
    """A family genbound recognises and refuses, with the reason (said in the error)."""

    name: str
    anchor: str
    reason: str


def config_value(config, key: str):
    """``config[key]`` for a dict, ``getattr(config, key)`` for a config object; ``None`` when absent."""
    if isinstance(config, Mapping):
        return config.get(key)
    return getattr(config, key, None)
