"""Bounded reading of the files genbound is handed: regular files only, a size limit per kind of file,
both checked before a byte is read.

A path that is a FIFO, a device (``/dev/zero``), a socket or a folder, directly or through a symlink,
is refused naming its kind, and it is never opened in a way that can block (``O_NONBLOCK``); a file
larger than the limit of its kind is refused from its size, and a file that grows past the limit while
it is read is cut off at ``limit + 1`` bytes and refused too, so memory stays near the limit whatever
the input. Every refusal is one error (of the class the caller names) that names the file.

One concept: reading a file of known kind with a bound (or streaming it through SHA-256,
:func:`sha256_regular`, the one file hasher of genbound).

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "config.json"
>>> _ = p.write_text("{}")
>>> read_regular(p, 10, what="config.json")[0]
b'{}'
>>> read_regular(p, 1, what="config.json", limit_name="MAX_CONFIG_BYTES")
Traceback (most recent call last):
...
genbound.errors.InputError: .../config.json: is 2 bytes, more than a config.json may be (MAX_CONFIG_BYTES = 1); not read
>>> read_regular("/dev/zero", 10, what="corpus text")
Traceback (most recent call last):
...
genbound.errors.InputError: /dev/zero: is a character device, not a regular file; a corpus text must be a regular file
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from .errors import InputError

__all__ = ["file_kind", "read_regular", "sha256_regular", "HASH_CHUNK"]

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def file_kind(mode: int) -> str | None:
    """What a file of ``mode`` is when it is not a regular file (``None`` for a regular file).

    >>> file_kind(stat.S_IFIFO), file_kind(stat.S_IFREG)
    ('a FIFO (named pipe)', None)
    """
    if stat.S_ISREG(mode):
        return None
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def _refuse_kind(path, mode: int, what: str, error: type) -> None:
    kind = file_kind(mode)
    if kind is not None:
        link = " (through a symlink)" if os.path.islink(path) else ""
        raise error(f"{path}: is {kind}{link}, not a regular file; a {what} must be a regular file")


def _stat_regular(path: Path, what: str, error: type) -> os.stat_result:
    """The ``stat`` of ``path`` (through symlinks), refused unless it is a regular file."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise error(f"{path}: no such {what}") from None
    except (OSError, ValueError) as exc:
        raise error(f"{path}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    _refuse_kind(path, st.st_mode, what, error)
    return st


def _open_regular(path: Path, what: str, error: type) -> tuple[int, os.stat_result]:
    """A descriptor of ``path`` opened non-blocking (a FIFO put in its place cannot block) and its
    ``fstat``, refused unless it is a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        _refuse_kind(path, st.st_mode, what, error)
    except OSError as exc:
        os.close(fd)
        raise error(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_regular(
    path,
    limit: int,
    *,
    what: str = "file",
    limit_name: str | None = None,
    error: type = InputError,
) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file at ``path`` (at most ``limit``) and its ``stat`` when opened.

    Its kind and size are checked with ``stat`` before it is opened, and again on the open descriptor
    (opened non-blocking, so a FIFO put in its place meanwhile cannot block); it is read in chunks and
    refused as soon as it holds more than ``limit`` bytes. Raises ``error`` (a
    :class:`~genbound.errors.GenboundError` class, default :class:`~genbound.errors.InputError`)
    naming the file, ``what`` it should be and the limit (``limit_name`` when given)."""
    path = Path(path)
    bound = f"{limit_name} = {limit}" if limit_name else f"the limit, {limit} bytes"
    st = _stat_regular(path, what, error)
    if st.st_size > limit:
        raise error(f"{path}: is {st.st_size} bytes, more than a {what} may be ({bound}); not read")
    fd, st = _open_regular(path, what, error)
    try:
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise error(f"{path}: holds more than a {what} may ({bound}); not read")
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    return b"".join(chunks), st


#: The chunk :func:`sha256_regular` reads at a time: memory stays at one chunk whatever the file's size.
HASH_CHUNK = 1 << 20


def sha256_regular(
    path, *, what: str = "file", error: type = InputError
) -> tuple[str, int, os.stat_result]:
    """The SHA-256 (hex) of the regular file at ``path``, the bytes hashed and its ``stat`` when opened:
    the one streaming hasher of genbound (the file is read in chunks of :data:`HASH_CHUNK`, never
    whole into memory). Refused as :func:`read_regular` refuses (a FIFO, a device, a folder), with
    ``error`` naming the file.

    >>> import hashlib, tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "model.safetensors"
    >>> _ = p.write_bytes(b"abc" * 1000)
    >>> digest, size, _ = sha256_regular(p)
    >>> digest == hashlib.sha256(b"abc" * 1000).hexdigest(), size
    (True, 3000)
    """
    path = Path(path)
    _stat_regular(path, what, error)
    fd, st = _open_regular(path, what, error)
    h, total = hashlib.sha256(), 0
    try:
        while chunk := os.read(fd, HASH_CHUNK):
            h.update(chunk)
            total += len(chunk)
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    return h.hexdigest(), total, st
