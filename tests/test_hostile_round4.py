"""Issue 37 (reliability, round 4) and the cache-layout item of issue 41: outputs that fail, arguments
argparse refuses, parameters without limits, results files that are not files or are swapped under a
run, checkpoints that disagree with themselves or change mid-run, decompression bombs, non-UTF-8
paths, and the Hugging Face cache layout.

Every command case ends in exactly one ``genbound: error:`` line and exit code 2 (130 for Ctrl-C, 141
for a closed pipe, as before), never a traceback."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from genbound import cli
from genbound.errors import CheckpointError, ParameterError, ResultsFileError
from genbound.testing import make_bert_checkpoint

ROOT = Path(__file__).resolve().parents[1]


def _env():
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env.pop("ATEN_CPU_CAPABILITY", None)
    return env


def _sub(*args, timeout=120, **kw):
    """The console command in a fresh interpreter: ``(rc, stdout, stderr)``."""
    kw.setdefault("stdout", subprocess.PIPE)
    p = subprocess.run(
        [sys.executable, "-m", "genbound.cli", *args],
        cwd=str(ROOT),
        env=_env(),
        stderr=subprocess.PIPE,
        timeout=timeout,
        **kw,
    )
    out = p.stdout.decode() if isinstance(p.stdout, bytes) else ""
    return p.returncode, out, p.stderr.decode()


def _one_error_line(rc, err, code=2):
    assert rc == code, (rc, err)
    assert "Traceback" not in err, err
    assert err.startswith("genbound: error: ") and err.count("\n") == 1, err
    return err


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    d = tmp_path_factory.mktemp("ck") / "bert"
    make_bert_checkpoint(d, layers=4, heads=2, hidden=8, d_ff=12, seed=3, std=0.3)
    return d


# ---------------------------------------------------------------------------------------- 1. the CLI edge
class _FailingStream(io.TextIOBase):
    """A standard output whose every write fails with ``errno``."""

    def __init__(self, code):
        self.code = code

    def writable(self):
        return True

    def write(self, s):
        raise OSError(self.code, os.strerror(self.code))

    def flush(self):
        pass

    def isatty(self):
        return False


def _commands(ckpt):
    """Every subcommand, each with an invocation that prints to standard output (cheap: a listing, an
    analysis of a tiny checkpoint, or the subcommand's --help)."""
    return {
        "genbound": [],
        "claims": ["claims"],
        "analyze": ["analyze", str(ckpt), "--json", "--device", "cpu", "--quiet"],
        "experiment": ["experiment"],
        "sparse-majority": ["experiment", "sparse-majority", "--help"],
        "predict-gap": ["experiment", "predict-gap", "--help"],
        "certify": ["experiment", "certify", "--help"],
    }


BAD_ARGS = {
    "genbound": ["--bogus"],
    "claims": ["claims", "--seed", "1.5"],
    "analyze": ["analyze"],
    "experiment": ["experiment", "no-such-experiment"],
    "sparse-majority": ["experiment", "sparse-majority", "--seeds", "1.5"],
    "predict-gap": ["experiment", "predict-gap", "--boot", "many"],
    "certify": ["experiment", "certify", "--draws"],
}


def _in_process(argv, stdout=None):
    err = io.StringIO()
    out = stdout if stdout is not None else io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(argv)
    return rc, err.getvalue()


@pytest.mark.parametrize("command", list(BAD_ARGS))
def test_argument_errors_are_one_line(command):
    rc, err = _in_process(BAD_ARGS[command])
    err = _one_error_line(rc, err)
    assert "usage:" not in err


@pytest.mark.parametrize(
    "code", [errno.ENOSPC, errno.EBADF, errno.EACCES, errno.EIO], ids=errno.errorcode.get
)
@pytest.mark.parametrize(
    "command",
    ["genbound", "claims", "analyze", "experiment", "sparse-majority", "predict-gap", "certify"],
)
def test_output_errors_are_one_line(ckpt, command, code):
    rc, err = _in_process(_commands(ckpt)[command], stdout=_FailingStream(code))
    err = _one_error_line(rc, err)
    assert os.strerror(code) in err


@pytest.mark.parametrize("command", ["claims", "analyze", "sparse-majority"])
def test_a_closed_pipe_stays_silent(ckpt, command):
    rc, err = _in_process(_commands(ckpt)[command], stdout=_FailingStream(errno.EPIPE))
    assert rc == cli.EXIT_BROKEN_PIPE and err == ""


def test_full_device_and_closed_stdout_in_a_real_process(ckpt, tmp_path):
    with open("/dev/full", "wb") as full:
        for args in (["claims"], ["--help"], ["experiment", "certify", "--help"]):
            rc, _, err = _sub(*args, stdout=full)
            assert "No space left on device" in _one_error_line(rc, err)
        rc, _, err = _sub("analyze", str(ckpt), "--json", "--quiet", "--device", "cpu", stdout=full)
        _one_error_line(rc, err)
    rc, _, err = _sub(
        "claims",
        stdout=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        close_fds=True,
        preexec_fn=lambda: os.close(1),
    )
    assert "standard output is closed" in _one_error_line(rc, err)
    # a file output on a full device (--csv /dev/full): one line naming the reason
    rc, _, err = _sub("analyze", str(ckpt), "--quiet", "--device", "cpu", "--csv", "/dev/full")
    assert "No space left on device" in _one_error_line(rc, err)


# ------------------------------------------------------------------------------ 4. numeric parameters
@pytest.mark.parametrize(
    "argv, needle",
    [
        (["experiment", "sparse-majority", "--seq-lens", "1000000000"], "--seq-lens must lie in"),
        (["experiment", "sparse-majority", "--threads", "100000"], "--threads must lie in 1 .."),
        (["experiment", "sparse-majority", "--seeds", "0"], "--seeds must lie in"),
        (["experiment", "sparse-majority", "--first-seed", "-1"], "--first-seed must lie in"),
        (["experiment", "sparse-majority", "--n-train", "10000000000"], "--n-train must lie in"),
        (["experiment", "predict-gap", "--csv", "x.csv", "--widths", "8,100000"], "--widths"),
        (["experiment", "predict-gap", "--threads", "100000"], "--threads must lie in 1 .."),
        (["experiment", "certify", "--draws", "0"], "--draws must lie in"),
        (["claims", "--seed", "-3"], "--seed must lie in"),
    ],
)
def test_numeric_parameters_have_ranges(argv, needle):
    rc, err = _in_process(argv)
    assert needle in _one_error_line(rc, err)


def test_threads_up_to_the_cores_present():
    rc, err = _in_process(
        ["experiment", "sparse-majority", "--threads", str((os.cpu_count() or 1) + 1)]
    )
    assert f"1 .. {os.cpu_count()}" in _one_error_line(rc, err)


def test_a_huge_layer_list_gives_a_short_line_fast(ckpt):
    layers = [str(i % 4) for i in range(60_000)]
    t0 = time.perf_counter()
    rc, err = _in_process(["analyze", str(ckpt), "--quiet", "--device", "cpu", "--layers", *layers])
    seconds = time.perf_counter() - t0
    err = _one_error_line(rc, err)
    assert "repeat layers" in err and "60000 in all" in err and len(err) < 400
    assert seconds < 10  # the quadratic check took 17 s here; linear takes well under a second
    rc, err = _in_process(["experiment", "sparse-majority", "--seq-lens", ",".join(["x"] * 60_000)])
    assert len(_one_error_line(rc, err)) < 400


def test_layer_ids_is_linear_and_short():
    from genbound.weights.model import layer_ids

    with pytest.raises(ParameterError) as e:
        layer_ids(4, list(range(4)) * 20_000)
    assert len(str(e.value)) < 300
    with pytest.raises(ParameterError) as e:
        layer_ids(4, list(range(100, 60_100)))
    assert len(str(e.value)) < 300 and "60000 in all" in str(e.value)
