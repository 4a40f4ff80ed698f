"""The machine record: what produced a result besides its configuration (genbound's version and commit,
torch and its BLAS, threads, the device and the CPU kind that selects float kernels), whether an exact
rerun can be expected here (:func:`same_machine_kind`), and the reader of older records
(:func:`machine_of`).

Every experiment records :func:`environment`; two saved data sets predate it and keep what they recorded:
the Part V family (``cpu_flags`` as one string of the flags in :data:`LEGACY_FAMILY_FLAGS`,
``aten_capability``, ``blas`` as ``"BLAS_INFO=... LAPACK_INFO=..."``) and the BERT grid (``cpu``,
``cpu_flags_sha1``, ``machine``). :func:`machine_of` reads any of the three into the fields of
:data:`MACHINE_FIELDS`, and says which of them the record can be compared on.

One concept: the machine a result was produced on.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from ... import __version__

__all__ = [
    "environment",
    "git_commit",
    "cpu_kind",
    "math_libraries",
    "KERNEL_FLAGS",
    "KERNEL_ENV",
    "MACHINE_FIELDS",
    "LEGACY_FAMILY_FLAGS",
    "Mismatch",
    "machine_of",
    "environment_mismatches",
    "same_machine_kind",
    "column_commits",
    "commit_mismatches",
]


def _normal(obj):
    """``obj`` as JSON would give it back (tuples become lists), for comparing records."""
    return json.loads(json.dumps(obj, sort_keys=True, default=str))


# ---------------------------------------------------------------------------------------------- environment
def git_commit() -> str | None:
    """The commit of the genbound checkout (``sha`` or ``sha-dirty`` when tracked files under
    ``genbound/`` other than ``genbound/data/`` are modified), or ``None`` when genbound does not run
    from a git checkout or git is unavailable."""
    root = Path(__file__).resolve().parents[3]
    if not (root / ".git").exists() or not (root / "genbound" / "__init__.py").exists():
        return None
    try:
        sha = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            [
                "git",
                "-C",
                str(root),
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                "genbound",
                ":(exclude)genbound/data",
            ],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{sha}-dirty" if dirty else sha or None


#: The CPU flags (``/proc/cpuinfo`` names) that select float kernels in torch, oneDNN, MKL and OpenBLAS:
#: the vector widths and the fused / low-precision instructions. Two CPUs with the same model name and
#: these flags run the same kernels; the rest of the flags (virtualisation, security) do not matter.
KERNEL_FLAGS = (
    "sse4_1",
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx_vnni",
    "avx512f",
    "avx512dq",
    "avx512cd",
    "avx512bw",
    "avx512vl",
    "avx512ifma",
    "avx512vbmi",
    "avx512_vbmi2",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    "amx_fp16",
    "asimd",
    "asimdhp",
    "asimddp",
    "sve",
    "sve2",
    "sme",
    "bf16",
    "i8mm",
)


#: Environment variables that change which kernels run (recorded when set).
KERNEL_ENV = (
    "ATEN_CPU_CAPABILITY",
    "MKL_CBWR",
    "MKL_ENABLE_INSTRUCTIONS",
    "MKL_DEBUG_CPU_TYPE",
    "ONEDNN_MAX_CPU_ISA",
    "DNNL_MAX_CPU_ISA",
    "OPENBLAS_CORETYPE",
)


#: The recorded fields on which an exact (bit-for-bit) rerun of float32 training depends, namely the CPU
#: kind (model, kernel-selecting flags, torch's ATen CPU capability), the torch build and its BLAS/LAPACK,
#: the kernel-selecting environment variables, the thread count and the device. The commit is not one
#: of them: a rerun at another commit is exactly what a reproduction check tests.
MACHINE_FIELDS = (
    "cpu_model",
    "cpu_flags",
    "cpu_capability",
    "torch",
    "blas",
    "lapack",
    "math_library",
    "kernel_env",
    "threads",
    "device",
)


#: The kernel flags the Part V family recorded (its saved ``cpu_flags``, one space-separated string, holds
#: those of these present, in this order); kept to read that record (:func:`machine_of`).
LEGACY_FAMILY_FLAGS = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "amx_tile",
    "amx_bf16",
)


def machine_of(recorded: dict) -> tuple[dict, tuple[str, ...]]:
    """A recorded environment read into the fields of :data:`MACHINE_FIELDS`, and the fields it can be
    compared on: all of them for a record of :func:`environment`; for the Part V family's older record
    (:func:`environment` with ``cpu_flags`` rewritten as one string of :data:`LEGACY_FAMILY_FLAGS`,
    ``blas`` as ``"BLAS_INFO=... LAPACK_INFO=..."`` and ``aten_capability`` added) those it records,
    the flags as a sorted list (compared with this machine's flags cut to that list); for the BERT grid's, ``cpu_model``,
    ``torch`` and ``threads`` (its flags were kept only as a hash).

    >>> rec = {"cpu_model": "X", "cpu_flags": "avx2 fma", "aten_capability": "AVX2",
    ...        "blas": "BLAS_INFO=mkl LAPACK_INFO=mkl", "torch": "2", "threads": 1, "device": "cpu"}
    >>> fields, compared = machine_of(rec)
    >>> fields["cpu_flags"], fields["cpu_capability"], fields["lapack"], len(compared)
    (['avx2', 'fma'], 'AVX2', 'mkl', 8)
    """
    rec = dict(recorded)
    if isinstance(rec.get("cpu_flags"), str):  # the Part V family's record
        blas = str(rec.get("blas") or "")
        fields = dict(rec)
        fields["cpu_flags"] = sorted(rec["cpu_flags"].split())
        fields["cpu_capability"] = rec.get("cpu_capability") or rec.get("aten_capability")
        if "BLAS_INFO=" in blas:
            fields["blas"] = _build_field(blas, "BLAS_INFO")
            fields["lapack"] = rec.get("lapack") or _build_field(blas, "LAPACK_INFO")
        return fields, tuple(f for f in MACHINE_FIELDS if f in fields)
    if "cpu_flags_sha1" in rec:  # the BERT grid's record
        fields = {
            "cpu_model": rec.get("cpu"),
            "torch": rec.get("torch"),
            "threads": rec.get("threads"),
        }
        return fields, tuple(fields)
    return rec, MACHINE_FIELDS


def _legacy_view(here: dict, recorded: dict) -> dict:
    """``here`` restricted as the older record was: the family's flags cut to :data:`LEGACY_FAMILY_FLAGS`."""
    view = dict(here)
    if isinstance(recorded.get("cpu_flags"), str) and isinstance(view.get("cpu_flags"), list):
        view["cpu_flags"] = sorted(f for f in view["cpu_flags"] if f in LEGACY_FAMILY_FLAGS)
    return view


def _cpuinfo(text: str) -> tuple[str | None, list[str] | None]:
    r"""The CPU model name and the kernel-selecting flags (sorted) in a ``/proc/cpuinfo`` text.

    >>> _cpuinfo("model name\t: AMD EPYC\nflags\t\t: fpu sse4_2 avx2 fma avx512f hypervisor\n")
    ('AMD EPYC', ['avx2', 'avx512f', 'fma', 'sse4_2'])
    >>> _cpuinfo("")
    (None, None)
    """
    model = flags = None
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        if not sep:
            continue
        name = name.strip().lower()
        if (
            model is None
            and name in ("model name", "cpu model", "processor")
            and not value.strip().isdigit()
        ):
            model = value.strip() or None
        elif flags is None and name in ("flags", "features"):
            have = set(value.split())
            flags = sorted(f for f in KERNEL_FLAGS if f in have)
    return model, flags


def cpu_kind() -> dict:
    """What selects the float kernels on this CPU: ``cpu_model`` (the model name), ``cpu_flags`` (the
    :data:`KERNEL_FLAGS` it has, sorted) and ``cpu_capability`` (torch's ATen CPU capability, e.g.
    ``AVX512``, which also follows ``ATEN_CPU_CAPABILITY``). Read from ``/proc/cpuinfo`` on Linux; elsewhere
    the model from ``platform`` and the flags ``None`` (unknown)."""
    import torch  # heavy: loaded only when a record is made

    model = flags = None
    try:
        model, flags = _cpuinfo(Path("/proc/cpuinfo").read_text(errors="replace"))
    except OSError:
        pass
    if model is None:
        model = platform.processor() or platform.machine() or None
    try:
        capability = str(torch.backends.cpu.get_cpu_capability())
    except (AttributeError, RuntimeError):  # very old torch
        capability = None
    return {"cpu_model": model, "cpu_flags": flags, "cpu_capability": capability}


def _build_field(config: str, name: str) -> str | None:
    m = re.search(rf"\b{name}=([^,\s]+)", config)
    return m.group(1) if m else None


def math_libraries() -> dict:
    """torch's ``blas`` and ``lapack`` (``BLAS_INFO`` / ``LAPACK_INFO`` of its build, e.g. ``mkl``) and
    ``math_library``: the versions of MKL and oneDNN (MKL-DNN) that torch reports, ``;``-joined."""
    import torch  # heavy: loaded only when a record is made

    config = torch.__config__.show()
    libs = []
    for ln in config.splitlines():
        if "Math Kernel Library" in ln:
            m = re.search(r"Version (\S+)", ln)
            libs.append(f"MKL {m.group(1) if m else ln.strip(' -')}")
        elif "MKL-DNN" in ln or "oneDNN" in ln:
            m = re.search(r"\b(v\d[\w.]*)", ln)
            libs.append(f"oneDNN {m.group(1) if m else ln.strip(' -')}")
    return {
        "blas": _build_field(config, "BLAS_INFO"),
        "lapack": _build_field(config, "LAPACK_INFO"),
        "math_library": "; ".join(libs) or None,
    }


def environment(*, device: Any = "cpu") -> dict:
    """What produced a results file besides its configuration: genbound's version and commit
    (:func:`git_commit`, ``None`` when unknown), torch's version, torch's CPU threads, the device, the
    CPU kind (:func:`cpu_kind`), torch's BLAS and LAPACK (:func:`math_libraries`) and the kernel-selecting
    environment variables that are set (``kernel_env``, see :data:`KERNEL_ENV`)."""
    import torch  # heavy: loaded only when a record is made

    env = {
        "genbound": __version__,
        "commit": git_commit(),
        "torch": torch.__version__,
        "threads": int(torch.get_num_threads()),
        "device": str(device),
    }
    env.update(cpu_kind())
    env.update(math_libraries())
    env["kernel_env"] = {k: os.environ[k] for k in KERNEL_ENV if k in os.environ}
    if str(device).startswith("cuda") and torch.cuda.is_available():
        env["gpu"] = torch.cuda.get_device_name(torch.device(str(device)))
    return env


@dataclass(frozen=True)
class Mismatch:
    """One field of a recorded environment that differs from another: ``field``, the ``recorded`` value
    (``None`` when the file does not record it) and the value ``here``."""

    field: str
    recorded: Any
    here: Any

    def __str__(self) -> str:
        rec = "not recorded" if self.recorded is None else _show(self.recorded)
        return f"{self.field}: recorded {rec} vs here {_show(self.here)}"


def _show(value) -> str:
    if isinstance(value, (list, tuple)):
        return " ".join(map(str, value)) if value else "none"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items()) if value else "none"
    return repr(value) if isinstance(value, str) else str(value)


def environment_mismatches(
    recorded: dict, here: dict | None = None, fields: Sequence[str] = MACHINE_FIELDS
) -> list[Mismatch]:
    """The ``fields`` in which the ``recorded`` environment (a results file's) differs from ``here``
    (default: :func:`environment` now). A field the file does not record is a mismatch (recorded
    ``None``): a file written before genbound recorded CPU kinds is never taken for the same kind.

    >>> rec = {"cpu_model": "AMD EPYC", "threads": 1, "torch": "2.13.0+cpu"}
    >>> [str(m) for m in environment_mismatches(rec, {"cpu_model": "Intel Xeon", "threads": 1,
    ...      "torch": "2.13.0+cpu", "cpu_flags": ["avx2"]}, ("cpu_model", "cpu_flags", "threads", "torch"))]
    ["cpu_model: recorded 'AMD EPYC' vs here 'Intel Xeon'", 'cpu_flags: recorded not recorded vs here avx2']
    """
    here = environment() if here is None else here
    rec, now = _normal(recorded), _normal(here)
    out = []
    for name in fields:
        a, b = rec.get(name), now.get(name)
        if name not in rec or a != b:
            out.append(Mismatch(name, a if name in rec else None, b))
    return out


def same_machine_kind(recorded: dict, here: dict | None = None) -> tuple[bool, list[Mismatch]]:
    """Whether an exact rerun of float32 work recorded with environment ``recorded`` can be expected
    ``here``: every field of :data:`MACHINE_FIELDS` recorded and equal (for an older record, the fields
    :func:`machine_of` reads from it). Returns ``(same, mismatches)``."""
    fields, compared = machine_of(recorded)
    here = environment() if here is None else here
    mism = environment_mismatches(fields, _legacy_view(here, recorded), compared)
    return not mism, mism


def column_commits(header: dict, columns: Iterable[str]) -> dict:
    """The commit that produced each of ``columns`` of a results file with ``header``: the header's
    ``column_commits`` entry for a column recomputed after the run (see
    :func:`~genbound.experiments.sparse_majority.recompute_bound_columns`), else the run's commit
    (``environment.commit``).

    >>> h = {"environment": {"commit": "aaa"}, "column_commits": {"cap": "bbb"}}
    >>> column_commits(h, ["loss", "cap"])
    {'loss': 'aaa', 'cap': 'bbb'}
    """
    own = header.get("column_commits") or {}
    run = header.get("environment", {}).get("commit")
    return {c: own.get(c, run) for c in columns}


def commit_mismatches(
    header: dict, columns: Iterable[str], here: str | None = None
) -> list[Mismatch]:
    """One :class:`Mismatch` per distinct commit that produced some of ``columns`` (field
    ``commit (col, ...)``) and differs from the commit ``here`` (default :func:`git_commit`)."""
    here = git_commit() if here is None else here
    by_commit: dict = {}
    for c, sha in column_commits(header, columns).items():
        by_commit.setdefault(sha, []).append(c)
    run = header.get("environment", {}).get("commit")
    out = []
    for sha, cols in by_commit.items():
        if sha != here:
            name = "commit" if sha == run else f"commit of {', '.join(cols)}"
            out.append(Mismatch(name, sha, here))
    return out
