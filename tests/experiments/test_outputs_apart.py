"""Outputs apart from inputs in ``genbound experiment sparse-majority`` and ``predict-gap``: what a run
prints never lands in the results file it reads, verifies or resumes (``>> sweep.csv``, through another
name too), and a resume in place, printing elsewhere, still works.

Every refusal is one ``genbound: error:`` line and exit code 2, before anything is read, trained or
written, and leaves every file as it was."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from genbound import cli
from genbound.errors import ParameterError
from genbound.experiments import predict_gap as pg
from genbound.experiments import sparse_majority as sm
from genbound.experiments.runtime.outputs import check_apart, standard_output
from tiny_runs import SPARSE_MAJORITY_TINY

ROOT = Path(__file__).resolve().parents[2]
# the tiny sweep of tests/experiments/test_results_file.py: one model of T = 11, 40 Adam steps
SM_TINY = [*SPARSE_MAJORITY_TINY, "--seeds", "1"]
# the tiny family of tests/experiments/test_predict_gap.py::test_cli_axes_reach_the_family: one model
PG_TINY = [
    "--tasks",
    "digits",
    "--depths",
    "1",
    "--widths",
    "12",
    "--seeds",
    "1",
    "--steps",
    "60",
    "--label-noises",
    "0",
    "--input-flips",
    "0",
    "--init-scales",
    "1",
    "--n-train-digits",
    "20",
]


def _cli(argv, stdout: Path | None = None):
    """``genbound ARGV`` in this process, its standard output appended to the file ``stdout`` (as
    ``>> stdout`` does; a string buffer when ``None``): ``(exit code, standard error)``."""
    err = io.StringIO()
    with contextlib.ExitStack() as stack:
        out = io.StringIO() if stdout is None else stack.enter_context(open(stdout, "a"))
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        rc = cli.main(argv)
    return rc, err.getvalue()


def _one_error_line(rc, err):
    assert rc == 2, (rc, err)
    assert "Traceback" not in err, err
    assert err.startswith("genbound: error: ") and err.count("\n") == 1, err
    return err


def _snapshot(folder: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _other_name(kind: str, path: Path) -> Path:
    """Another name of the file ``path``: the path itself, spelt with ``..``, a symlink or a hard link."""
    if kind == "same":
        return path
    if kind == "dotdot":
        return path.parent / ".." / path.parent.name / path.name
    other = path.parent / f"{kind}-link.txt"
    if kind == "symlink":
        other.symlink_to(path)
    else:
        os.link(path, other)
    return other


@pytest.fixture(autouse=True)
def _keep_torch_threads():
    """The command line sets torch's threads (--threads); put them back after every test."""
    import torch

    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)


@pytest.fixture()
def sweep(tmp_path) -> Path:
    """A results file of one tiny sparse-majority run (T = 11, seed 0)."""
    path = tmp_path / "sweep.csv"
    rc, err = _cli(
        ["experiment", "sparse-majority", "--seq-lens", "11", *SM_TINY, "--csv", str(path)]
    )
    assert rc == 0, err
    assert sm.read_sweep(path).keys == {(11, 0)}
    return path


# ------------------------------------------------------------------------------------ the helper
def test_standard_output_names_the_file_it_was_redirected_to(tmp_path):
    target = tmp_path / "out.txt"
    with open(target, "a") as fh, contextlib.redirect_stdout(fh):
        found = standard_output()
    assert found is not None and os.path.samefile(found, target)
    with open(os.devnull, "w") as fh, contextlib.redirect_stdout(fh):
        assert standard_output() is None  # a device, never a file of the command
    with contextlib.redirect_stdout(io.StringIO()):
        assert standard_output() is None


def test_standard_output_through_a_link_is_the_input_it_names(tmp_path):
    data = tmp_path / "data.csv"
    data.write_text("precious\n")
    for kind in ("symlink", "hardlink"):
        with open(_other_name(kind, data), "a") as fh, contextlib.redirect_stdout(fh):
            with pytest.raises(ParameterError, match="is the data it reads"):
                check_apart({"standard output": standard_output()}, {"the data it reads": [data]})
    assert data.read_text() == "precious\n"


# ------------------------------------------------------------------------------------ predict-gap
@pytest.mark.parametrize("kind", ["same", "dotdot", "symlink", "hardlink"])
def test_predict_gap_saved_printing_into_the_family_it_reads_is_refused(tmp_path, kind):
    fam = tmp_path / "fam.csv"
    shutil.copyfile(pg.SAVED_FAMILY, fam)
    target = _other_name(kind, fam)
    before = _snapshot(tmp_path)
    argv = ["experiment", "predict-gap", "--saved", "--json", "--csv", str(fam)]
    rc, err = _cli(argv + ["--boot", "20", "--nulls", "10"], stdout=target)
    assert "is the family it reads (--csv)" in _one_error_line(rc, err)
    assert _snapshot(tmp_path) == before


def test_predict_gap_saved_into_the_shipped_family_is_refused_through_the_shell(tmp_path):
    """A real ``>>`` of the shell, onto the family ``--saved`` reads by default, through a symlink."""
    fam = tmp_path / "fam.csv"
    shutil.copyfile(pg.SAVED_FAMILY, fam)
    link = tmp_path / "link.csv"
    link.symlink_to(fam)
    before = fam.read_bytes()
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    script = (
        f'"{sys.executable}" -m genbound.cli experiment predict-gap --saved --csv "{fam}" '
        f'--boot 20 --nulls 10 >> "{link}"'
    )
    p = subprocess.run(
        ["bash", "-c", script], cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith("genbound: error: standard output ") and p.stderr.count("\n") == 1
    assert str(fam) in p.stderr and fam.read_bytes() == before


def test_predict_gap_training_printing_into_its_results_file_is_refused(tmp_path):
    fam = tmp_path / "fam.csv"
    fam.touch()  # the shell creates the file of '> fam.csv' before genbound starts
    rc, err = _cli(["experiment", "predict-gap", *PG_TINY, "--csv", str(fam)], stdout=fam)
    assert "--csv and standard output name one file" in _one_error_line(rc, err)
    assert fam.read_bytes() == b"" and _snapshot(tmp_path) == {"fam.csv": b""}


# ------------------------------------------------------------------------------------ sparse-majority
@pytest.mark.parametrize("kind", ["same", "symlink", "hardlink"])
def test_sparse_majority_resume_printing_into_its_results_file_is_refused(sweep, kind):
    target = _other_name(kind, sweep)
    before = _snapshot(sweep.parent)
    argv = ["experiment", "sparse-majority", "--seq-lens", "11,13", *SM_TINY, "--csv", str(sweep)]
    rc, err = _cli(argv, stdout=target)
    assert "--csv and standard output name one file" in _one_error_line(rc, err)
    assert _snapshot(sweep.parent) == before


@pytest.mark.parametrize("kind", ["same", "hardlink"])
def test_sparse_majority_verify_printing_into_the_sweep_it_verifies_is_refused(sweep, kind):
    target = _other_name(kind, sweep)
    before = _snapshot(sweep.parent)
    argv = ["experiment", "sparse-majority", "--verify-saved", "1", "--saved-csv", str(sweep)]
    rc, err = _cli(argv, stdout=target)
    assert "is the sweep it verifies (--saved-csv)" in _one_error_line(rc, err)
    assert _snapshot(sweep.parent) == before


def test_sparse_majority_resume_in_place_printing_elsewhere_still_works(sweep):
    """The intended use: the same command, the same file, resumed in place (here through a symlink too),
    with what it prints redirected to a file of its own."""
    out = sweep.parent / "printed.txt"
    argv = ["experiment", "sparse-majority", "--seq-lens", "11,13", *SM_TINY, "--csv"]
    rc, err = _cli(argv + [str(sweep)], stdout=out)
    assert rc == 0, err
    assert sm.read_sweep(sweep).keys == {(11, 0), (13, 0)}
    link = sweep.parent / "again.csv"
    link.symlink_to(sweep)
    rc, err = _cli(argv + [str(link)], stdout=out)  # everything done: nothing trained
    assert rc == 0, err
    assert sm.read_sweep(sweep).keys == {(11, 0), (13, 0)}
    printed = out.read_text().splitlines()
    assert printed[0].split()[:2] == ["seq_len", "seed"] and printed[1].split()[:2] == ["13", "0"]
