"""The one-writer lock of a results file: a sidecar lock file beside it, held with ``fcntl.flock``.

The lock file is the results file's own, and nothing else is ever written through it:

* it is opened with ``O_NOFOLLOW`` (a planted symlink ``.NAME.lock`` is refused, its target never
  opened), non-blocking (a FIFO in its place cannot block), and must be a regular file with one link
  (a hard link to another file is refused) holding nothing but a pid (a file with other content is
  refused);
* it is never truncated: the holder's pid is written over the first bytes, padded to a fixed width,
  and blanked when the lock is released;
* its name fits any legal results name: ``.NAME.lock`` when that is at most 255 bytes, else a name
  made of a hash of ``NAME`` (:func:`~genbound.experiments.runtime.locks.sidecar_name`; the temporary file of a new results file uses the
  same rule).

The kernel releases a flock when its holder exits or is killed, so a stale lock file never blocks.

One concept: the lock that makes one process the writer of a results file.

>>> sidecar_name("sweep.csv", ".lock")
'.sweep.csv.lock'
>>> len(sidecar_name("x" * 254, ".lock")) <= 255
True
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import time
from pathlib import Path

from ...errors import ResultsFileError

__all__ = ["lock_path", "sidecar_name", "MAX_NAME_BYTES"]

#: The longest file name (in bytes) the common file systems take.
MAX_NAME_BYTES = 255
#: The width of the pid record in a lock file (digits, padded with blanks, then a newline).
_PID_WIDTH = 24

_HELD: dict = {}  # lock key -> [fd, number of writers of this process, pid]


def sidecar_name(name: str, suffix: str, room: int = 0) -> str:
    """The name of a hidden file beside the file ``name``: ``.NAME`` + ``suffix`` when it fits in
    :data:`MAX_NAME_BYTES` with ``room`` bytes to spare, else ``.genbound-`` + a hash of ``name`` +
    ``suffix`` (one name for one results name, whatever its length)."""
    plain = f".{name}{suffix}"
    if len(os.fsencode(plain)) + room <= MAX_NAME_BYTES:
        return plain
    digest = hashlib.sha256(os.fsencode(name)).hexdigest()[:40]
    return f".genbound-{digest}{suffix}"


def lock_path(path) -> Path:
    """The sidecar lock file of the results file at ``path``: ``.NAME.lock`` beside it (a hashed
    name when that would be longer than a file name may be, :func:`~genbound.experiments.runtime.locks.sidecar_name`)."""
    path = Path(path)
    return path.with_name(sidecar_name(path.name, ".lock"))


def _holder(lock: Path, wait: float = 1.0) -> str:
    """Who holds ``lock``: ``"pid N"`` from the lock file. The holder writes its pid just after it takes
    the lock, so an empty file is read again for up to ``wait`` seconds before the answer falls back to
    ``"another process"``. Read without following a symlink and without blocking."""
    deadline = time.monotonic() + wait
    while True:
        text = ""
        try:
            fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            try:
                if stat.S_ISREG(os.fstat(fd).st_mode):
                    text = os.read(fd, 64).decode("ascii", "replace").strip()
            finally:
                os.close(fd)
        except OSError:
            pass
        if text.isdigit():
            return f"pid {text}"
        if time.monotonic() >= deadline:
            return "another process"
        time.sleep(0.02)


def _open_lock(path: Path, lock: Path) -> int:
    """The descriptor of ``lock``, created if missing, refused unless it is a regular file of one link
    that holds at most a pid record (never following a symlink, never blocking, never truncating)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(str(lock), flags, 0o644)
    except OSError as exc:
        if lock.is_symlink():
            raise ResultsFileError(
                f"{path}: its lock file {lock.name} is a symlink; a lock file is never followed "
                f"(remove the symlink and rerun)"
            ) from None
        raise ResultsFileError(
            f"{path}: cannot create its lock file {lock.name} ({exc.strerror or exc})"
        ) from None
    try:
        st = os.fstat(fd)
        problem = None
        if not stat.S_ISREG(st.st_mode):
            problem = "is not a regular file"
        elif st.st_nlink != 1:
            problem = f"has {st.st_nlink} links (a hard link to another file)"
        elif st.st_size > _PID_WIDTH or not re.fullmatch(
            rb"[0-9]*[ \n]*", os.pread(fd, _PID_WIDTH + 1, 0)
        ):
            problem = "holds something other than a genbound writer's pid"
        if problem:
            raise ResultsFileError(
                f"{path}: its lock file {lock.name} {problem}; it is left untouched (remove it, or "
                f"write to another results file)"
            )
    except BaseException:
        os.close(fd)
        raise
    return fd


def _acquire(path: Path) -> str:
    """Take the advisory lock of the results file ``path`` (``fcntl.flock``, exclusive, not waiting) and
    write this process's pid into the lock file; returns the lock's key for :func:`_release`. A lock this
    process already holds is shared by its writers. Raises :class:`~genbound.errors.ResultsFileError`
    naming the holder's pid when another process writes the file, or when the lock file is not a lock
    file (a symlink, a hard link, a FIFO, a file with other content). Where ``fcntl`` does not exist
    (Windows) nothing is locked."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return ""
    path = Path(path)
    lock = lock_path(path)
    key = str(lock.parent.resolve() / lock.name)
    if key in _HELD and _HELD[key][2] == os.getpid():
        _HELD[key][1] += 1
        return key
    fd = _open_lock(path, lock)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise ResultsFileError(
            f"{path}: another process ({_holder(lock)}) is writing this results file; "
            f"wait until it ends and rerun to resume, or write a shard of your own and "
            f"merge"
        ) from None
    os.pwrite(fd, _pid_record(os.getpid()), 0)
    _HELD[key] = [fd, 1, os.getpid()]
    return key


def _pid_record(pid: int | None) -> bytes:
    """The fixed-width record a lock file holds: the pid (or blanks), padded, then a newline."""
    return ("" if pid is None else str(pid)).ljust(_PID_WIDTH - 1).encode() + b"\n"


def _release(key: str) -> None:
    held = _HELD.get(key)
    if not key or held is None or held[2] != os.getpid():
        return
    held[1] -= 1
    if held[1] <= 0:
        del _HELD[key]
        try:
            os.pwrite(held[0], _pid_record(None), 0)
        except OSError:
            pass
        os.close(held[0])  # closing the descriptor releases the flock
