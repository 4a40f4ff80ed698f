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
* sharded checkpoints (``model.safetensors.index.json`` or ``pytorch_model.bin.index.json``): the
  index must map names to shard files inside the folder (judged by the entry's own path, so the Hugging
  Face cache's shards, symlinks from the snapshot folder into ``../../blobs``, are accepted, while an
  entry such as ``../x.safetensors`` is not), every shard must exist and hold the tensors the index
  assigns to it, and no tensor may be in two shards (:func:`sharded_safetensors`,
  :func:`sharded_bin`);
* **one reading of each file**: every weight file is opened once (:class:`CheckpointFile`) and every
  tensor is read through that descriptor; before each read the file must still be the one opened
  (same device, inode, size and modification time, and the path still naming it), so a checkpoint
  replaced or rewritten on disk mid-run is an error, never a report mixing two versions;
* ``pytorch_model.bin`` archives: every zip member's declared sizes are checked before anything is
  inflated; compressed members (``torch.save`` writes none) may inflate to at most the bytes the
  config implies (:func:`config_bytes_bound`), so a decompression bomb is refused before it costs
  memory;
* paths are the OS's bytes: a folder whose name is not valid UTF-8 is read like any other (the
  libraries get ``/proc/self/fd/N`` of the open file, not the name).

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

One concept: checkpoint files read safely and once (headers, shards, symlinks, zip members).
"""

from __future__ import annotations

import json
import math
import os
import struct
import weakref
from dataclasses import dataclass
from pathlib import Path

import torch

from ..errors import CheckpointError
from ..reading import file_kind, read_regular

__all__ = [
    "TensorInfo",
    "read_json",
    "safetensors_header",
    "sharded_safetensors",
    "load_torch_state_dict",
    "sharded_bin",
    "config_bytes_bound",
    "inside_folder",
    "CheckpointFile",
    "SAFETENSORS_DTYPES",
    "MAX_JSON_BYTES",
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
    """What a checkpoint says about one tensor before it is read: its file, shape and dtype (and, for
    safetensors, the open file and the tensor's byte offset in it)."""

    file: Path | None
    shape: tuple[int, ...]
    dtype: str
    floating: bool
    handle: "CheckpointFile | None" = None
    offset: int = 0


_TORCH_DTYPES = {
    "F64": "float64",
    "F32": "float32",
    "F16": "float16",
    "BF16": "bfloat16",
    "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U64": "uint64",
    "U32": "uint32",
    "U16": "uint16",
    "U8": "uint8",
    "BOOL": "bool",
}

#: The most bytes read of a ``config.json`` (real ones are a few KB) and of a shard index (a few MB for
#: the largest models); a larger file is refused from its size, before it is read.
MAX_JSON_BYTES = {"config.json": 4 * 2**20, "index": 32 * 2**20}


class CheckpointFile:
    """A weight file opened once for a whole run: its descriptor, and its identity when opened
    (device, inode, size, modification time). :meth:`check` raises when the file changed or the path
    names another file now; :meth:`read_tensor` reads one tensor through the descriptor.

    Opened without following FIFOs into a block (``O_NONBLOCK``); anything but a regular file is
    refused naming its kind. The descriptor is closed when the object is collected."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | os.O_CLOEXEC)
        except OSError as exc:
            raise _fail(path, "cannot be opened", exc) from None
        self.fd = fd
        self._closer = weakref.finalize(self, os.close, fd)
        st = os.fstat(fd)
        if (what := file_kind(st.st_mode)) is not None:
            self._closer()
            raise _fail(path, f"is {what}, not a weight file")
        self.stamp = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        self.size = st.st_size

    @property
    def proc_path(self) -> str:
        """A name of the open file that any library can open (``/proc/self/fd/N`` on Linux: plain
        ASCII whatever the real name, and the same file even if the path is renamed over)."""
        p = f"/proc/self/fd/{self.fd}"
        return p if os.path.exists(p) else os.fsdecode(os.fsencode(self.path))

    def check(self) -> None:
        """Raise :class:`CheckpointError` when the file changed since it was opened (size or
        modification time) or the path now names another file."""
        st = os.fstat(self.fd)
        now = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        try:
            pst = os.stat(self.path)
            same_path = (pst.st_dev, pst.st_ino) == self.stamp[:2]
        except OSError:
            same_path = False
        if now != self.stamp or not same_path:
            what = "was rewritten" if now != self.stamp else "was replaced by another file"
            raise _fail(
                self.path,
                f"{what} on disk during this run; every number must come from one version of the "
                f"checkpoint, so nothing is reported; rerun when the file is settled",
            )

    def read_tensor(self, info: TensorInfo) -> torch.Tensor:
        """The tensor ``info`` describes, read through the open descriptor (checked before and
        after the read)."""
        self.check()
        item = SAFETENSORS_DTYPES[info.dtype][0]
        n = math.prod(info.shape) * item
        buf = torch.empty(n, dtype=torch.uint8)
        if n:
            view = memoryview(buf.numpy())
            done = 0
            while done < n:
                got = os.preadv(self.fd, [view[done:]], info.offset + done)
                if got <= 0:
                    raise _fail(
                        self.path, "ended while reading a tensor (truncated during the run)"
                    )
                done += got
        self.check()
        return buf.view(getattr(torch, _TORCH_DTYPES[info.dtype])).reshape(info.shape)


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
    """The JSON object in ``path``, or a :class:`CheckpointError` saying why not (a regular file of at
    most :data:`MAX_JSON_BYTES` of its kind, checked before it is read)."""
    limit = MAX_JSON_BYTES["config.json" if what == "config.json" else "index"]
    raw = read_regular(path, limit, what=what, limit_name="MAX_JSON_BYTES", error=CheckpointError)[
        0
    ]
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


def safetensors_header(path: Path, handle: CheckpointFile | None = None) -> dict[str, TensorInfo]:
    """Validate a safetensors file's layout and return ``{name: TensorInfo}``.

    Checks, against the file's size: the 8-byte little-endian header length, that the header is a
    UTF-8 JSON object, and for every tensor a known dtype, a shape of non-negative integers, and data
    offsets ``[begin, end]`` with ``end - begin = prod(shape) * itemsize`` that tile the data region
    exactly (as the format requires). Only the header is read. The file is opened once
    (:class:`CheckpointFile`, or ``handle``) and every tensor is later read through it.
    """
    handle = CheckpointFile(path) if handle is None else handle
    size = handle.size
    try:
        head = os.pread(handle.fd, 8, 0)
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
            raise _fail(path, f"claims a {n}-byte header, more than the format allows (corrupt)")
        if 8 + n > size:
            raise _fail(
                path,
                f"claims a {n}-byte header but the file has only {size - 8} bytes after "
                f"the length field (truncated or corrupt)",
            )
        raw = os.pread(handle.fd, n, 8)
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
        out[name] = TensorInfo(
            file=path,
            shape=tuple(shape),
            dtype=dtype,
            floating=floating,
            handle=handle,
            offset=8 + n + offs[0],
        )
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
    _check_opens(path, handle)
    return out


def _check_opens(path: Path, handle: CheckpointFile) -> None:
    """Let safetensors itself validate the file too (the open one, through ``/proc/self/fd``); any
    failure becomes a :class:`CheckpointError`."""
    from safetensors import safe_open

    try:
        with safe_open(handle.proc_path, framework="pt", device="cpu"):
            pass
    except (
        Exception
    ) as exc:  # safetensors raises its own SafetensorError and OSError; all mean "unusable"
        raise _fail(path, "is not a valid safetensors file", exc) from None


def read_safetensor(path, name: str) -> torch.Tensor:
    """One tensor of a validated safetensors file: through its open :class:`CheckpointFile` when
    ``path`` is a :class:`TensorInfo` that has one (the file checked unchanged before and after),
    else through a fresh memory map (released at once)."""
    if isinstance(path, TensorInfo):
        if path.handle is not None:
            return path.handle.read_tensor(path)
        path = path.file
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt", device="cpu") as f:
            return f.get_tensor(name)
    except Exception as exc:  # the file changed since it was validated, or the OS failed
        raise _fail(path, f"cannot read tensor {name!r}", exc) from None


def inside_folder(fname: str) -> bool:
    """Whether an index entry ``fname`` names a file inside the checkpoint folder, judged by the
    entry itself (relative, no ``..`` leaving the folder), not by where a symlink there points: the
    Hugging Face cache keeps shards as symlinks into ``../../blobs``.

    >>> [inside_folder(f) for f in ("a.safetensors", "sub/a.bin", "../a.bin", "/etc/a", "x/../../a")]
    [True, True, False, False, False]
    """
    if not fname or os.path.isabs(fname) or "\x00" in fname:
        return False
    norm = os.path.normpath(fname)
    return norm not in (".", "..") and not norm.startswith(".." + os.sep)


def _index_shards(folder: Path, index_path: Path, what: str) -> dict[str, list[str]]:
    """``{shard file name: [tensor names]}`` of a sharded checkpoint's index, every entry checked."""
    index = read_json(index_path, what=what)
    wmap = index.get("weight_map")
    if not isinstance(wmap, dict) or not wmap:
        raise _fail(index_path, "has no 'weight_map' object mapping tensor names to shard files")
    shards: dict[str, list[str]] = {}
    for name, fname in wmap.items():
        if not isinstance(fname, str) or not fname:
            raise _fail(index_path, f"maps tensor {name!r} to {fname!r}, not a file name")
        if not inside_folder(fname):
            raise _fail(
                index_path,
                f"maps tensor {name!r} to {fname!r}, which is outside the checkpoint folder",
            )
        shards.setdefault(fname, []).append(name)
    for fname, names in sorted(shards.items()):
        if not (folder / fname).is_file():
            raise _fail(
                index_path,
                f"names shard {fname!r}, which does not exist in {str(folder)!r} "
                f"({len(names)} tensors, e.g. {names[0]!r})",
            )
    return shards


def _no_tensor_twice(found: dict[str, str], shard: str, names, index_path: Path) -> None:
    """Record ``names`` as held by ``shard``; refuse a name another shard holds too."""
    for n in names:
        other = found.setdefault(n, shard)
        if other != shard:
            raise _fail(
                index_path,
                f"tensor {n!r} is in two shards, {other!r} and {shard!r}; which copy the model "
                f"uses depends on the loader, so genbound refuses to pick one",
            )


def sharded_safetensors(folder: Path, index_path: Path) -> dict[str, TensorInfo]:
    """``{name: TensorInfo}`` of a sharded checkpoint described by ``model.safetensors.index.json``."""
    shards = _index_shards(folder, index_path, "safetensors index")
    out: dict[str, TensorInfo] = {}
    found: dict[str, str] = {}
    for fname, names in sorted(shards.items()):
        shard = folder / fname
        header = safetensors_header(shard)
        missing = [n for n in names if n not in header]
        if missing:
            raise _fail(
                shard,
                f"lacks {len(missing)} tensors that {index_path.name} assigns to it, e.g. {missing[0]!r}",
            )
        _no_tensor_twice(found, fname, header, index_path)
        for n in names:
            out[n] = header[n]
    return out


def sharded_bin(
    folder: Path, index_path: Path, *, max_inflated: int | None = None
) -> tuple[dict[str, torch.Tensor], list[CheckpointFile]]:
    """The state dict of a sharded ``pytorch_model.bin.index.json`` checkpoint (each shard loaded by
    :func:`load_torch_state_dict`) and the open shard files (for :meth:`CheckpointFile.check`)."""
    shards = _index_shards(folder, index_path, "PyTorch index")
    out: dict[str, torch.Tensor] = {}
    found: dict[str, str] = {}
    handles = []
    for fname, names in sorted(shards.items()):
        shard = folder / fname
        sd, handle = load_torch_state_dict(shard, max_inflated=max_inflated, with_handle=True)
        handles.append(handle)
        missing = [n for n in names if n not in sd]
        if missing:
            raise _fail(
                shard,
                f"lacks {len(missing)} tensors that {index_path.name} assigns to it, e.g. {missing[0]!r}",
            )
        _no_tensor_twice(found, fname, sd, index_path)
        for n in names:
            out[n] = sd[n]
    return out, handles


def _refuse_bin(path, what: str, exc: BaseException | None = None) -> CheckpointError:
    return _fail(
        path,
        f"{what}; genbound loads .bin files only with torch.load(weights_only=True), so nothing "
        f"in it was executed; save the model as safetensors (save_pretrained writes "
        f"model.safetensors) and point genbound at that",
        exc,
    )


def config_bytes_bound(config) -> int:
    """A generous upper bound on the bytes of the tensors a config implies: every size key it has
    (width, feed-forward width, layers, vocabulary, positions), float64 storage, twice over, plus 16
    MiB. Used to refuse compressed ``.bin`` members that would inflate beyond any model of that
    config (a decompression bomb).

    >>> config_bytes_bound({"hidden_size": 8, "num_hidden_layers": 2, "intermediate_size": 12,
    ...                     "vocab_size": 64}) < 2**25
    True
    """

    def first(*keys, default=0):
        for k in keys:
            v = config.get(k) if isinstance(config, dict) else getattr(config, k, None)
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                return v
        return default

    n = first("hidden_size", "n_embd", "dim", "d_model", "embed_dim", default=1)
    f = first("intermediate_size", "n_inner", "hidden_dim", "ffn_dim", "d_ff", default=4 * n)
    layers = first("num_hidden_layers", "n_layer", "n_layers", "num_layers", default=1)
    rows = sum(
        first(k)
        for k in ("vocab_size", "max_position_embeddings", "n_positions", "type_vocab_size")
    )
    params = layers * (4 * n * n + 2 * n * f + 10 * n + 2 * f) + (rows + 2) * n + n * n + 1024
    return 2 * 8 * params + 16 * 2**20


def _check_zip_members(path: Path, fileobj, size: int, max_inflated: int) -> bool:
    """Check a ``.bin`` zip archive's members before anything is inflated: a stored member's declared
    size must equal its stored bytes, and compressed members (``torch.save`` writes none) may
    inflate, in all, to at most ``max_inflated`` bytes. Returns whether any member is compressed."""
    import zipfile

    try:
        with zipfile.ZipFile(fileobj) as zf:
            members = zf.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise _refuse_bin(path, "is a corrupt or truncated PyTorch zip checkpoint", exc) from None
    inflated = 0
    compressed = False
    for m in members:
        if m.compress_type == zipfile.ZIP_STORED:
            if m.file_size != m.compress_size:
                raise _refuse_bin(
                    path,
                    f"is a corrupt PyTorch zip checkpoint: member {m.filename!r} is stored "
                    f"uncompressed but declares {m.file_size} bytes for {m.compress_size} stored",
                )
            if m.header_offset + m.compress_size > size:
                raise _refuse_bin(
                    path,
                    f"is a truncated PyTorch zip checkpoint: member {m.filename!r} ends past the "
                    f"end of the file",
                )
            continue
        compressed = True
        inflated += m.file_size
        if inflated > max_inflated:
            raise _refuse_bin(
                path,
                f"holds compressed members that would inflate to more than {max_inflated} bytes "
                f"(at {m.filename!r}: {m.file_size} bytes from {m.compress_size}), more than the "
                f"tensors its config implies; refused before inflating (a decompression bomb?)",
            )
    return compressed


def load_torch_state_dict(
    path: Path, *, max_inflated: int | None = None, with_handle: bool = False
):
    """The state dict in a ``pytorch_model.bin``, loaded without executing anything in the file.

    ``torch.load(weights_only=True)``: the restricted unpickler builds only tensors, storages and plain
    containers, and raises on any other global (``os.system``, a class, a function) before calling
    it. The file is opened once (:class:`CheckpointFile`); a zip archive's members are checked first
    (:func:`_check_zip_members`; compressed members may inflate to at most ``max_inflated`` bytes,
    default the file's own size) and then memory-mapped (read lazily); the legacy format is read
    whole. The result must map strings to tensors. ``with_handle``: also return the open file.
    """
    import pickle
    import warnings
    import zipfile

    handle = CheckpointFile(path)
    size = handle.size
    if size == 0:
        raise _refuse_bin(path, "is empty (0 bytes)")
    with os.fdopen(os.dup(handle.fd), "rb") as fh:
        is_zip = zipfile.is_zipfile(fh)
        compressed = False
        if is_zip:
            fh.seek(0)
            limit = size if max_inflated is None else max_inflated
            compressed = _check_zip_members(path, fh, size, limit)
        try:
            with (
                warnings.catch_warnings()
            ):  # torch warns about pickle protocols; the error line is the message
                warnings.simplefilter("ignore")
                if is_zip and not compressed:
                    obj = torch.load(
                        handle.proc_path, map_location="cpu", weights_only=True, mmap=True
                    )
                else:
                    fh.seek(0)
                    obj = torch.load(fh, map_location="cpu", weights_only=True)
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
        except MemoryError:
            raise _refuse_bin(path, "needs more memory than this machine has to load") from None
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
    handle.check()
    return (obj, handle) if with_handle else obj


def _torch_reason(exc: BaseException) -> str:
    """The line of torch's weights-only refusal that says what was refused (the rest is boilerplate)."""
    skip = ("Weights only load failed", "Please file an issue", "Check the documentation")
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    keep = [ln for ln in lines if not ln.startswith(skip)]
    return " ".join(keep) if keep else (lines[0] if lines else type(exc).__name__)
