"""Reading checkpoint files so that every failure is a :class:`~genbound.errors.CheckpointError` naming the file.

The readers check what they can before any library parses the file, and turn every exception of
``json``, ``safetensors`` and ``torch.load`` into one short message:

* ``config.json`` and index files: unreadable, not UTF-8, not JSON, not a JSON object;
* ``*.safetensors``: the 8-byte header length, the JSON header, every tensor's dtype, shape and data
  offsets against the file's size (:func:`safetensors_header`), so empty, truncated and corrupt
  files and lying lengths are caught before the file is memory-mapped;
* ``pytorch_model.bin``: loaded only with ``torch.load(weights_only=True)``, whose unpickler
  refuses every global outside torch's tensor allow-list, so **no object in the file is ever
  constructed or called** (:func:`load_torch_state_dict`); anything that is not a mapping of names to
  tensors is refused, and the message suggests safetensors;
* sharded checkpoints: the index must map names to shard files inside the folder, every shard must
  exist and hold the tensors the index assigns to it (:func:`sharded_safetensors`).

>>> import tempfile, pathlib
>>> from genbound.errors import CheckpointError
>>> with tempfile.TemporaryDirectory() as d:
...     p = pathlib.Path(d) / "model.safetensors"
...     _ = p.write_bytes(b"")
...     try:
...         safetensors_header(p)
...     except CheckpointError as e:
...         print(str(e).split(": ", 1)[1])
is empty (0 bytes); a safetensors file starts with an 8-byte header length
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path

import torch

from ..errors import CheckpointError

__all__ = [
    "TensorInfo",
    "read_json",
    "safetensors_header",
    "sharded_safetensors",
    "load_torch_state_dict",
    "SAFETENSORS_DTYPES",
]

#: Bytes per element of every safetensors dtype, and whether it is a floating-point type.
SAFETENSORS_DTYPES = {
    "F64": (8, True),
    "F32": (4, True),
    "F16": (2, True),
    "BF16": (2, True),
    "F8_E4M3": (1, True),
    "F8_E5M2": (1, True),
    "I64": (8, False),
    "I32": (4, False),
    "I16": (2, False),
    "I8": (1, False),
    "U64": (8, False),
    "U32": (4, False),
    "U16": (2, False),
    "U8": (1, False),
    "BOOL": (1, False),
}
#: safetensors refuses headers above 100 MB; so do we, before reading them.
MAX_HEADER = 100_000_000
_MAX_DETAIL = 160


@dataclass(frozen=True)
class TensorInfo:
    """What a checkpoint says about one tensor before it is read: its file, shape and dtype."""

    file: Path | None
    shape: tuple[int, ...]
    dtype: str
    floating: bool


def _detail(exc: BaseException) -> str:
    """One short line from an exception's message (library messages can span many lines)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= _MAX_DETAIL else text[: _MAX_DETAIL - 3] + "..."


def _fail(path, what: str, exc: BaseException | None = None) -> CheckpointError:
    msg = f"{str(path)!r}: {what}"
    if exc is not None:
        msg += f" ({_detail(exc)})"
    return CheckpointError(msg)


def read_json(path: Path, *, what: str = "JSON file") -> dict:
    """The JSON object in ``path``, or a :class:`CheckpointError` saying why not."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise _fail(path, f"cannot read this {what}", exc) from None
    if not raw.strip():
        raise _fail(path, f"this {what} is empty")
    try:
        obj = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _fail(path, f"this {what} is not UTF-8 text", exc) from None
    except (ValueError, RecursionError) as exc:
        raise _fail(path, f"this {what} is not valid JSON", exc) from None
    if not isinstance(obj, dict):
        raise _fail(path, f"this {what} must hold a JSON object, found a {type(obj).__name__}")
    return obj


def _is_index(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def safetensors_header(path: Path) -> dict[str, TensorInfo]:
    """Validate a safetensors file's layout and return ``{name: TensorInfo}``.

    Checks, against the file's size: the 8-byte little-endian header length, that the header is a
    UTF-8 JSON object, and for every tensor a known dtype, a shape of non-negative integers, and data
    offsets ``[begin, end]`` with ``end - begin = prod(shape) * itemsize`` that tile the data region
    exactly (as the format requires). Only the header is read.
    """
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(8)
            if size < 8:
                if size == 0:
                    raise _fail(
                        path,
                        "is empty (0 bytes); a safetensors file starts with an 8-byte header length",
                    )
                raise _fail(
                    path, f"is {size} bytes long, too short for a safetensors file (truncated?)"
                )
            (n,) = struct.unpack("<Q", head)
            if n > MAX_HEADER:
                raise _fail(
                    path, f"claims a {n}-byte header, more than the format allows (corrupt)"
                )
            if 8 + n > size:
                raise _fail(
                    path,
                    f"claims a {n}-byte header but the file has only {size - 8} bytes after "
                    f"the length field (truncated or corrupt)",
                )
            raw = f.read(n)
    except OSError as exc:
        raise _fail(path, "cannot read this safetensors file", exc) from None
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _fail(path, "has a corrupt header: not UTF-8 JSON", exc) from None
    if not isinstance(header, dict):
        raise _fail(
            path, f"has a corrupt header: a JSON {type(header).__name__}, expected an object"
        )
    data_len = size - 8 - n
    out: dict[str, TensorInfo] = {}
    spans = []
    for name, entry in header.items():
        if name == "__metadata__":
            if entry is not None and not (
                isinstance(entry, dict) and all(isinstance(v, str) for v in entry.values())
            ):
                raise _fail(
                    path, "has a corrupt header: '__metadata__' must map strings to strings"
                )
            continue
        if (
            not isinstance(entry, dict)
            or set(entry) - {"dtype", "shape", "data_offsets"}
            or len(entry) != 3
        ):
            raise _fail(
                path,
                f"has a corrupt header: the entry of tensor {name!r} must have exactly dtype, "
                f"shape and data_offsets",
            )
        dtype, shape, offs = entry["dtype"], entry["shape"], entry["data_offsets"]
        if dtype not in SAFETENSORS_DTYPES:
            raise _fail(path, f"has a corrupt header: tensor {name!r} has unknown dtype {dtype!r}")
        if not (isinstance(shape, list) and all(_is_index(d) for d in shape)):
            raise _fail(path, f"has a corrupt header: tensor {name!r} has shape {shape!r}")
        if not (
            isinstance(offs, list)
            and len(offs) == 2
            and all(_is_index(o) for o in offs)
            and offs[0] <= offs[1]
        ):
            raise _fail(path, f"has a corrupt header: tensor {name!r} has data offsets {offs!r}")
        item, floating = SAFETENSORS_DTYPES[dtype]
        nbytes = math.prod(shape) * item
        if offs[1] - offs[0] != nbytes:
            raise _fail(
                path,
                f"has a corrupt header: tensor {name!r} of shape {shape} and dtype {dtype} needs "
                f"{nbytes} bytes but its data offsets {offs} span {offs[1] - offs[0]}",
            )
        if offs[1] > data_len:
            raise _fail(
                path,
                f"is truncated or corrupt: tensor {name!r} ends at byte {offs[1]} of the data "
                f"region, which has only {data_len} bytes",
            )
        spans.append((offs[0], offs[1], name))
        out[name] = TensorInfo(file=path, shape=tuple(shape), dtype=dtype, floating=floating)
    end = 0
    for b, e, name in sorted(spans):
        if b != end:
            raise _fail(
                path,
                f"has a corrupt header: the data of tensor {name!r} starts at byte {b}, expected "
                f"{end} (tensors must tile the data region)",
            )
        end = e
    if end != data_len:
        raise _fail(
            path,
            f"has {data_len - end} bytes after the last tensor's data (corrupt or wrong lengths)",
        )
    _check_opens(path)
    return out


def _check_opens(path: Path) -> None:
    """Let safetensors itself validate the file too; any failure becomes a :class:`CheckpointError`."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt", device="cpu"):
            pass
    except (
        Exception
    ) as exc:  # safetensors raises its own SafetensorError and OSError; all mean "unusable"
        raise _fail(path, "is not a valid safetensors file", exc) from None


def read_safetensor(path: Path, name: str) -> torch.Tensor:
    """One tensor from a validated safetensors file, through a fresh memory map (released at once)."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt", device="cpu") as f:
            return f.get_tensor(name)
    except Exception as exc:  # the file changed since it was validated, or the OS failed
        raise _fail(path, f"cannot read tensor {name!r}", exc) from None


def sharded_safetensors(folder: Path, index_path: Path) -> dict[str, TensorInfo]:
    """``{name: TensorInfo}`` of a sharded checkpoint described by ``model.safetensors.index.json``."""
    index = read_json(index_path, what="safetensors index")
    wmap = index.get("weight_map")
    if not isinstance(wmap, dict) or not wmap:
        raise _fail(index_path, "has no 'weight_map' object mapping tensor names to shard files")
    root = folder.resolve()
    shards: dict[str, list[str]] = {}
    for name, fname in wmap.items():
        if not isinstance(fname, str) or not fname:
            raise _fail(index_path, f"maps tensor {name!r} to {fname!r}, not a file name")
        target = (folder / fname).resolve()
        if root not in target.parents:
            raise _fail(
                index_path,
                f"maps tensor {name!r} to {fname!r}, which is outside the checkpoint folder",
            )
        shards.setdefault(fname, []).append(name)
    out: dict[str, TensorInfo] = {}
    for fname, names in sorted(shards.items()):
        shard = folder / fname
        if not shard.is_file():
            raise _fail(
                index_path,
                f"names shard {fname!r}, which does not exist in {str(folder)!r} "
                f"({len(names)} tensors, e.g. {names[0]!r})",
            )
        header = safetensors_header(shard)
        missing = [n for n in names if n not in header]
        if missing:
            raise _fail(
                shard,
                f"lacks {len(missing)} tensors that {index_path.name} assigns to it, e.g. {missing[0]!r}",
            )
        for n in names:
            out[n] = header[n]
    return out


def _refuse_bin(path, what: str, exc: BaseException | None = None) -> CheckpointError:
    return _fail(
        path,
        f"{what}; genbound loads .bin files only with torch.load(weights_only=True), so nothing "
        f"in it was executed; save the model as safetensors (save_pretrained writes "
        f"model.safetensors) and point genbound at that",
        exc,
    )


def load_torch_state_dict(path: Path) -> dict[str, torch.Tensor]:
    """The state dict in a ``pytorch_model.bin``, loaded without executing anything in the file.

    ``torch.load(weights_only=True)``: the restricted unpickler builds only tensors, storages and plain
    containers, and raises on any other global (``os.system``, a class, a function) before calling
    it. The zip format is memory-mapped (read lazily); the legacy format is read whole. The result
    must map strings to tensors.
    """
    import pickle
    import warnings
    import zipfile

    try:
        size = path.stat().st_size
    except OSError as exc:
        raise _fail(path, "cannot read this file", exc) from None
    if size == 0:
        raise _refuse_bin(path, "is empty (0 bytes)")
    is_zip = zipfile.is_zipfile(path)
    try:
        with (
            warnings.catch_warnings()
        ):  # torch warns about pickle protocols; the error line is the message
            warnings.simplefilter("ignore")
            if is_zip:
                obj = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
            else:
                obj = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        reason = _torch_reason(exc)
        if "GLOBAL" in reason:
            raise _refuse_bin(
                path,
                "holds objects other than tensors (the weights-only unpickler refused them)",
                Exception(reason),
            ) from None
        what = (
            "is a corrupt PyTorch zip checkpoint"
            if is_zip
            else "is not a PyTorch checkpoint (not a zip archive, nor a pickle of tensors)"
        )
        raise _refuse_bin(path, what, Exception(reason)) from None
    except (
        Exception
    ) as exc:  # RuntimeError (bad zip records, bad magic number), EOFError (truncated), ...
        what = (
            "is a corrupt or truncated PyTorch zip checkpoint"
            if is_zip
            else "is not a PyTorch checkpoint (not a zip archive, nor a pickle of tensors)"
        )
        raise _refuse_bin(path, what, exc) from None
    if not isinstance(obj, dict):
        raise _refuse_bin(
            path, f"holds a {type(obj).__name__}, not a state dict (a mapping of names to tensors)"
        )
    for k, v in obj.items():
        if not isinstance(k, str):
            raise _refuse_bin(path, f"holds a dict with a non-string key {k!r}, not a state dict")
        if not isinstance(v, torch.Tensor):
            raise _refuse_bin(path, f"holds entry {k!r} of type {type(v).__name__}, not a tensor")
    return obj


def _torch_reason(exc: BaseException) -> str:
    """The line of torch's weights-only refusal that says what was refused (the rest is boilerplate)."""
    skip = ("Weights only load failed", "Please file an issue", "Check the documentation")
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    keep = [ln for ln in lines if not ln.startswith(skip)]
    return " ".join(keep) if keep else (lines[0] if lines else type(exc).__name__)
