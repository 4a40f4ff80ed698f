"""Reading an ``nn.Module``: looking through the holders that wrap a model, and merging LoRA adapters.

One concept: the named tensors that a module computes with, whatever holds it.

- **Holders.** ``torch.compile`` (``_orig_mod``), ``DataParallel``, ``DistributedDataParallel`` and
  Accelerate (``module``), Lightning-style training modules (``model``) and peft's ``PeftModel``
  (``base_model``) hold the model they wrap under one attribute. :func:`unwrap_holders` follows such an
  attribute while the child holds every parameter of its holder, or the holder has no config with a
  ``model_type`` and the child has one; the model's own config then decides its family, as for the
  unwrapped model.
- **LoRA adapters** (peft's ``lora.Linear``: a ``base_layer`` and per adapter ``lora_A``, ``lora_B`` and
  a ``scaling``) are merged on the fly, as ``merge_and_unload()`` does: ``W + scaling * B A`` for every
  active adapter not merged already (transposed for a ``fan_in_fan_out`` layer, GPT-2's ``Conv1D``),
  the weight the layer computes with. Nothing in the module changes. Adapters that are not plain LoRA
  (DoRA and other variants, IA3, LoHa, ...) are refused with the hint to merge them first.
- **Adapter tensors in a checkpoint** (names with ``lora_A``, ``base_layer``, ...; a folder holding only
  ``adapter_config.json`` and the adapter weights) are refused with the same hint: genbound reads whole
  models, and merged weights are what the model computes with.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import torch

from ..errors import ArchitectureError, CheckpointError, shorten
from .families import Family
from .files import read_json

__all__ = [
    "HOLDER_ATTRS",
    "MERGE_HINT",
    "unwrap_holders",
    "merged_parameters",
    "adapter_names",
    "refuse_adapter_names",
    "refuse_adapter_folder",
    "module_config",
]

#: Attributes through which a holder reaches the model it wraps (``torch.compile``,
#: DataParallel/DDP/Accelerate, Lightning-style modules, peft's ``PeftModel`` and ``LoraModel``).
HOLDER_ATTRS = ("_orig_mod", "module", "model", "base_model")

#: What to do with adapters genbound does not merge itself.
MERGE_HINT = "merge the adapters first (model.merge_and_unload()) and pass the merged model"

#: Name fragments of adapter tensors (peft's LoRA, DoRA, IA3, LoHa, LoKr, VeRA, ... layers).
_ADAPTER_MARKS = (
    ".base_layer.",
    ".lora_A.",
    ".lora_B.",
    ".lora_embedding_",
    ".lora_magnitude_vector",
    ".ia3_l.",
    ".hada_w",
    ".lokr_w",
    ".vera_lambda",
)


def _model_type(config) -> str | None:
    if config is None:
        return None
    mt = (
        config.get("model_type")
        if isinstance(config, Mapping)
        else getattr(config, "model_type", None)
    )
    return mt if isinstance(mt, str) and mt else None


def _holds_all(parent: torch.nn.Module, child: torch.nn.Module) -> bool:
    mine = {id(p) for p in child.parameters()}
    return all(id(p) in mine for p in parent.parameters())


def unwrap_holders(model: torch.nn.Module) -> tuple[torch.nn.Module, object, list[str]]:
    """``(inner, config, path)``: the module a chain of holders wraps, the config to read it with (the
    innermost config with a ``model_type`` along the chain, else the inner module's ``config``) and the
    attributes followed.

    >>> class Holder(torch.nn.Module):
    ...     def __init__(self, m):
    ...         super().__init__()
    ...         self.module = m
    >>> lin = torch.nn.Linear(2, 2)
    >>> inner, config, path = unwrap_holders(Holder(Holder(lin)))
    >>> inner is lin, config, path
    (True, None, ['module', 'module'])
    """
    path: list[str] = []
    seen = {id(model)}
    config = getattr(model, "config", None)
    typed = config if _model_type(config) is not None else None
    while True:
        for attr in HOLDER_ATTRS:
            child = model._modules.get(attr)
            if not isinstance(child, torch.nn.Module) or id(child) in seen:
                continue
            child_config = getattr(child, "config", None)
            untyped = _model_type(getattr(model, "config", None)) is None
            if _holds_all(model, child) or (untyped and _model_type(child_config) is not None):
                break
        else:
            break
        seen.add(id(child))
        path.append(attr)
        model = child
        if _model_type(child_config) is not None:
            typed = child_config
    return model, (typed if typed is not None else getattr(model, "config", None)), path


def _lora_delta(layer, adapter: str, where: str) -> torch.Tensor:
    variant = getattr(layer, "lora_variant", None) or {}
    dora = getattr(layer, "use_dora", None) or {}
    if dora.get(adapter) or variant.get(adapter) is not None:
        raise ArchitectureError(
            f"{where}: adapter {adapter!r} is a LoRA variant (DoRA, ...); {MERGE_HINT}"
        )
    if adapter in layer.lora_A:
        a, b = layer.lora_A[adapter].weight, layer.lora_B[adapter].weight
        transpose = bool(getattr(layer, "fan_in_fan_out", False))
    else:  # an embedding's adapter: (B A)^T, as peft's lora.Embedding merges it
        a, b = layer.lora_embedding_A[adapter], layer.lora_embedding_B[adapter]
        transpose = True
    if a.dim() != 2 or b.dim() != 2:
        raise ArchitectureError(f"{where}: adapter {adapter!r} is not a linear LoRA; {MERGE_HINT}")
    a, b = a.detach(), b.detach()
    if a.dtype in (torch.float16, torch.bfloat16):  # as peft does on the CPU
        a, b = a.float(), b.float()
    delta = (b @ a) * float(layer.scaling[adapter])
    return delta.T if transpose else delta


def _active(layer) -> list[str]:
    act = getattr(layer, "active_adapters", None)
    if act is None:
        act = getattr(layer, "active_adapter", None)
    return [act] if isinstance(act, str) else list(act or ())


def _is_lora_linear(mod) -> bool:
    return all(
        hasattr(mod, a) for a in ("base_layer", "lora_A", "lora_B", "scaling")
    ) and isinstance(getattr(mod, "base_layer", None), torch.nn.Module)


def merged_parameters(model: torch.nn.Module, where: str) -> dict[str, torch.Tensor]:
    """The named parameters of ``model`` as it computes, LoRA adapters merged (see the module
    docstring): a LoRA layer ``X`` gives ``X.weight`` (and ``X.bias``) instead of ``X.base_layer.*``
    and its adapter tensors. Adapters of another kind raise with :data:`MERGE_HINT`.
    """
    sd: dict[str, torch.Tensor] = dict(model.named_parameters())
    for name, mod in getattr(model, "named_modules", list)():
        if not hasattr(mod, "base_layer") or not isinstance(
            getattr(mod, "base_layer"), torch.nn.Module
        ):
            continue
        label = f"{where}: layer {name!r}"
        if not _is_lora_linear(mod):
            raise ArchitectureError(
                f"{label} is an adapter layer ({type(mod).__name__}) genbound does not merge; {MERGE_HINT}"
            )
        base = mod.base_layer
        weight = getattr(base, "weight", None)
        if not isinstance(weight, torch.Tensor) or weight.dim() != 2:
            raise ArchitectureError(
                f"{label} wraps a {type(base).__name__}, not a linear layer; {MERGE_HINT}"
            )
        merged = weight.detach()
        if not getattr(mod, "disable_adapters", False):
            done = set(getattr(mod, "merged_adapters", ()) or ())
            for adapter in _active(mod):
                present = adapter in mod.lora_A or adapter in getattr(mod, "lora_embedding_A", {})
                if adapter not in done and present:
                    merged = merged + _lora_delta(mod, adapter, label).to(merged.dtype)
        prefix = f"{name}." if name else ""
        for key in [
            k for k in sd if k.startswith(prefix) and k[len(prefix) :].split(".")[0] in _LORA_PARTS
        ]:
            del sd[key]
        sd[prefix + "weight"] = merged
        if isinstance(getattr(base, "bias", None), torch.Tensor):
            sd[prefix + "bias"] = base.bias.detach()
    left = adapter_names(sd)
    if left:
        raise ArchitectureError(
            f"{where} holds adapter tensors genbound does not merge ({left[0]!r}); {MERGE_HINT}"
        )
    return sd


#: The children of a peft LoRA layer whose tensors the merged ``weight`` replaces.
_LORA_PARTS = {
    "base_layer",
    "lora_A",
    "lora_B",
    "lora_embedding_A",
    "lora_embedding_B",
    "lora_magnitude_vector",
    "lora_dropout",
}


def adapter_names(names) -> list[str]:
    """The names among ``names`` that are adapter tensors (peft's ``base_layer``, ``lora_A``, ...).

    >>> adapter_names(["h.0.attn.c_attn.weight", "h.0.attn.c_attn.lora_A.default.weight"])
    ['h.0.attn.c_attn.lora_A.default.weight']
    """
    return [n for n in names if any(m in "." + n for m in _ADAPTER_MARKS)]


def refuse_adapter_names(names, where: str) -> None:
    """Raise, with :data:`MERGE_HINT`, when a checkpoint's tensor names are those of adapters."""
    found = adapter_names(names)
    if found:
        raise ArchitectureError(
            f"{where} holds adapter tensors ({found[0]!r}, {len(found)} in all), not a merged "
            f"model; {MERGE_HINT}"
        )


def module_config(model, fam: Family, prefix: str, sd) -> dict:
    """Sizes of a module without ``.config``: from its tensors and its attention module's head count."""
    mod = model
    q_name = fam.tensor_name(prefix, 0, "query")
    for part in q_name.split(".")[:-2]:
        mod = getattr(mod, part, None) if not part.isdigit() else mod[int(part)]
        if mod is None:
            break
    heads = None
    for attr in ("num_attention_heads", "n_heads", "num_heads", "n_head"):
        heads = getattr(mod, attr, None) if mod is not None else None
        if heads is not None:
            break
    if heads is None:
        raise ArchitectureError(
            f"module {type(model).__name__} has no .config and the module holding {q_name!r} "
            f"has no num_attention_heads (or n_heads) attribute; pass a state dict and a config"
        )
    q = sd[q_name]
    spec = fam.roles["ff_in"]
    f_in = sd[fam.tensor_name(prefix, 0, "ff_in")]
    N = q.shape[0] if fam.roles["query"].conv1d else q.shape[1]
    F = f_in.shape[1] if spec.conv1d else f_in.shape[0]
    keys = fam.sizes
    return {keys["hidden"]: int(N), keys["heads"]: heads, keys["d_ff"]: int(F)}


def refuse_adapter_folder(path: Path) -> None:
    """Refuse a peft adapter folder (``adapter_config.json`` and no full model's weights)."""
    if not (path / "adapter_config.json").is_file():
        return
    full = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")
    if any((path / f).is_file() for f in full) and (path / "config.json").is_file():
        return  # a merged model saved beside its adapter's config: its tensors are checked
    try:
        base = read_json(path / "adapter_config.json", what="adapter_config.json").get(
            "base_model_name_or_path"
        )
    except CheckpointError:
        base = None
    on = f" for the base model {shorten(str(base))!r}" if base else ""
    raise ArchitectureError(
        f"{str(path)!r} holds an adapter (adapter_config.json{on}), not a whole model's weights; "
        f"load the base model with the adapter in peft, {MERGE_HINT} (save_pretrained of the merged "
        f"model gives a folder genbound reads)"
    )
