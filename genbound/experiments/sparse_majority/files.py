"""The sweep's results file (:mod:`genbound.experiments.runtime.results`): its schema, writing, resuming and
reading, and the saved sweep (part of :mod:`genbound.experiments.sparse_majority`)."""

from __future__ import annotations

from dataclasses import asdict, fields
from pathlib import Path
from typing import Callable, Iterable

from ..runtime.results import Schema, open_results, read_results
from ..runtime.machine import environment, git_commit
from .config import SparseMajorityConfig
from .runs import RunResult
from ..runtime.results import merge_results
from ..runtime.paths import data_path
from ..runtime.results import _atomic_create, _fmt, _header_text
from ...errors import ResultsFileError
from .bounds import row_bound_fields
from .verify import config_of

__all__ = [
    "merge_sweeps",
    "recompute_bound_columns",
    "SAVED_SWEEP",
    "OTHER_KIND_SWEEP",
    "SCHEMA",
    "csv_columns",
    "open_sweep",
    "write_csv",
    "read_csv",
    "read_sweep",
]

#: The saved larger sweep (a results file) and its notes (command, machine, wall time) beside it.
SAVED_SWEEP = data_path("sparse_majority_sweep.csv")
#: The same sweep (configuration and protocol) trained on another machine kind (an Intel Xeon): another
#: float32 draw, kept to measure how far two machine kinds are apart (its notes: ``sparse_majority_sweep.md``).
OTHER_KIND_SWEEP = SAVED_SWEEP.with_name("sparse_majority_sweep_intel.csv")

_TYPES = {"int": int, "float": float, "bool": bool, "str": str}


def _schema() -> Schema:

    cols = tuple(
        (f.name, _TYPES[f.type if isinstance(f.type, str) else f.type.__name__])
        for f in fields(RunResult)
        if f.name != "l11_norms"
    )
    return Schema("sparse-majority", cols, key=("seq_len", "seed"))


#: The columns of a sweep's results file (the fields of :class:`RunResult` but the per-tensor norms),
#: keyed by ``(seq_len, seed)``.
SCHEMA = _schema()


def csv_columns() -> list[str]:
    """The columns of a sweep's results file, in writing order."""
    return SCHEMA.names


def _row(r) -> dict:
    d = r.to_dict()
    return {c: d[c] for c in SCHEMA.names}


def open_sweep(
    path, config: SparseMajorityConfig, *, device="cpu", report: Callable[[str], None] | None = None
):
    """Open (create or resume) the sweep's results file at ``path`` for runs with ``config`` on
    ``device``: :func:`~genbound.experiments.runtime.results.open_results` with every field of ``config``
    and the environment. The returned writer's ``append`` takes run records (:class:`RunResult`)
    and ``done`` holds the ``(seq_len, seed)`` already finished. A file recorded with another
    configuration or environment is refused, naming the fields that differ."""
    cfg = config.validated()
    return open_results(
        path,
        SCHEMA,
        asdict(cfg),
        environment=environment(device=device),
        report=report,
        to_row=_row,
    )


def write_csv(
    results: Iterable, path, *, config: SparseMajorityConfig, append: bool = False, device="cpu"
) -> Path:
    """Write run records to a results file for ``config`` (a new file; with ``append``, resume an
    existing one, which must record the same configuration): all records in one whole write."""
    path = Path(path)
    if not append and path.exists():
        raise ResultsFileError(
            f"{path}: exists; pass append=True to resume it, or write to a new file"
        )
    open_sweep(path, config, device=device).append(list(results))
    return path


def read_sweep(path=None, *, report: Callable[[str], None] | None = None):
    """The sweep's results file (default ``SAVED_SWEEP``) as a
    :class:`~genbound.experiments.runtime.results.ResultsTable` (rows, header with the configuration)."""
    return read_results(SAVED_SWEEP if path is None else path, SCHEMA, report=report)


def read_csv(path=None):
    """The sweep (default ``SAVED_SWEEP``, the saved sweep) as a pandas DataFrame, one row per
    finished run, read by :func:`~genbound.experiments.runtime.results.read_results` (the one reader of
    results files: an unfinished last row is reported and left out; a file that is not a sweep's
    results file raises :class:`~genbound.errors.ResultsFileError`)."""
    return read_sweep(path).frame()


def merge_sweeps(paths, out) -> Path:
    """Merge results files written by parallel processes of one sweep into one new file ``out``:
    :func:`~genbound.experiments.runtime.results.merge_results` (the same header in every file, no
    ``(seq_len, seed)`` twice, rows sorted by key; ``out`` must not exist), then read back and checked
    as a sweep."""

    merge_results(paths, out, SCHEMA)
    read_sweep(out)  # the merged file reads back as a sweep
    return Path(out)


def _write_rows(out: Path, header: dict, columns, rows) -> None:
    """Create the results file ``out`` with ``header`` and ``rows`` (dicts) in one atomic write."""
    import csv as _csv
    import io

    buf = io.StringIO()
    w = _csv.writer(buf, lineterminator="\n")
    for r in rows:
        w.writerow([_fmt(r[c], SCHEMA.type_of(c), c) for c in columns])
    _atomic_create(Path(out), _header_text(header, columns) + buf.getvalue())


def recompute_bound_columns(path, out, *, columns: Iterable[str], notes: str) -> Path:
    """Write ``out``: the results file ``path`` with the bound ``columns`` (names returned by
    :func:`~genbound.experiments.sparse_majority.row_bound_fields`) recomputed from every row's saved
    norms, every other column byte for byte, and ``notes`` added to the header (say which columns
    were recomputed, with which commit, and why); the header's ``column_commits`` names this checkout's
    commit for each recomputed column (:func:`~genbound.experiments.runtime.machine.column_commits`). For a change in how a bound column is defined that
    needs no retraining."""

    out = Path(out)
    if out.exists():
        raise ResultsFileError(f"{out}: exists; recompute_bound_columns writes a new file")
    table = read_sweep(path)
    cfg = config_of(table)
    columns = list(columns)
    rows = []
    for r in table.rows:
        new = row_bound_fields(r, cfg)
        unknown = [c for c in columns if c not in new]
        if unknown:
            raise ResultsFileError(f"row_bound_fields does not compute {unknown}")
        rows.append({**r, **{c: new[c] for c in columns}})
    header = dict(table.header)
    header["notes"] = (header["notes"] + " " if header.get("notes") else "") + notes
    header["column_commits"] = {
        **(header.get("column_commits") or {}),
        **{c: git_commit() for c in columns},
    }
    _write_rows(out, header, table.columns, rows)
    read_sweep(out)
    return out
