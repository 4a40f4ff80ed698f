"""Turning a checkpoint folder, a state dict or an ``nn.Module`` into :class:`TransformerWeights`.

One concept: reading a checkpoint's family, sizes and layers, and refusing every contradiction
between its config and its tensors before any weight is read.

The steps, the same for every source: find the family and the model prefix from the parameter names
(:func:`find_family`); count the layers; check that every layer has the six role tensors with the
shapes the config implies, floating-point, and **no other matrix** (a per-layer tensor with two or
more dimensions that the proxies do not consume, such as BERT's cross-attention or Longformer's global
projections, is an error naming it, so no number silently leaves part of a layer out); read the sizes
from the config as positive integers (:func:`config_sizes`). Tensors outside the layers (embeddings,
pooler, classifier and language-model heads, final LayerNorm) are not part of the proxies, as in the
authors' extraction; one-dimensional tensors in a layer (biases, LayerNorm gains) are not matrices of
the proxies either.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Mapping

import torch

from ..errors import ArchitectureError, CheckpointError, InputError, ParameterError, ShapeError
from ..errors import short_repr, shorten
from .families import (
    FAMILIES,
    REFUSALS,
    ROLES,
    ROPE_TYPES,
    Family,
    config_value,
    family_of_model_type,
    fused_rows,
)
from .files import (
    TensorInfo,
    config_bytes_bound,
    load_torch_state_dict,
    read_json,
    safetensors_header,
    sharded_bin,
    sharded_safetensors,
)
from .model import TransformerWeights, layer_ids
from .modules import merged_parameters, module_config, refuse_adapter_folder, refuse_adapter_names
from .modules import unwrap_holders
from .stores import DictStore, SafetensorsStore, check_real_tensor

__all__ = [
    "load_weights",
    "weights_from_state_dict",
    "bert_weights_from_state_dict",
    "bert_tensor_names",
    "find_family",
    "config_sizes",
]


def bert_tensor_names(layer: int, prefix: str = "") -> dict[str, str]:
    """Full parameter names of one BERT layer's six weight matrices, by role.

    >>> bert_tensor_names(2, "bert.")["ff_in"]
    'bert.encoder.layer.2.intermediate.dense.weight'
    """
    fam = FAMILIES[0]
    return {role: fam.tensor_name(prefix, layer, role) for role in ROLES}


def _shown(names, k: int = 4) -> str:
    names = list(names)
    return (", ".join(map(repr, names[:k])) or "no parameters") + (" ..." if len(names) > k else "")


def _supported() -> str:
    return "; ".join(f"{f.anchor!r} ({f.title})" for f in FAMILIES)


def _mapped_model_types() -> str:
    return ", ".join(dict.fromkeys(m for f in FAMILIES for m in f.members))


def _anchor_hits(fam, names: list[str]) -> list[str]:
    """The model prefixes before ``fam``'s anchor among ``names``."""
    a = fam.anchor
    return sorted(
        {
            n[: -len(a)]
            for n in names
            if n.endswith(a) and (len(n) == len(a) or n[-len(a) - 1] == ".")
        }
    )


def _has_layer0(fam: Family, prefix: str, names: set) -> bool:
    """Whether every role's tensor of layer 0 (expert 0) is among ``names``."""
    return all(fam.tensor_name(prefix, 0, r, 0) in names for r in fam.roles)


def find_prefix_and_layer0(fam: Family, names) -> bool:
    """Whether ``names`` hold ``fam``'s anchor after a single prefix, and all its layer-0 roles."""
    hits = _anchor_hits(fam, list(names))
    return len(hits) == 1 and _has_layer0(fam, hits[0], set(names))


def _model_type(config, where: str) -> str | None:
    mt = config_value(config, "model_type") if config is not None else None
    if mt is None or mt == "":
        return None
    if not isinstance(mt, str):
        raise ArchitectureError(f"{where}: 'model_type' must be a string, got {short_repr(mt)}")
    return shorten(mt)  # cut when longer than any architecture's name, as errors quote it


def find_family(
    names, where: str, *, only: Family | None = None, config=None, module: bool = False
) -> tuple[Family, str]:
    """The family of a checkpoint, and the model prefix before its parameter names.

    The tensor names give the candidates (each family's anchor parameter, after any prefix); the
    config's ``model_type``, when it has one, chooses among them (Llama's names are shared by
    Mistral, Qwen2, Qwen3, Gemma, Gemma 2 and, after a ``decoder.`` prefix, OPT). A refused family
    (encoder-decoders) raises with its reason; a ``model_type`` nobody mapped raises naming it;
    names shared by several families and no ``model_type`` raise naming the candidates. ``only``
    restricts the search to one family; ``module=True`` words the hints for an ``nn.Module``.

    >>> find_family(["transformer.h.0.attn.c_attn.weight"], "x")[0].name, find_family(["transformer.h.0.attn.c_attn.weight"], "x")[1]
    ('gpt2', 'transformer.')
    >>> find_family(["model.layers.0.self_attn.q_proj.weight"], "x", config={"model_type": "qwen2"})[0].name
    'qwen2'
    """
    names = list(names)
    refuse_adapter_names(names, where)
    mt = _model_type(config, f"the config of {where}")
    fams = [only] if only is not None else FAMILIES
    if mt is not None and only is None:
        for ref in REFUSALS:
            if mt.lower() in ref.members and any(n.endswith(ref.anchor) for n in names):
                raise ArchitectureError(f"{where} is " + ref.reason.format(mt=mt))
    cands = []
    for fam in fams:
        hits = _anchor_hits(fam, names)
        if len(hits) > 1 and mt is not None and mt.lower() not in fam.members:
            hits = hits[:1]  # not this family anyway: the model_type decides below
        if len(hits) > 1:
            raise ArchitectureError(
                f"{where} holds several {fam.name} models (prefixes {hits}); pass one"
            )
        if hits:
            cands.append((fam, hits[0]))
    if cands:
        if mt is None:
            if len(cands) == 1 or only is not None:
                return cands[0]
            fix = (
                "pass the Hugging Face model itself (it has a .config), or weights_from_state_dict"
                "(model.state_dict(), config) with a config naming its model_type"
                if module
                else "add 'model_type' to the config"
            )
            raise ArchitectureError(
                f"{where}: its parameter names are shared by the "
                + ", ".join(dict.fromkeys(f.name for f, _ in cands))
                + f" families and {'it has no config with a' if module else 'its config has no'}"
                f" model_type to choose among them; {fix}"
            )
        mine = [(f, p) for f, p in cands if mt.lower() in f.members]
        if mine:  # several name maps of one architecture (saved files, in-memory modules)
            have = set(names)
            full = [(f, p) for f, p in mine if _has_layer0(f, p, have)]
            return (full or mine)[0]
        fam = cands[0][0]
        if family_of_model_type(mt) is None:
            return cands[0]  # check_model_type names it, after the layers' checks (which say more)
        raise ArchitectureError(
            f"{where}: model_type is {mt!r}, but the tensor names are those of the {fam.name} "
            f"family ({fam.title}; model_type one of {', '.join(fam.members)}); the config and the "
            f"weights disagree"
        )
    if mt is not None and only is None:
        for ref in REFUSALS:
            if mt.lower() in ref.members:
                raise ArchitectureError(f"{where} is " + ref.reason.format(mt=mt))
        fam = family_of_model_type(mt)
        if fam is None:
            raise ArchitectureError(
                f"{where}: model_type {mt!r} is not an architecture genbound maps (mapped: "
                f"{_mapped_model_types()}); see genbound.weights.families to add one"
            )
        raise ArchitectureError(
            f"{where}: model_type is {mt!r} but no parameter is named like {fam.anchor!r} "
            f"(after a prefix), as a {fam.title} layer's are"
        )
    if only is None:
        for ref in REFUSALS:
            if any(n.endswith(ref.anchor) for n in names):
                raise ArchitectureError(f"{where} is " + ref.reason.format(mt=ref.name))
    what = f"a {only.title} model" if only is not None else "a model of a supported family"
    raise ArchitectureError(
        f"{where} is not {what}: found {_shown(names)}; expected parameters like "
        + (f"{only.anchor!r}" if only is not None else _supported())
        + " (optionally after a prefix such as 'bert.')"
    )


def _positive_int(value, key: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ArchitectureError(f"{where}: {key!r} must be a positive integer, got {value!r}")
    return value


#: Sizes a config may leave out: ``layers`` (counted), ``kv_heads`` (heads), ``head_dim`` (N / H).
_OPTIONAL_SIZES = ("layers", "kv_heads", "head_dim")


def config_sizes(config, family: Family, where: str) -> dict[str, int | None]:
    """The family's sizes from a config (``hidden``, ``heads``, ``d_ff``, ``layers`` and, where the
    family has them, ``kv_heads``, ``head_dim``, ``experts``, ``experts_per_token``), each a positive
    integer; ``layers`` may be absent (``None``), ``kv_heads`` defaults to ``heads``, ``head_dim`` to
    ``hidden / heads``. Anything else (``2.5``, ``0``, ``-1``, ``"12"``, ``true``), heads that do
    not divide the width (without ``head_dim``) or key/value heads that do not divide the heads
    raise naming the key and the value.

    >>> from genbound.weights.families import FAMILIES
    >>> config_sizes({"n_embd": 8, "n_head": 2, "n_inner": None, "n_layer": 3}, FAMILIES[2], "c")
    {'hidden': 8, 'heads': 2, 'd_ff': 32, 'layers': 3, 'head_dim': 4, 'kv_heads': 2}
    """
    if config is None or isinstance(config, (str, bytes, int, float, list, tuple)):
        raise ArchitectureError(
            f"{where}: the config must be a mapping or a config object, got {type(config).__name__}"
        )
    out: dict[str, int | None] = {}
    for size, key in family.sizes.items():
        val = config_value(config, key)
        if val is None:
            if size in _OPTIONAL_SIZES:
                out[size] = None
                continue
            if size == "d_ff" and family.default_d_ff is not None:
                out[size] = family.default_d_ff(out["hidden"])
                continue
            opt = _OPTIONAL_SIZES + (("d_ff",) if family.default_d_ff is not None else ())
            needed = ", ".join(v for k, v in family.sizes.items() if k not in opt)
            raise ArchitectureError(
                f"{where} has no {key!r}; a {family.name} config needs {needed}"
            )
        out[size] = _positive_int(val, key, where)
    out.setdefault("layers", None)
    N, H = out["hidden"], out["heads"]
    hkey = family.sizes["heads"]
    if out.get("head_dim") is None:
        if N % H:
            raise ArchitectureError(
                f"{where}: {family.sizes['hidden']}={N} is not divisible by {hkey}={H} (and the "
                f"config gives no head_dim)"
            )
        out["head_dim"] = N // H
    if family.kv_heads_of is not None:
        kv = family.kv_heads_of(config, H)
        out["kv_heads"] = None if kv is None else _positive_int(kv, "num_kv_heads", where)
    if out.get("kv_heads") is None:
        out["kv_heads"] = H
    kv_key = family.sizes.get("kv_heads", "num_kv_heads")
    if H % out["kv_heads"]:
        raise ArchitectureError(
            f"{where}: {kv_key}={out['kv_heads']} does not divide {hkey}={H}; every key/value "
            f"head must serve the same number of query heads"
        )
    if family.ffn == "moe":
        E, k = out["experts"], out["experts_per_token"]
        if k > E:
            raise ArchitectureError(
                f"{where}: {family.sizes['experts_per_token']}={k} exceeds "
                f"{family.sizes['experts']}={E}"
            )
    return out


def check_rope(config, family: Family, where: str) -> None:
    """Refuse a rotary scaling type genbound does not know (``rope_scaling`` or
    ``rope_parameters``, key ``rope_type`` or ``type``), naming the field and the value."""
    if not family.rotary(config):
        return
    for field in ("rope_scaling", "rope_parameters"):
        rp = config_value(config, field)
        if rp is None:
            continue
        if not isinstance(rp, Mapping):
            raise ArchitectureError(f"{where}: {field!r} must be a mapping, got {rp!r}")
        per = rp.values() if rp and all(isinstance(v, Mapping) for v in rp.values()) else [rp]
        for r in per:  # Gemma 3 style: one entry per attention kind
            for key in ("rope_type", "type"):
                t = r.get(key)
                if t is not None and t not in ROPE_TYPES:
                    raise ArchitectureError(
                        f"{where}: {field}.{key} is {t!r}, a rotary scaling type genbound does not "
                        f"know (known: {', '.join(ROPE_TYPES)})"
                    )


_LAYER_RE_CACHE: dict[tuple[str, str], re.Pattern] = {}


def _layer_pattern(family: Family, prefix: str) -> re.Pattern:
    key = (family.layer, prefix)
    if key not in _LAYER_RE_CACHE:
        head, tail = family.layer.split("{i}")
        _LAYER_RE_CACHE[key] = re.compile(re.escape(prefix + head) + r"(\d+)" + re.escape(tail))
    return _LAYER_RE_CACHE[key]


def role_shapes(family: Family, sizes: Mapping[str, int], config) -> dict[str, tuple[int, int]]:
    """The stored shape of every role's tensor (a fused tensor's whole shape) from the sizes."""
    N, H, KV, dh, F = (sizes[k] for k in ("hidden", "heads", "kv_heads", "head_dim", "d_ff"))
    dims = {"H": H, "KV": KV, "dh": dh, "F": F}
    out_in = {
        "query": (H * dh, N),
        "key": (KV * dh, N),
        "value": (KV * dh, N),
        "attn_out": (N, H * dh),
        "ff_gate": (F, N),
        "ff_in": (F, N),
        "ff_out": (N, F),
        "router": (sizes.get("experts") or 0, N),
    }
    shapes = {}
    for role, spec in family.roles.items():
        layout = spec.layout_for(config)
        total = fused_rows(layout, spec.part, dims)[0] if layout is not None else None
        shapes[role] = spec.stored_shape(*out_in[role], total)
        if spec.stacked:
            shapes[role] = (sizes["experts"], *shapes[role])
    return shapes


def _check_layers(
    family: Family, prefix: str, info: Mapping[str, TensorInfo], sizes: dict, source: str, config
) -> int:
    """Validate every layer against the family and the sizes; return the number of layers."""
    pat = _layer_pattern(family, prefix)
    by_layer: dict[int, list[str]] = {}
    for name in info:
        m = pat.match(name)
        if m:
            by_layer.setdefault(int(m.group(1)), []).append(name)
    n_total = max(by_layer) + 1 if by_layer else 0
    if n_total == 0:
        raise ArchitectureError(f"{source}: no layers found")
    shapes = role_shapes(family, sizes, config)
    E = sizes.get("experts")
    expert_re = None
    for spec in family.roles.values():
        if "{e}" in spec.name:
            a, b = spec.name.split("{e}")
            expert_re = re.compile(re.escape(a) + r"(\d+)\.")
    roles = [r for r in family.roles]
    consumed_rel = set()
    for role in roles:
        name = family.roles[role].name
        consumed_rel |= {name.format(e=e) for e in range(E)} if "{e}" in name else {name}
    for i in range(n_total):
        lp = family.layer_prefix(prefix, i)
        if expert_re is not None:
            seen = {
                int(m.group(1)) for n in by_layer.get(i, []) if (m := expert_re.match(n[len(lp) :]))
            }
            extra = sorted(e for e in seen if e >= E)
            if extra:
                raise ArchitectureError(
                    f"{source}: layer {i} holds expert {extra[0]}, but the config says "
                    f"{family.sizes['experts']}={E} (experts 0 to {E - 1})"
                )
        for role in roles:
            spec = family.roles[role]
            for e in range(E) if "{e}" in spec.name else [None]:
                name = lp + (spec.name.format(e=e) if e is not None else spec.name)
                if name not in info:
                    what = (
                        f"expert {e} of {E} in layer {i}"
                        if e is not None
                        else f"layer {i} of {n_total}"
                    )
                    raise ArchitectureError(f"{source}: parameter {name!r} is missing ({what})")
                t = info[name]
                want = shapes[role]
                if tuple(t.shape) != want:
                    layout = spec.layout_for(config)
                    fused = f", {layout} layout" if layout is not None else ""
                    cfg = ", ".join(
                        f"{family.sizes.get(k, k)}={sizes[k]}"
                        for k in ("hidden", "heads", "kv_heads", "head_dim", "d_ff", "experts")
                        if sizes.get(k) is not None
                    )
                    raise ShapeError(
                        f"{source}: {name!r} has shape {tuple(t.shape)}, expected {want} (from the "
                        f"config: {cfg}{fused})"
                    )
                if not t.floating:
                    raise CheckpointError(
                        f"{source}: {name!r} has dtype {t.dtype}, not a floating-point weight"
                    )
        for name in by_layer.get(i, []):
            rel = name[len(lp) :]
            if rel in consumed_rel or rel in family.buffers or len(info[name].shape) < 2:
                continue
            raise ArchitectureError(
                f"{source}: {name!r} (shape {tuple(info[name].shape)}) is a matrix of layer {i} that the proxies do "
                f"not consume (they read only {', '.join(sorted(consumed_rel))}); cross-attention, Longformer's "
                f"global projections and other additions to a {family.name} layer are not supported, and leaving "
                f"them out would make every number describe part of the model only"
            )
    return n_total


def check_model_type(config, family: Family, where: str) -> None:
    """Refuse a config whose ``model_type`` names another architecture than the tensor names show.

    Rule: ``model_type``, when the config has one, must be one of the family's ``members`` (BERT's
    names are shared by ``bert``, ``roberta``, ``electra`` and the RoBERTa re-trainings
    ``camembert`` and ``xlm-roberta``, which use RoBERTa's code). A config without ``model_type`` is
    read by its tensor names alone.

    >>> from genbound.weights.families import FAMILIES
    >>> check_model_type({"model_type": "roberta"}, FAMILIES[0], "c")
    >>> check_model_type({"model_type": "gpt2"}, FAMILIES[0], "c")
    Traceback (most recent call last):
    ...
    genbound.errors.ArchitectureError: c: model_type is 'gpt2', but the tensor names are those of the bert family (BERT, RoBERTa, ELECTRA; model_type one of bert, roberta, electra, camembert, xlm-roberta); the config and the weights disagree
    """
    mt = _model_type(config, where)
    if mt is not None and mt.lower() not in family.members and family_of_model_type(mt) is None:
        raise ArchitectureError(
            f"{where}: model_type {mt!r} is not an architecture genbound maps (mapped: "
            f"{_mapped_model_types()}), although the tensor names are those of the {family.name} "
            f"family ({family.title})"
        )
    if mt is not None and mt.lower() not in family.members:
        raise ArchitectureError(
            f"{where}: model_type is {mt!r}, but the tensor names are those of the {family.name} "
            f"family ({family.title}; model_type one of {', '.join(family.members)}); the config "
            f"and the weights disagree"
        )


def _build(
    info: Mapping[str, TensorInfo],
    config,
    *,
    family: Family,
    prefix: str,
    source: str,
    config_where: str,
    make_store,
    attention_scale,
    layers,
) -> TransformerWeights:
    try:
        sizes = config_sizes(config, family, config_where)
        check_rope(config, family, config_where)
        n_total = _check_layers(family, prefix, info, sizes, source, config)
    except ArchitectureError as exc:
        mt = _model_type(config, config_where)
        if mt is None or mt.lower() in family.members or family_of_model_type(mt) is not None:
            raise
        raise type(exc)(
            f"{config_where}: model_type {mt!r} is not an architecture genbound maps (mapped: "
            f"{_mapped_model_types()}); read as the {family.name} family its parameter names "
            f"resemble, it fails: {exc}"
        ) from None
    # after the layers' checks, whose reasons say more
    check_model_type(config, family, config_where)
    if sizes["layers"] is not None and sizes["layers"] != n_total:
        raise ArchitectureError(
            f"{source}: the config says {family.sizes['layers']}={sizes['layers']} but the "
            f"weights hold {n_total} layers"
        )
    ids = layer_ids(n_total, range(n_total) if layers is None else layers)
    if not isinstance(attention_scale, bool):
        raise ParameterError(f"attention_scale must be True or False, got {attention_scale!r}")
    N, H, KV, dh, F = (sizes[k] for k in ("hidden", "heads", "kv_heads", "head_dim", "d_ff"))
    dims = {"H": H, "KV": KV, "dh": dh, "F": F}
    store = make_store(tuple(ids), dims)
    return TransformerWeights(
        n_layers=len(ids),
        n_heads=H,
        hidden=N,
        d_head=dh,
        d_ff=F,
        source=source,
        attention_scale=attention_scale,
        family=family.name,
        kv_heads=KV,
        n_experts=sizes.get("experts"),
        coverage=family.coverage(config, sizes),
        _store=store,
    )


def _state_dict_info(state_dict, source: str) -> dict[str, TensorInfo]:
    if not isinstance(state_dict, Mapping):
        raise InputError(
            f"{source}: expected a mapping of parameter names to tensors, got {type(state_dict).__name__}"
        )
    info = {}
    for k, v in state_dict.items():
        if not isinstance(k, str) or not isinstance(v, torch.Tensor):
            raise InputError(
                f"{source}: entry {k!r} is a {type(v).__name__}; a state dict maps names to tensors"
            )
        check_real_tensor(v, k, source)  # no meta, sparse or other non-strided tensor
        dtype = str(v.dtype).replace("torch.", "")
        info[k] = TensorInfo(None, tuple(v.shape), dtype, floating=v.dtype.is_floating_point)
    return info


def weights_from_state_dict(
    state_dict,
    config,
    *,
    attention_scale: bool = False,
    layers=None,
    source: str = "state dict",
    family: str | None = None,
) -> TransformerWeights:
    """Weights of a supported transformer from a state dict (name -> tensor) and its config.

    ``config`` is a dict or an object (a Hugging Face config works) with the family's size keys
    (BERT: ``hidden_size``, ``num_attention_heads``, ``intermediate_size``; DistilBERT: ``dim``,
    ``n_heads``, ``hidden_dim``; GPT-2: ``n_embd``, ``n_head``, ``n_inner``). Parameter names may carry
    any prefix (``bert.``, ``roberta.``, ``distilbert.``, ``transformer.``, none). ``family`` forces one
    family by name. ``layers`` selects a subset of layers (then treated as the whole network). Nothing
    is copied: tensors are read when spectra are taken.
    """
    info = _state_dict_info(state_dict, source)
    only = None
    if family is not None:
        named = [f for f in FAMILIES if f.name == family]
        if not named:
            raise ParameterError(
                f"unknown family {family!r}; expected one of {[f.name for f in FAMILIES]}"
            )
        # a family with several name maps (Mixtral: saved files, in-memory modules): the one whose
        # layer-0 tensors are all present
        only = next((f for f in named if find_prefix_and_layer0(f, info)), named[0])
    fam, prefix = find_family(info, source, only=only, config=config)
    cfg_where = f"the config of {source}"
    return _build(
        info,
        config,
        family=fam,
        prefix=prefix,
        source=source,
        config_where=cfg_where,
        attention_scale=attention_scale,
        layers=layers,
        make_store=lambda ids, dims: DictStore(
            family=fam,
            prefix=prefix,
            layer_ids=ids,
            config=config,
            d_head=dims["dh"],
            dims=dims,
            tensors=state_dict,
        ),
    )


def bert_weights_from_state_dict(
    state_dict, config, *, attention_scale: bool = False, layers=None, source: str = "state dict"
) -> TransformerWeights:
    """:func:`weights_from_state_dict` restricted to the BERT family (BERT, RoBERTa, ELECTRA names)."""
    return weights_from_state_dict(
        state_dict,
        config,
        attention_scale=attention_scale,
        layers=layers,
        source=source,
        family="bert",
    )


def _weights_from_module(model, attention_scale, layers) -> TransformerWeights:
    inner, config, path = unwrap_holders(model)
    where = f"module {type(model).__name__}" + (f" (its .{'.'.join(path)})" if path else "")
    sd = merged_parameters(inner, where)
    fam, prefix = find_family(sd, where, config=config, module=True)
    if config is None:
        config = module_config(inner, fam, prefix, sd)
    return weights_from_state_dict(
        sd, config, attention_scale=attention_scale, layers=layers, source=where, family=fam.name
    )


def _listing(path: Path) -> list[str]:
    try:
        return sorted(p.name for p in path.iterdir())[:8]
    except OSError:
        return []


def hf_snapshot(path: Path) -> Path:
    """The folder to read for ``path``: ``path`` itself, or, for a Hugging Face cache folder of one
    model (``models--ORG--NAME``, holding ``refs/main`` and ``snapshots/``), the snapshot that
    ``refs/main`` names. A snapshot folder passed directly is read as it is."""
    refs = path / "refs" / "main"
    if (path / "config.json").exists() or not (path / "snapshots").is_dir() or not refs.is_file():
        return path
    try:
        rev = refs.read_text(encoding="utf-8", errors="replace").strip()
    except OSError as exc:
        raise InputError(f"{str(path)!r}: cannot read refs/main ({exc.strerror or exc})") from None
    snap = path / "snapshots" / rev
    if not rev or "/" in rev or rev in (".", "..") or not snap.is_dir():
        raise InputError(
            f"{str(path)!r} is a Hugging Face cache folder whose refs/main names {rev[:64]!r}, "
            f"which is not a snapshot in it; pass a folder under snapshots/"
        )
    return snap


def _weights_from_folder(path: Path, attention_scale, layers) -> TransformerWeights:
    if not path.exists():
        raise InputError(f"checkpoint folder {str(path)!r} does not exist")
    if not path.is_dir():
        raise InputError(
            f"{str(path)!r} is a file; expected a folder holding config.json and model.safetensors"
        )
    path = hf_snapshot(path)
    refuse_adapter_folder(path)
    cfg_path = path / "config.json"
    if not cfg_path.exists():  # a FIFO or a device is refused by read_json, naming its kind
        raise ArchitectureError(
            f"{str(path)!r} has no config.json (found {_listing(path)}); expected config.json "
            f"and model.safetensors (or pytorch_model.bin)"
        )
    config = read_json(cfg_path, what="config.json")
    source = str(path)
    index = path / "model.safetensors.index.json"
    single = path / "model.safetensors"
    binf = path / "pytorch_model.bin"
    bin_index = path / "pytorch_model.bin.index.json"
    sd = None
    guard = None
    if single.is_file():
        info = safetensors_header(single)
    elif index.is_file():
        info = sharded_safetensors(path, index)
    elif binf.is_file() or bin_index.is_file():
        bound = config_bytes_bound(config)
        if binf.is_file():
            sd, handle = load_torch_state_dict(binf, max_inflated=bound, with_handle=True)
            handles = [handle]
            where = str(binf)
        else:
            sd, handles = sharded_bin(path, bin_index, max_inflated=bound)
            where = str(bin_index)
        info = _state_dict_info(sd, where)

        def guard():
            for h in handles:
                h.check()
    else:
        raise ArchitectureError(
            f"{str(path)!r} has no model.safetensors, model.safetensors.index.json, "
            f"pytorch_model.bin or pytorch_model.bin.index.json (found {_listing(path)})"
        )
    fam, prefix = find_family(info, source, config=config)
    if sd is not None:
        make = lambda ids, dims: DictStore(  # noqa: E731
            family=fam,
            prefix=prefix,
            layer_ids=ids,
            config=config,
            d_head=dims["dh"],
            dims=dims,
            tensors=sd,
            guard=guard,
        )
    else:
        make = lambda ids, dims: SafetensorsStore(  # noqa: E731
            family=fam,
            prefix=prefix,
            layer_ids=ids,
            config=config,
            d_head=dims["dh"],
            dims=dims,
            files=dict(info),
        )
    return _build(
        info,
        config,
        family=fam,
        prefix=prefix,
        source=source,
        config_where=str(cfg_path),
        attention_scale=attention_scale,
        layers=layers,
        make_store=make,
    )


def load_weights(source, *, attention_scale: bool | None = None, layers=None) -> TransformerWeights:
    """Load the proxy matrices of a transformer (Part III, :ref:`ch-sakai-trained`).

    ``source`` is a folder holding ``config.json`` and ``model.safetensors`` (or a sharded
    ``model.safetensors.index.json``, or ``pytorch_model.bin``), a ``torch.nn.Module``, or a
    :class:`TransformerWeights` (then ``attention_scale`` and ``layers`` apply to it, see
    :meth:`TransformerWeights.select`). Families: ``genbound.weights.families`` (BERT, RoBERTa,
    ELECTRA, DistilBERT, GPT-2, OPT, ViT with the bound; Llama, Mistral, Qwen2, Qwen3, Gemma,
    Gemma 2, Phi-3, Mixtral, GPT-NeoX, Falcon, GPT-J, BLOOM, DeBERTa-v2 with per-matrix spectra only, see
    :meth:`TransformerWeights.matrix_table`); encoder-decoders are refused with the reason.
    Nothing is downloaded and, for folders, no weight is read until spectra are taken (layer by
    layer). ``attention_scale=True`` puts the model's score scale (``1/sqrt(d_head)``) into every
    ``QK``; ``None`` means ``False`` for a new load and "unchanged" for a :class:`TransformerWeights`.
    ``layers`` selects layer indices (the selection is then treated as the whole network). Every bad
    file or config raises a :class:`~genbound.errors.GenboundError` naming it.

    >>> import tempfile
    >>> from genbound.testing import make_bert_checkpoint
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = make_bert_checkpoint(d, layers=2, heads=2, hidden=8, d_ff=16, seed=0)
    ...     w = load_weights(d)
    ...     (w.family, w.n_layers, w.n_heads, w.hidden, w.d_head, w.d_ff, w.spectra().qk.shape)
    ('bert', 2, 2, 8, 4, 16, torch.Size([2, 2, 4]))
    """
    if isinstance(source, TransformerWeights):
        return source.select(layers=layers, attention_scale=attention_scale)
    scale = False if attention_scale is None else attention_scale
    if isinstance(source, (str, os.PathLike)):
        return _weights_from_folder(Path(source), scale, layers)
    if isinstance(source, torch.nn.Module):
        return _weights_from_module(source, scale, layers)
    raise ArchitectureError(
        f"cannot load weights from a {type(source).__name__}; expected a checkpoint folder (str or Path), "
        f"a torch.nn.Module of a supported family ({'; '.join(f.title for f in FAMILIES)}) or TransformerWeights"
    )
