"""Turning a checkpoint folder, a state dict or an ``nn.Module`` into :class:`TransformerWeights`.

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
from .families import FAMILIES, REFUSALS, ROLES, Family, config_value
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
from .stores import DictStore, SafetensorsStore

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
    shown = ", ".join(repr(n) for n in names[:k]) or "no parameters"
    return shown + (" ..." if len(names) > k else "")


def _supported() -> str:
    return "; ".join(f"{f.anchor!r} ({f.title})" for f in FAMILIES)


def find_family(names, where: str, *, only: Family | None = None) -> tuple[Family, str]:
    """The family whose anchor parameter is among ``names``, and the model prefix before it.

    A refused family (Llama and relatives) raises with its reason; no match raises naming what was
    found and what each family looks for. ``only`` restricts the search to one family.

    >>> find_family(["transformer.h.0.attn.c_attn.weight"], "x")[0].name, find_family(["transformer.h.0.attn.c_attn.weight"], "x")[1]
    ('gpt2', 'transformer.')
    """
    names = list(names)
    for fam in [only] if only is not None else FAMILIES:
        hits = sorted(
            {
                n[: -len(fam.anchor)]
                for n in names
                if n.endswith(fam.anchor)
                and (len(n) == len(fam.anchor) or n[-len(fam.anchor) - 1] == ".")
            }
        )
        if len(hits) > 1:
            raise ArchitectureError(
                f"{where} holds several {fam.name} models (prefixes {hits}); pass one"
            )
        if hits:
            return fam, hits[0]
    if only is None:
        for ref in REFUSALS:
            if any(n.endswith(ref.anchor) for n in names):
                raise ArchitectureError(f"{where} is {ref.reason}")
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


def config_sizes(config, family: Family, where: str) -> dict[str, int | None]:
    """``{"hidden", "heads", "d_ff", "layers"}`` from a config, each a positive integer (``layers`` may be
    absent: ``None``). Anything else (``2.5``, ``0``, ``-1``, ``"12"``, ``true``) raises naming the key.

    >>> from genbound.weights.families import FAMILIES
    >>> config_sizes({"n_embd": 8, "n_head": 2, "n_inner": None, "n_layer": 3}, FAMILIES[2], "c")
    {'hidden': 8, 'heads': 2, 'd_ff': 32, 'layers': 3}
    """
    if config is None or isinstance(config, (str, bytes, int, float, list, tuple)):
        raise ArchitectureError(
            f"{where}: the config must be a mapping or a config object, got {type(config).__name__}"
        )
    out: dict[str, int | None] = {}
    for size, key in family.sizes.items():
        val = config_value(config, key)
        if val is None:
            if size == "layers":
                out[size] = None
                continue
            if size == "d_ff" and family.default_d_ff is not None:
                out[size] = family.default_d_ff(out["hidden"])
                continue
            needed = ", ".join(family.sizes.values())
            raise ArchitectureError(
                f"{where} has no {key!r}; a {family.name} config needs {needed}"
            )
        out[size] = _positive_int(val, key, where)
    return out


_LAYER_RE_CACHE: dict[tuple[str, str], re.Pattern] = {}


def _layer_pattern(family: Family, prefix: str) -> re.Pattern:
    key = (family.name, prefix)
    if key not in _LAYER_RE_CACHE:
        head, tail = family.layer.split("{i}")
        _LAYER_RE_CACHE[key] = re.compile(re.escape(prefix + head) + r"(\d+)" + re.escape(tail))
    return _LAYER_RE_CACHE[key]


def _check_layers(
    family: Family, prefix: str, info: Mapping[str, TensorInfo], sizes: dict, source: str
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
    N, F = sizes["hidden"], sizes["d_ff"]
    expected = {
        "query": (N, N),
        "key": (N, N),
        "value": (N, N),
        "attn_out": (N, N),
        "ff_in": (F, N),
        "ff_out": (N, F),
    }
    consumed_rel = {r.name for r in family.roles.values()}
    for i in range(n_total):
        lp = family.layer_prefix(prefix, i)
        for role in ROLES:
            spec = family.roles[role]
            name = lp + spec.name
            if name not in info:
                raise ArchitectureError(
                    f"{source}: parameter {name!r} is missing (layer {i} of {n_total})"
                )
            t = info[name]
            want = spec.stored_shape(*expected[role])
            if tuple(t.shape) != want:
                raise ShapeError(
                    f"{source}: {name!r} has shape {tuple(t.shape)}, expected {want} (from the config: "
                    f"hidden={N}, heads={sizes['heads']}, d_ff={F})"
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

    Rule: the tensor names decide the family; ``model_type``, when the config has one, must be one of
    the family's ``members`` (BERT's names are shared by ``bert``, ``roberta``, ``electra`` and the
    RoBERTa re-trainings ``camembert`` and ``xlm-roberta``, which use RoBERTa's code; DistilBERT's and
    GPT-2's names by their own ``model_type`` only). A config without ``model_type`` is read by its
    tensor names alone.

    >>> from genbound.weights.families import FAMILIES
    >>> check_model_type({"model_type": "roberta"}, FAMILIES[0], "c")
    >>> check_model_type({"model_type": "t5"}, FAMILIES[0], "c")
    Traceback (most recent call last):
    ...
    genbound.errors.ArchitectureError: c: model_type is 't5', but the tensor names are those of the bert family (BERT, RoBERTa, ELECTRA; model_type one of bert, roberta, electra, camembert, xlm-roberta); refusing to guess which is right
    """
    mt = config_value(config, "model_type")
    if mt is None or mt == "":
        return
    if not isinstance(mt, str):
        raise ArchitectureError(f"{where}: 'model_type' must be a string, got {mt!r}")
    if mt.lower() not in family.members:
        raise ArchitectureError(
            f"{where}: model_type is {mt!r}, but the tensor names are those of the {family.name} "
            f"family ({family.title}; model_type one of {', '.join(family.members)}); refusing to guess which "
            f"is right"
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
    sizes = config_sizes(config, family, config_where)
    N, H, F = sizes["hidden"], sizes["heads"], sizes["d_ff"]
    if N % H:
        raise ArchitectureError(
            f"{source}: hidden size {N} is not divisible by the number of heads {H}"
        )
    n_total = _check_layers(family, prefix, info, sizes, source)
    check_model_type(
        config, family, config_where
    )  # after the structural checks, whose reasons say more
    if sizes["layers"] is not None and sizes["layers"] != n_total:
        raise ArchitectureError(
            f"{source}: the config says {family.sizes['layers']}={sizes['layers']} but the "
            f"weights hold {n_total} layers"
        )
    ids = layer_ids(n_total, range(n_total) if layers is None else layers)
    if not isinstance(attention_scale, bool):
        raise ParameterError(f"attention_scale must be True or False, got {attention_scale!r}")
    store = make_store(tuple(ids), N // H)
    return TransformerWeights(
        n_layers=len(ids),
        n_heads=H,
        hidden=N,
        d_head=N // H,
        d_ff=F,
        source=source,
        attention_scale=attention_scale,
        family=family.name,
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
        info[k] = TensorInfo(
            file=None,
            shape=tuple(v.shape),
            dtype=str(v.dtype).replace("torch.", ""),
            floating=v.dtype.is_floating_point,
        )
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
        only = next((f for f in FAMILIES if f.name == family), None)
        if only is None:
            raise ParameterError(
                f"unknown family {family!r}; expected one of {[f.name for f in FAMILIES]}"
            )
    fam, prefix = find_family(info, source, only=only)
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
        make_store=lambda ids, dh: DictStore(
            family=fam, prefix=prefix, layer_ids=ids, config=config, d_head=dh, tensors=state_dict
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


def _module_config(model, fam: Family, prefix: str, sd) -> dict:
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


def _weights_from_module(model, attention_scale, layers) -> TransformerWeights:
    where = f"module {type(model).__name__}"
    sd = dict(model.named_parameters())
    fam, prefix = find_family(sd, where)
    config = getattr(model, "config", None)
    if config is None:
        config = _module_config(model, fam, prefix, sd)
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
    cfg_path = path / "config.json"
    if not cfg_path.is_file():
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
    fam, prefix = find_family(info, source)
    if sd is not None:
        make = lambda ids, dh: DictStore(  # noqa: E731
            family=fam,
            prefix=prefix,
            layer_ids=ids,
            config=config,
            d_head=dh,
            tensors=sd,
            guard=guard,
        )
    else:
        make = lambda ids, dh: SafetensorsStore(  # noqa: E731
            family=fam,
            prefix=prefix,
            layer_ids=ids,
            config=config,
            d_head=dh,
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
    :meth:`TransformerWeights.select`). Supported families: BERT, RoBERTa and ELECTRA, DistilBERT,
    GPT-2 (``genbound.weights.families``); Llama-family models are refused with the reason.
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
