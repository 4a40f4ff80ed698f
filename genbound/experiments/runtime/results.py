"""One results file for every experiment: whole rows, the full configuration recorded, resumes that match it.

A results file is UTF-8 text: a first line naming the format, the **header** (one JSON object on
comment lines: the experiment, the key columns, every field of the run's configuration, the
environment that produced it and free-form notes), the column line, and one CSV row per finished
unit of work (a trained model)::

    # genbound results file (format 1)
    # {"experiment": "sparse-majority", "key": ["seq_len", "seed"], "config": {...},
    #  "environment": {"genbound": "0.1.0", "commit": "...", "torch": "...", "threads": 1, ...}}
    seq_len,seed,protocol,...
    16,0,adam,...

Guarantees (:func:`open_results` and :func:`read_results`):

* **Whole rows.** A new file is written to a temporary file and renamed into place, so it appears
  with its header or not at all. Rows are appended with one ``write`` per batch of rows, then
  ``flush`` and ``fsync``; every row ends with a newline.
* **Unfinished rows are re-run.** On reading, a last row that does not end with a newline (cut
  mid-row) or does not parse is *reported* (never counted as finished) and left out; a resume drops it
  from the file before appending, so the unit is trained again.
* **Nothing is mixed.** A resume whose configuration or environment differs from the header in any
  field is refused, naming every field that differs; so is a file of another experiment or one whose
  columns differ from what this genbound writes.
* **One writer.** A process that opens a file for appending holds its advisory lock (``fcntl.flock`` on
  the sidecar ``.NAME.lock``, with the holder's pid in it) until it ends; a second process is refused at
  once, naming that pid. The kernel drops the lock of a killed process, so a stale lock file never
  blocks a resume. The lock file is never followed through a symlink nor truncated
  (:mod:`~genbound.experiments.runtime.locks`). Parallel processes write a file each and merge them.
* **What reproduces a row is recorded.** The environment names the commit, torch and its BLAS, the
  thread count, the device and the CPU kind (model, kernel-selecting flags, torch's CPU capability);
  ``column_commits`` names the commit of every column recomputed after the run
  (:func:`~genbound.experiments.runtime.machine.column_commits`). :func:`~genbound.experiments.runtime.machine.same_machine_kind` says whether an exact rerun can be expected here.
* **Only regular files, read with a limit.** A results path that is a FIFO, a device, a socket or a
  folder (or a symlink to one) is refused naming its kind, before it is opened (so a FIFO never
  blocks and ``/dev/zero`` is never read); a file larger than :data:`MAX_RESULTS_BYTES` is refused
  before it is read.
* **A run appends only to its own file.** :func:`open_results` records the file's identity (device,
  inode, size and the bytes of its header); before each append, under the lock, the file at the path
  must still be that file, with the size this run left it at: a file replaced (renamed over,
  copied over, edited, truncated) mid-run is refused and nothing is appended to it.
* **Errors name the line.** A row that does not match the columns (elsewhere than last), or a key that
  occurs twice, is a :class:`~genbound.errors.ResultsFileError` naming the line. A file that is not a
  results file (random bytes, a plain CSV, an empty file) or a path that cannot be written is one too;
  an existing file is never modified when an error is raised.

The same reader serves the book's chapters, the ``--saved`` commands and the resumes.

>>> import tempfile, pathlib
>>> schema = Schema("demo", (("n", int), ("seed", int), ("loss", float)), key=("n", "seed"))
>>> path = pathlib.Path(tempfile.mkdtemp()) / "demo.csv"
>>> w = open_results(path, schema, {"steps": 10}, environment={"threads": 1})
>>> w.append([{"n": 4, "seed": 0, "loss": 0.5}])
>>> t = read_results(path, schema)
>>> t.keys, t.config, t.incomplete
({(4, 0)}, {'steps': 10}, None)
>>> open_results(path, schema, {"steps": 20}, environment={"threads": 1})
Traceback (most recent call last):
...
genbound.errors.ResultsFileError: ...demo.csv: this run's configuration differs from the one recorded in the file in 1 field: steps (file 10, this run 20); resume with the recorded configuration or write to a new file

One concept: the results file (its format, writing, reading, resuming, merging and the environment
record), kept whole because every guarantee above spans those steps.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import stat
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from ...errors import ResultsFileError, shorten as _short
from ...reading import file_kind, read_regular
from .locks import _acquire, _release, lock_path, sidecar_name
from .machine import _normal, environment

__all__ = [
    "MAGIC",
    "FORMAT",
    "Schema",
    "ResultsTable",
    "ResultsWriter",
    "ResultsFileWarning",
    "read_results",
    "open_results",
    "attach_header",
    "lock_path",
    "merge_results",
    "results_file_kind",
    "MAX_RESULTS_BYTES",
]

#: The largest results file read (the saved family, the largest, is a few MB); larger is refused.
MAX_RESULTS_BYTES = 512 * 2**20

#: The first line of every results file starts with this.
MAGIC = "# genbound results file"
#: The format version written in the first line.
FORMAT = 1

_TYPES = (int, float, bool, str)


class ResultsFileWarning(UserWarning):
    """An unfinished last row was left out of a results file read (it will be re-run)."""


@dataclass(frozen=True)
class Schema:
    """What one experiment writes: its name, the typed columns (``(name, type)`` with type ``int``,
    ``float``, ``bool`` or ``str``, in the order they are written), the key columns (one run id: no two
    rows may share it) and ``optional`` columns that an older file may lack (read as NaN; a resume
    still needs every column)."""

    experiment: str
    columns: tuple[tuple[str, type], ...]
    key: tuple[str, ...]
    optional: frozenset = field(default_factory=frozenset)

    def __post_init__(self):
        names = [n for n, _ in self.columns]
        if len(set(names)) != len(names):
            raise ValueError(f"schema {self.experiment!r}: duplicate column names")
        bad = [n for n, t in self.columns if t not in _TYPES]
        if bad:
            raise ValueError(f"schema {self.experiment!r}: unsupported column type for {bad}")
        if not set(self.key) <= set(names) or set(self.key) & set(self.optional):
            raise ValueError(f"schema {self.experiment!r}: key columns must be required columns")

    @property
    def names(self) -> list[str]:
        """The column names, in writing order."""
        return [n for n, _ in self.columns]

    def type_of(self, name: str) -> type:
        return dict(self.columns)[name]

    def key_of(self, row: dict) -> tuple:
        """The key of ``row`` as the file holds it: each key column written and read back, so that a
        setting dict with extra fields, or with ``1`` where the column is a float, finds its row."""
        return tuple(_parse(_fmt(row[k], self.type_of(k), k), self.type_of(k)) for k in self.key)


@dataclass(frozen=True)
class ResultsTable:
    """A results file as read by :func:`read_results`: the ``header`` (a dict), the file's ``columns``,
    the finished ``rows`` (dicts of typed values) and the ``lines`` they are on (1-based),
    ``incomplete`` (a message if an unfinished last row was left out, else ``None``) and
    ``complete_bytes`` (the length of the file up to the end of its last finished row)."""

    path: Path
    header: dict
    columns: tuple[str, ...]
    rows: list[dict]
    lines: list[int]
    incomplete: str | None
    complete_bytes: int
    schema: Schema = field(repr=False)
    identity: tuple | None = field(default=None, repr=False, compare=False)

    @property
    def config(self) -> dict:
        """The recorded configuration of the run."""
        return self.header["config"]

    @property
    def environment(self) -> dict:
        """The recorded environment (genbound version, commit, torch, threads, device)."""
        return self.header["environment"]

    @property
    def keys(self) -> set[tuple]:
        """The keys (run ids) of the finished rows."""
        return {tuple(r[k] for k in self.schema.key) for r in self.rows}

    def frame(self):
        """The finished rows as a pandas DataFrame, columns in the schema's order, typed (``int64``,
        ``float64``, ``bool``, ``object`` for strings); optional columns the file lacks are NaN."""
        import numpy as np
        import pandas as pd

        dtypes = {int: "int64", float: "float64", bool: "bool", str: "object"}
        data = {}
        for name, typ in self.schema.columns:
            if name in self.columns:
                data[name] = pd.Series([r[name] for r in self.rows], dtype=dtypes[typ])
            else:
                data[name] = pd.Series(np.full(len(self.rows), np.nan), dtype="float64")
        return pd.DataFrame(data)


# ---------------------------------------------------------------------------------------------- values
def _fmt(value, typ, name) -> str:
    if typ is bool:
        if not isinstance(value, bool):
            raise ResultsFileError(f"column {name!r} needs True/False, got {value!r}")
        return "True" if value else "False"
    if typ is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return str(int(value))
            raise ResultsFileError(f"column {name!r} needs an integer, got {value!r}")
        return str(int(value))
    if typ is float:
        if isinstance(value, bool):
            raise ResultsFileError(f"column {name!r} needs a number, got {value!r}")
        return repr(float(value))
    text = str(value)
    if not text or "\n" in text or "\r" in text:
        raise ResultsFileError(f"column {name!r} needs a non-empty one-line string, got {value!r}")
    return text


def _parse(text: str, typ):
    if typ is float:
        return math.nan if text == "" else float(text)
    if typ is int:
        return int(text)
    if typ is bool:
        low = text.lower()
        if low not in ("true", "false"):
            raise ValueError(f"not True/False: {text!r}")
        return low == "true"
    if not text:
        raise ValueError("empty string")
    return text


def _split_csv(line: str) -> list[str]:
    rows = list(csv.reader([line], strict=True))
    if len(rows) != 1:
        raise ValueError("not one CSV row")
    return rows[0]


# ---------------------------------------------------------------------------------------------- reading
def read_results(
    path, schema: Schema, *, report: Callable[[str], None] | None = None
) -> ResultsTable:
    """Read the results file at ``path`` written for ``schema`` (only reads; never modifies it).

    Raises :class:`~genbound.errors.ResultsFileError` naming the file (and the line) when it is missing,
    empty, not UTF-8, not a genbound results file, of another experiment, with other columns, with a
    row that does not match the columns anywhere but last, or with a duplicate key. An unfinished last
    row (cut mid-row, or not parsing) is left out and reported through ``report`` (default: a
    :class:`ResultsFileWarning`); ``ResultsTable.incomplete`` holds the message.
    """
    path = Path(path)
    data, identity = _read_regular(path)
    if not data:
        raise ResultsFileError(f"{path}: empty file, not a genbound results file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ResultsFileError(f"{path}: not a genbound results file (not UTF-8 text)") from None
    if "\x00" in text.split("\n", 1)[0] or not text.startswith(MAGIC):
        raise ResultsFileError(
            f"{path}: not a genbound results file (its first line does not start with {MAGIC!r})"
        )
    first = text.split("\n", 1)[0]
    if first != f"{MAGIC} (format {FORMAT})":
        raise ResultsFileError(
            f"{path}: its first line says {_short(first[len(MAGIC) :].strip() or 'no format')}, "
            f"this genbound reads and appends to results files of format {FORMAT} only; write to "
            f"a new file"
        )
    lines = text.split("\n")  # the last element is "" when the file ends with a newline
    ends_complete = lines[-1] == ""
    if ends_complete:
        lines = lines[:-1]
    # header: the magic line, then comment lines holding one JSON object
    i = 1
    chunks = []
    while i < len(lines) and lines[i].startswith("#"):
        chunks.append(lines[i][1:])
        i += 1
    if i >= len(lines) or (i == len(lines) - 1 and not ends_complete):
        raise ResultsFileError(
            f"{path}: the header or the column line is cut off (no complete column line)"
        )
    try:
        header = json.loads("\n".join(chunks))
    except ValueError as exc:
        raise ResultsFileError(
            f"{path}: the header (lines 2-{i}) is not valid JSON ({exc})"
        ) from None
    if not isinstance(header, dict) or not {"experiment", "key", "config", "environment"} <= set(
        header
    ):
        raise ResultsFileError(
            f"{path}: the header (lines 2-{i}) lacks experiment, key, config or environment"
        )
    if header["experiment"] != schema.experiment:
        raise ResultsFileError(
            f"{path}: holds results of experiment {header['experiment']!r}, "
            f"not {schema.experiment!r}"
        )
    if list(header["key"]) != list(schema.key):
        raise ResultsFileError(
            f"{path}: key columns {header['key']} differ from {list(schema.key)}"
        )
    col_line_no = i + 1
    try:
        columns = tuple(_split_csv(lines[i]))
    except (ValueError, csv.Error) as exc:
        raise ResultsFileError(
            f"{path}: line {col_line_no}: the column line does not parse ({exc})"
        ) from None
    known = set(schema.names)
    unknown = [c for c in columns if c not in known]
    missing = [c for c in schema.names if c not in columns and c not in schema.optional]
    if len(set(columns)) != len(columns):
        raise ResultsFileError(f"{path}: line {col_line_no}: duplicate column names")
    if unknown or missing:
        parts = ([f"missing column(s) {missing}"] if missing else []) + (
            [f"unknown column(s) {unknown}"] if unknown else []
        )
        raise ResultsFileError(
            f"{path}: line {col_line_no}: {'; '.join(parts)} for a {schema.experiment} results file"
        )
    types = [schema.type_of(c) for c in columns]
    # the byte offset of every line start, to know where the finished rows end
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln.encode("utf-8")) + 1)
    rows, row_lines, seen = [], [], {}
    incomplete = None
    body = range(i + 1, len(lines))
    complete_bytes = offsets[len(lines)] if ends_complete else offsets[len(lines) - 1]
    for j in body:
        line_no = j + 1
        last = j == len(lines) - 1
        if last and not ends_complete:
            incomplete = f"{path}: line {line_no}: unfinished last row (the file ends mid-row); left out, it will be re-run"
            complete_bytes = offsets[j]
            break
        try:
            fields = _split_csv(lines[j])
            if len(fields) != len(columns):
                raise ValueError(
                    f"{len(fields)} fields, the columns (line {col_line_no}) are {len(columns)}"
                )
            row = {}
            for c, t, v in zip(columns, types, fields):
                try:
                    row[c] = _parse(v, t)
                except ValueError:
                    raise ValueError(f"column {c!r}: {v!r} is not {t.__name__}") from None
        except (ValueError, csv.Error) as exc:
            if last:
                incomplete = (
                    f"{path}: line {line_no}: last row does not parse ({exc}); left out, it will "
                    f"be re-run"
                )
                complete_bytes = offsets[j]
                break
            raise ResultsFileError(
                f"{path}: line {line_no}: row does not match the columns ({exc})"
            ) from None
        for c in schema.optional:
            row.setdefault(c, math.nan)
        key = tuple(row[k] for k in schema.key)
        if key in seen:
            desc = ", ".join(f"{k}={v}" for k, v in zip(schema.key, key))
            raise ResultsFileError(
                f"{path}: line {line_no}: duplicate key ({desc}), first at line {seen[key]}"
            )
        seen[key] = line_no
        rows.append(row)
        row_lines.append(line_no)
    if incomplete is not None:
        (report or _warn)(incomplete)
    return ResultsTable(
        path, header, columns, rows, row_lines, incomplete, complete_bytes, schema, identity
    )


def _read_regular(path: Path, limit: int = MAX_RESULTS_BYTES) -> tuple[bytes, tuple]:
    """The bytes of the regular results file at ``path`` (at most ``limit``) and its identity
    ``(device, inode)`` (:func:`genbound.reading.read_regular`: never blocks, never reads past the
    limit)."""
    data, st = read_regular(
        path, limit, what="results file", limit_name="MAX_RESULTS_BYTES", error=ResultsFileError
    )
    return data, (st.st_dev, st.st_ino)


def results_file_kind(path) -> str | None:
    """The experiment of the genbound results file at ``path`` (its header's ``experiment``, or
    ``"unknown"`` when the header does not say), or ``None`` when ``path`` does not exist, is not a
    regular file or is not a results file. Reads at most the first 64 KiB; never blocks."""
    path = Path(path)
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        head = os.read(fd, 65536)
    except OSError:
        return None
    finally:
        os.close(fd)
    if not head.startswith(MAGIC.encode()):
        return None
    m = re.search(rb'"experiment":\s*"([^"\\]{1,100})"', head)
    return m.group(1).decode("utf-8", "replace") if m else "unknown"


def _warn(msg: str) -> None:
    warnings.warn(msg, ResultsFileWarning, stacklevel=3)


# ---------------------------------------------------------------------------------------------- writing
def _flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(_flatten(v, name + "."))
        else:
            out[name] = v
    return out


def _differences(recorded: dict, now: dict) -> list[str]:
    a, b = _flatten(_normal(recorded)), _flatten(_normal(now))
    out = []
    for name in list(a) + [n for n in b if n not in a]:
        va, vb = a.get(name, "<absent>"), b.get(name, "<absent>")
        if va != vb:
            out.append(
                f"{name} (file {json.dumps(va) if not isinstance(va, str) else va}, "
                f"this run {json.dumps(vb) if not isinstance(vb, str) else vb})"
            )
    return out


def _header_text(header: dict, columns: Sequence[str]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(columns)
    body = json.dumps(header, indent=1, sort_keys=False, default=str)
    return (
        f"{MAGIC} (format {FORMAT})\n"
        + "".join(f"# {ln}\n" for ln in body.splitlines())
        + buf.getvalue()
    )


def _atomic_create(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, fsync it and rename it to ``path``."""
    try:
        prefix = sidecar_name(path.name, ".", room=12)  # mkstemp adds 8 characters and ".tmp"
        fd, tmp = tempfile.mkstemp(dir=str(path.parent), prefix=prefix, suffix=".tmp")
    except OSError as exc:
        raise ResultsFileError(
            f"{path}: cannot create the results file ({exc.strerror or exc})"
        ) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise ResultsFileError(
            f"{path}: cannot create the results file ({exc.strerror or exc})"
        ) from None
    try:  # make the rename durable (best effort)
        dfd = os.open(str(path.parent), os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


# ---------------------------------------------------------------------------------------------- one writer
class ResultsWriter:
    """Appends whole rows to a results file opened by :func:`open_results`. ``done``: the keys of the
    finished rows (those in the file when it was opened, and every row appended since).

    The writer holds the file's advisory lock (one writer process per results file) until
    :meth:`close`, the end of a ``with`` block, its garbage collection or the end of the process."""

    def __init__(
        self,
        path: Path,
        schema: Schema,
        columns: Sequence[str],
        done: set[tuple],
        header: dict,
        to_row: Callable[[Any], dict] | None = None,
    ):
        self.path, self.schema, self.columns, self.done, self.header = (
            path,
            schema,
            tuple(columns),
            done,
            header,
        )
        self.to_row = to_row
        self._lock = ""
        self._bound = None

    def _hold(self, key: str) -> None:
        import weakref

        self._lock = key
        self._finalizer = weakref.finalize(self, _release, key)

    def close(self) -> None:
        """Release the file's lock (appending afterwards raises); idempotent."""
        if getattr(self, "_finalizer", None) is not None:
            self._finalizer()
        self._lock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __contains__(self, key) -> bool:
        return tuple(key) in self.done

    def append(self, rows: Iterable[dict]) -> None:
        """Append ``rows`` (dicts with exactly the schema's columns, or records that the writer's
        ``to_row`` turns into such dicts) in one write, then flush and fsync.

        Every value is checked against its column's type and every key against the finished rows
        *before* anything is written, so a bad row leaves the file as it was."""
        if self._lock is None:
            raise ResultsFileError(f"{self.path}: this writer is closed")
        rows = [r if isinstance(r, dict) or self.to_row is None else self.to_row(r) for r in rows]
        if not rows:
            return
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        keys = []
        for r in rows:
            if set(r) != set(self.columns):
                extra = sorted(set(r) - set(self.columns))
                lack = sorted(set(self.columns) - set(r))
                raise ResultsFileError(
                    f"{self.path}: a row to append does not match the columns "
                    f"(missing {lack}, unknown {extra})"
                )
            w.writerow([_fmt(r[c], self.schema.type_of(c), c) for c in self.columns])
            key = self.schema.key_of(r)
            if key in self.done or key in keys:
                desc = ", ".join(f"{k}={v}" for k, v in zip(self.schema.key, key))
                raise ResultsFileError(f"{self.path}: key ({desc}) is already in the file")
            keys.append(key)
        data = buf.getvalue().encode("utf-8")
        try:
            fd = os.open(str(self.path), os.O_RDWR | os.O_APPEND | getattr(os, "O_NONBLOCK", 0))
        except OSError as exc:
            raise ResultsFileError(
                f"{self.path}: cannot be written ({exc.strerror or exc})"
            ) from None
        try:
            self._check_identity(fd)
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
            if self._bound is not None:
                self._bound = (*self._bound[:2], os.fstat(fd).st_size, self._bound[3])
        except OSError as exc:
            raise ResultsFileError(
                f"{self.path}: writing a row failed ({exc.strerror or exc})"
            ) from None
        finally:
            os.close(fd)
        self.done.update(keys)

    def bind(self, path) -> None:
        """Record the identity of the file this run appends to (device, inode, size, and its header's
        bytes up to the column line); :meth:`append` refuses any other file."""
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            head = _header_bytes(fh.read(min(st.st_size, MAX_RESULTS_BYTES)))
        self._bound = (st.st_dev, st.st_ino, st.st_size, head)

    def _check_identity(self, fd: int) -> None:
        """Refuse to append unless ``fd`` is the very file this run opened, unchanged since its last
        append (same device and inode, the size it left, the same header bytes)."""
        if self._bound is None:
            return
        dev, ino, size, head = self._bound
        st = os.fstat(fd)
        problem = None
        if not stat.S_ISREG(st.st_mode):
            problem = f"is now {file_kind(st.st_mode)}"
        elif (st.st_dev, st.st_ino) != (dev, ino):
            problem = "was replaced by another file (another inode)"
        elif st.st_size != size:
            problem = f"was changed by another program ({st.st_size} bytes, this run left {size})"
        elif os.pread(fd, len(head), 0) != head:
            problem = "has another header than the one this run opened (rewritten in place)"
        if problem:
            raise ResultsFileError(
                f"{self.path}: {problem} since this run opened it; nothing was appended (this "
                f"run's finished rows up to now are in the original file, if it still exists); "
                f"rerun to resume from what the file at this path holds"
            )


def open_results(
    path,
    schema: Schema,
    config: dict,
    *,
    environment: dict | None = None,
    notes: str | None = None,
    report: Callable[[str], None] | None = None,
    to_row: Callable[[Any], dict] | None = None,
    inputs: dict | None = None,
) -> ResultsWriter:
    """Open the results file at ``path`` for a run with configuration ``config`` (every field of the
    run's config, as a JSON-able dict) and ``environment`` (default :func:`~genbound.experiments.runtime.machine.environment` on the CPU).

    The file's advisory lock (:func:`lock_path`) is taken first and held by the returned writer: a
    second process opening the same file meanwhile gets :class:`~genbound.errors.ResultsFileError`
    at once, naming the holder's pid (parallel processes write shards of their own and merge them).
    A missing file is created with the header and the column line (atomically: a temporary file
    renamed into place). An existing file is read with :func:`read_results` and must be a results file
    of the same experiment and columns whose recorded configuration and environment equal ``config``
    and ``environment`` in every field the file records (a field an older file does not record is
    reported through ``report`` and not compared); otherwise :class:`~genbound.errors.ResultsFileError` names
    the fields (file value, this run's value) and the file is left untouched. An unfinished last row is
    reported through ``report`` and cut off, so that its run is trained again. Returns the writer;
    its ``done`` holds the keys already finished; ``to_row`` (optional) turns the experiment's records
    into row dicts in :meth:`ResultsWriter.append`.

    ``inputs`` (optional) names the content of the run's inputs (e.g. ``{"corpus_sha256": ...}``); a new
    file records it in its header, and a resume whose inputs differ from the recorded ones in any field
    is refused naming the fields, so that one file never mixes rows of two versions of an input.
    """
    path = Path(path)
    env = dict(_default_env() if environment is None else environment)
    config = _normal(dict(config))
    if path.is_dir():
        raise ResultsFileError(f"{path}: is a directory, not a results file")
    if not path.parent.is_dir():
        raise ResultsFileError(
            f"{path}: cannot create the results file (no directory {path.parent})"
        )
    key = _acquire(path)
    try:
        writer = _open_locked(path, schema, config, env, notes, report, to_row, inputs)
    except BaseException:
        _release(key)
        raise
    writer._hold(key)
    return writer


def _open_locked(path, schema, config, env, notes, report, to_row, inputs=None) -> ResultsWriter:
    if not path.exists():
        header = {
            "experiment": schema.experiment,
            "key": list(schema.key),
            "config": config,
            "environment": _normal(env),
        }
        if inputs:
            header["inputs"] = _normal(dict(inputs))
        if notes:
            header["notes"] = notes
        _atomic_create(path, _header_text(header, schema.names))
        writer = ResultsWriter(path, schema, schema.names, set(), header, to_row)
        writer.bind(path)
        return writer
    table = read_results(path, schema, report=lambda msg: None)
    recorded = table.environment
    unrecorded = [k for k in env if k not in recorded]
    diffs = _differences(table.config, config) + _differences(
        recorded, {k: v for k, v in env.items() if k in recorded}
    )
    if diffs:
        raise ResultsFileError(
            f"{path}: this run's configuration differs from the one recorded in the file in {len(diffs)} "
            f"field{'s' if len(diffs) > 1 else ''}: {', '.join(diffs)}; resume with the recorded "
            f"configuration or write to a new file"
        )
    _check_inputs(path, table.header, inputs, report)
    lack = [c for c in schema.names if c not in table.columns]
    if lack:
        raise ResultsFileError(
            f"{path}: the file lacks column(s) {lack} that this genbound writes; "
            f"write to a new file"
        )
    if not os.access(path, os.W_OK):
        raise ResultsFileError(f"{path}: cannot be written (permission denied)")
    if unrecorded:
        (report or _warn)(
            f"{path}: the file does not record {', '.join(unrecorded)} (written by an older "
            f"genbound); resuming without comparing them"
        )
    if table.incomplete is not None:
        (report or _warn)(table.incomplete)
        try:
            os.truncate(path, table.complete_bytes)
        except OSError as exc:
            raise ResultsFileError(
                f"{path}: cannot drop the unfinished last row ({exc.strerror or exc})"
            ) from None
    writer = ResultsWriter(path, schema, table.columns, set(table.keys), table.header, to_row)
    writer.bind(path)
    dev_ino = writer._bound[:2]
    if table.identity is not None and dev_ino != table.identity:
        raise ResultsFileError(f"{path}: was replaced by another file while it was being opened")
    if writer._bound[2] != table.complete_bytes:
        raise ResultsFileError(
            f"{path}: changed while it was being opened ({writer._bound[2]} bytes, "
            f"read {table.complete_bytes}); rerun"
        )
    return writer


def _check_inputs(path, header: dict, inputs: dict | None, report) -> None:
    """Refuse a resume whose ``inputs`` differ from those the file's header records; a file that
    records none (an older genbound) is reported and not compared."""
    if not inputs:
        return
    if not isinstance(header.get("inputs"), dict):
        (report or _warn)(
            f"{path}: the file does not record the content of its inputs (written by an older "
            f"genbound); resuming without comparing {', '.join(inputs)}"
        )
        return
    diffs = _differences(header["inputs"], dict(inputs))
    if diffs:
        raise ResultsFileError(
            f"{path}: this run's inputs differ from the ones the file's rows were computed from in "
            f"{len(diffs)} field{'s' if len(diffs) > 1 else ''}: {', '.join(diffs)}; one file never "
            f"mixes rows of two inputs: resume with the recorded input or write to a new file"
        )


def _header_bytes(data: bytes) -> bytes:
    """The first line, the header's comment lines and the column line of a results file's bytes."""
    end = 0
    while True:
        nl = data.find(b"\n", end)
        if nl < 0:
            return data
        line = data[end:nl]
        end = nl + 1
        if end > 1 and not line.startswith(b"#"):
            return data[:end]


def _default_env() -> dict:
    return environment()


def attach_header(path, schema: Schema, config: dict, environment: dict, *, notes: str) -> None:
    """Give a CSV written before results files existed (a column line, then rows) the header of a
    results file, in place and atomically; the rows are kept byte for byte. Used once for the saved
    data sets; the configuration attached must be the one recorded beside them (say so in ``notes``).
    The result is then read with :func:`read_results`, which checks every row."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if text.startswith(MAGIC):
        raise ResultsFileError(f"{path}: already has a results-file header")
    first, _, rest = text.partition("\n")
    cols = _split_csv(first)
    if set(cols) != set(schema.names):
        raise ResultsFileError(f"{path}: columns {cols} do not match the schema {schema.names}")
    header = {
        "experiment": schema.experiment,
        "key": list(schema.key),
        "config": _normal(dict(config)),
        "environment": _normal(dict(environment)),
        "notes": notes,
    }
    head = _header_text(header, cols)
    _atomic_create(path, head + rest)
    read_results(path, schema)


def merge_results(paths, out, schema: Schema, *, same_except: Sequence[str] | None = None) -> Path:
    """Merge results files written by parallel processes (shards) of one run into one new file ``out``:
    every file must carry the **same header** (configuration and environment: one commit, one torch,
    one thread count, one CPU kind) and the files must share no key, except that with ``same_except``
    (column names, e.g. the wall time) a key present in two files is kept once when the two rows are
    equal in every other column (a re-sharded run that trained a stack twice; equality is the check that
    the rerun reproduced it). The rows are written sorted by key under that header, so the merged file
    reads as if one process had run them all. Raises :class:`~genbound.errors.ResultsFileError` (naming
    the file) otherwise; ``out`` must not exist."""
    import csv as _csv
    import io

    out = Path(out)
    if out.exists():
        raise ResultsFileError(f"{out}: exists; merge_results writes a new file")
    tables = [read_results(p, schema) for p in paths]
    if not tables:
        raise ResultsFileError("merge_results needs at least one results file")
    head = tables[0].header
    rows = {}
    for t in tables:
        if t.header != head:
            raise ResultsFileError(
                f"{t.path}: its header (configuration or environment) differs from "
                f"{tables[0].path}'s; only shards of one run can be merged"
            )
        if t.incomplete:
            raise ResultsFileError(f"{t.path}: ends in an unfinished row ({t.incomplete})")
        for r in t.rows:
            key = tuple(r[k] for k in schema.key)
            if key in rows:
                if same_except is None:
                    raise ResultsFileError(
                        f"{t.path}: the row {dict(zip(schema.key, key))} is in two files"
                    )
                differ = [
                    c
                    for c in tables[0].columns
                    if c not in same_except and not _same(rows[key][c], r[c])
                ]
                if differ:
                    raise ResultsFileError(
                        f"{t.path}: the row {dict(zip(schema.key, key))} is in two files "
                        f"and they differ in {differ}"
                    )
                continue
            rows[key] = r
    buf = io.StringIO()
    w = _csv.writer(buf, lineterminator="\n")
    for k in sorted(rows):
        w.writerow([_fmt(rows[k][c], schema.type_of(c), c) for c in tables[0].columns])
    _atomic_create(out, _header_text(head, tables[0].columns) + buf.getvalue())
    read_results(out, schema)
    return out


def _same(a, b) -> bool:
    """Equal values, ``nan`` equal to ``nan``."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b
