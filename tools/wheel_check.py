"""Build the wheel, install it apart from the source tree, and run the CLI and a sample of tests on it.

    python tools/wheel_check.py            # (make wheel-check; CI runs it after the test suite)

An editable install hides what a wheel leaves out (data subfolders, an undeclared module). This builds the
wheel with the venv's own setuptools (no network), installs it with ``--no-deps`` into a fresh folder, and
runs, from a folder outside the checkout with that folder first on ``PYTHONPATH``:
``import genbound`` (and checks that it is the installed copy), ``genbound --help``, a saved data file of
every data subfolder, and a sample of the test suite whose tests read the shipped data.
Exit 0 when all pass; the first failure is printed.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
#: Test files that read the shipped data files (Part II's sweep, Part V's family, Part VI's certificates).
SAMPLE_TESTS = [
    "tests/experiments/test_certify.py",
    "tests/experiments/test_sparse_majority_saved.py",
]


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kw)


def source_copy(dest: pathlib.Path) -> pathlib.Path:
    """The files git would commit (tracked, and untracked but not ignored), copied to ``dest``: the wheel
    is built from exactly those, never from a stale ``build/`` staging folder or an ignored file."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    for rel in filter(None, listed):
        src = ROOT / os.fsdecode(rel)
        if src.is_file():
            (dest / os.fsdecode(rel)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / os.fsdecode(rel))
    return dest


def build_wheel(out: pathlib.Path) -> pathlib.Path:
    """The wheel of this checkout's files (:func:`source_copy`), built without build isolation (the
    venv's setuptools)."""
    src = source_copy(out.parent / "src")
    _run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
        + ["--disable-pip-version-check", "-w", str(out), str(src)]
    )
    (wheel,) = out.glob("genbound-*.whl")
    return wheel


def missing_data_files(wheel: pathlib.Path) -> list[str]:
    """Files under genbound/data/ that git would commit but the wheel does not hold."""
    names = set(zipfile.ZipFile(wheel).namelist())
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "genbound/data"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return [p for p in sorted(listed) if p not in names]


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        wheel = build_wheel(tmp / "dist")
        lost = missing_data_files(wheel)
        if lost:
            print(f"wheel-check: the wheel leaves out {len(lost)} data files, e.g. {lost[:3]}")
            return 1
        site = tmp / "site"
        _run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "-q",
                "--no-deps",
                "--disable-pip-version-check",
            ]
            + ["--target", str(site), str(wheel)]
        )
        env = dict(os.environ, PYTHONPATH=str(site), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        where = _run(
            [sys.executable, "-c", "import genbound; print(genbound.__file__)"],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
        ).stdout.strip()
        if not where.startswith(str(site)):
            print(f"wheel-check: imported genbound from {where}, not from the installed wheel")
            return 1
        _run(
            [sys.executable, "-m", "genbound.cli", "--help"], cwd=tmp, env=env, capture_output=True
        )
        tests = [str(ROOT / t) for t in SAMPLE_TESTS]
        _run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(ROOT)]
            + tests,
            cwd=tmp,
            env=env,
        )
        print(
            f"wheel-check: {wheel.name} holds every data file; CLI and {len(tests)} test files pass"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
