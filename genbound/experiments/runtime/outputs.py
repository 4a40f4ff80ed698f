"""Outputs that never land on an input: every file a command writes is held against every file it reads
and against its other outputs, before anything is written.

Two paths name one file when their resolved paths (symlinks followed, ``..`` folded) are equal or when
they are one inode (a hard link, a bind mount, another spelling of the path). An output that names an
input (a checkpoint's weights, its ``config.json``, a corpus text, a results file read as input) would
destroy it; two outputs that name one file would lose the first one written. Both are refused as a
:class:`~genbound.errors.ParameterError` naming the option and the file.

Standard output is an output too: redirected to a file (``> FILE``, ``>> FILE``), :func:`standard_output`
names that file, so that ``>> sweep.csv`` is refused like ``--csv`` on an input (a terminal, a pipe or
``/dev/null`` is never a file of the command).

One concept: the check that a command's outputs are apart from its inputs and from one another.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "model.safetensors").write_bytes(b"weights")
>>> check_apart({"--csv": d / "model.safetensors"}, {"a checkpoint file": [d / "model.safetensors"]})
Traceback (most recent call last):
...
genbound.errors.ParameterError: --csv .../model.safetensors: is a checkpoint file of this command (.../model.safetensors); writing there would destroy it; choose another file
>>> check_apart({"--csv": d / "t.csv", "--plot": d / "./t.csv"}, {})
Traceback (most recent call last):
...
genbound.errors.ParameterError: --csv and --plot name one file (.../t.csv); give each output a file of its own
>>> standard_output() is None  # doctest's standard output is a stream, not a file
True
"""

from __future__ import annotations

import fnmatch
import os
import stat
import sys
from pathlib import Path
from typing import Iterable, Mapping

from ...errors import ParameterError

__all__ = ["check_apart", "files_in", "standard_output"]

#: At most this many entries of an input folder are looked at (a checkpoint folder holds a few).
MAX_LISTED = 10_000


def _identity(path) -> tuple[str, tuple | None]:
    """``(resolved path, (device, inode) or None when nothing exists there)``."""
    real = os.path.realpath(path)
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return real, None
    return real, (st.st_dev, st.st_ino)


def _same(a: tuple, b: tuple) -> bool:
    return a[0] == b[0] or (a[1] is not None and a[1] == b[1])


def files_in(folder, patterns: Iterable[str]) -> list[Path]:
    """The entries of ``folder`` (not recursive; at most :data:`MAX_LISTED` looked at) whose names
    match one of the shell ``patterns``; none when ``folder`` is not a readable folder."""
    pats = tuple(patterns)
    out = []
    try:
        with os.scandir(folder) as it:
            for i, entry in enumerate(it):
                if i >= MAX_LISTED:
                    break
                if any(fnmatch.fnmatchcase(entry.name, p) for p in pats):
                    out.append(Path(entry.path))
    except (OSError, ValueError):
        return []
    return out


def standard_output() -> Path | None:
    """The regular file that standard output (``sys.stdout``) writes to, when it was redirected to one
    (``> FILE``, ``>> FILE``), for :func:`check_apart`: the file's own name where the system tells it, else
    ``/dev/fd/N`` (one inode with the file). ``None`` for a terminal, a pipe, a device (``/dev/null``), a
    stream without a file descriptor, or a system without ``/dev/fd``."""
    try:
        fd = sys.stdout.fileno()
        st = os.fstat(fd)
    except (AttributeError, OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    link = Path(f"/dev/fd/{fd}")
    if _identity(link)[1] != (st.st_dev, st.st_ino):
        return None
    real = Path(os.path.realpath(link))
    return real if _identity(real)[1] == (st.st_dev, st.st_ino) else link


def check_apart(outputs: Mapping[str, object], inputs: Mapping[str, Iterable]) -> None:
    """Refuse, before anything is written, an output of ``outputs`` (option -> path, ``None`` for an
    output not asked for) that names a file of ``inputs`` (what the files are -> the paths the command
    reads, files or folders) or the same file as another output. Raises
    :class:`~genbound.errors.ParameterError` naming the option, the path and the input."""
    outs = [(opt, p, _identity(p)) for opt, p in outputs.items() if p not in (None, "")]
    if not outs:
        return
    for label, paths in inputs.items():
        for q in paths:
            ident = _identity(q)
            for opt, p, oid in outs:
                if _same(oid, ident):
                    raise ParameterError(
                        f"{opt} {p}: is {label} of this command ({q}); writing there would "
                        f"destroy it; choose another file"
                    )
    for i, (opt_a, p_a, id_a) in enumerate(outs):
        for opt_b, _p_b, id_b in outs[i + 1 :]:
            if _same(id_a, id_b):
                raise ParameterError(
                    f"{opt_a} and {opt_b} name one file ({p_a}); give each output a file of its own"
                )
