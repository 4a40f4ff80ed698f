"""Issue 62: ``genbound analyze``'s console read by a practitioner (a WeightWatcher user).

The implementation's details (spectrum routes, device, wall time, grid, mode) only with ``--verbose``;
the Edelman table's ``log_alpha`` printed as the "log peeling factor" (it is not a power-law alpha);
``--threads N`` checked (1 .. the cores present, one error line) and in force while the spectra are
computed; standard output redirected into a file of the checkpoint (a real shell redirect) refused
before anything is read or written, and into ``--csv``'s file too. The verdict's two lines are tested
in ``test_analyze_api.py``.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from genbound import cli
from genbound.analysis import cli as analysis_cli
from genbound.testing import make_bert_checkpoint
from genbound.weights.model import TransformerWeights
from cli_runs import run_cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def ckpt(tmp_path):
    d = tmp_path / "bert"
    make_bert_checkpoint(d, layers=2, heads=2, hidden=8, d_ff=16, seed=5, std=0.3)
    return d


_in_process = run_cli


def _one_error_line(rc, err):
    assert rc == 2, (rc, err)
    assert err.startswith("genbound: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


def _snapshot(folder: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


# ---------------------------------------------------------------------------------------------- --verbose
def test_routes_and_run_details_only_with_verbose(ckpt):
    rc, plain, err = _in_process(["analyze", str(ckpt), "--device", "cpu", "--quiet"])
    assert rc == 0, err
    rc, verbose, err = _in_process(["analyze", str(ckpt), "--device", "cpu", "--verbose"])
    assert rc == 0, err
    for internal in ("spectrum routes:", "qr-core", "device cpu", "grid m =", "mode exact"):
        assert internal not in plain, internal
        assert internal in verbose, internal
    # --verbose only adds lines: every line of the default report is in the verbose one, in order
    extra = verbose.splitlines()
    it = iter(extra)
    assert all(line in it for line in plain.splitlines())
    assert len(extra) == len(plain.splitlines()) + 2


def test_the_peeling_factor_is_not_called_alpha(ckpt):
    rc, out, err = _in_process(["analyze", str(ckpt), "--device", "cpu", "--quiet"])
    assert rc == 0, err
    assert "log_alpha" not in out and "alpha" not in out.replace("W_", "")
    header = next(s for s in out.splitlines() if s.startswith("kind ") and "QK" in s)
    assert header.split()[1:4] == ["log", "peeling", "factor"]


# ---------------------------------------------------------------------------------------------- --threads
@pytest.fixture()
def no_work(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("spectra were computed before the refusal")

    monkeypatch.setattr(TransformerWeights, "spectra", boom)


@pytest.mark.parametrize("bad", ["0", "-2", str((os.cpu_count() or 1) + 1)])
def test_threads_out_of_range_is_one_error_line_before_work(ckpt, tmp_path, no_work, bad):
    csv = tmp_path / "t.csv"
    rc, out, err = _in_process(["analyze", str(ckpt), "--threads", bad, "--csv", str(csv)])
    assert f"--threads must lie in 1 .. {os.cpu_count() or 1}" in _one_error_line(rc, err)
    assert out == "" and not csv.exists()


def test_threads_not_an_integer_is_one_error_line(ckpt, no_work):
    rc, _, err = _in_process(["analyze", str(ckpt), "--threads", "two"])
    assert "--threads" in _one_error_line(rc, err)


def test_threads_are_in_force_while_the_spectra_are_computed(ckpt, monkeypatch):
    before = torch.get_num_threads()
    want = 1 if before != 1 else 2
    if want > (os.cpu_count() or 1):
        pytest.skip("one core: no thread count other than torch's own")
    seen = []
    spectra = TransformerWeights.spectra

    def spy(self, *a, **k):
        seen.append(torch.get_num_threads())
        return spectra(self, *a, **k)

    monkeypatch.setattr(TransformerWeights, "spectra", spy)
    try:
        argv = ["analyze", str(ckpt), "--device", "cpu", "--json", "--threads", str(want)]
        rc, out, err = _in_process(argv)
    finally:
        torch.set_num_threads(before)
    assert rc == 0, err
    assert seen and set(seen) == {want} and json.loads(out)["n_matrices"] == 12


def test_help_says_the_threads_default(capsys):
    with pytest.raises(SystemExit):
        cli.main(["analyze", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--threads N" in text and "default: torch's own" in text and "--verbose" in text


# ---------------------------------------------------------------------------------------------- stdout
def _shell(command: str):
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env.pop("ATEN_CPU_CAPABILITY", None)
    return subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, env=env, timeout=300
    )


def _analyze(ckpt) -> str:
    return f"{shlex.quote(sys.executable)} -m genbound.cli analyze {shlex.quote(str(ckpt))} --quiet"


@pytest.mark.parametrize("name", ["model.safetensors", "config.json"])
def test_standard_output_appended_to_a_checkpoint_file_is_refused(ckpt, name):
    before = _snapshot(ckpt)
    out = _shell(f"{_analyze(ckpt)} --device cpu >> {shlex.quote(str(ckpt / name))}")
    err = _one_error_line(out.returncode, out.stderr)
    assert "standard output" in err and "a file of the checkpoint PATH" in err and name in err
    assert _snapshot(ckpt) == before


def test_standard_output_and_csv_on_one_file_are_refused(ckpt, tmp_path):
    f = tmp_path / "t.csv"
    out = _shell(
        f"{_analyze(ckpt)} --device cpu --csv {shlex.quote(str(f))} >> {shlex.quote(str(f))}"
    )
    assert "name one file" in _one_error_line(out.returncode, out.stderr)
    assert f.read_bytes() == b""


def test_standard_output_into_a_new_file_beside_works(ckpt, tmp_path):
    f = tmp_path / "report.json"
    out = _shell(f"{_analyze(ckpt)} --device cpu --json > {shlex.quote(str(f))}")
    assert out.returncode == 0, out.stderr
    assert json.loads(f.read_text())["n_matrices"] == 12


def test_standard_output_is_among_the_outputs_checked(ckpt, tmp_path, monkeypatch, no_work):
    """The in-process view of the redirect: the helper names the checkpoint's weights."""
    monkeypatch.setattr(analysis_cli, "standard_output", lambda: ckpt / "model.safetensors")
    rc, out, err = _in_process(["analyze", str(ckpt), "--device", "cpu"])
    assert "standard output" in _one_error_line(rc, err) and out == ""
