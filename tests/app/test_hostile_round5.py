"""Issue 48 (reliability, round 5), the command line: outputs that never land on an input or on one
another, error lines bounded in length, a closed standard error, a deleted working directory.

Every refusal is one ``genbound: error:`` line and exit code 2, and leaves every file as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from genbound.testing import make_bert_checkpoint
from cli_runs import run_cli

ROOT = Path(__file__).resolve().parents[2]


def _env():
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env.pop("ATEN_CPU_CAPABILITY", None)
    return env


_in_process = run_cli


def _one_error_line(rc, err):
    assert rc == 2, (rc, err)
    assert "Traceback" not in err, err
    assert err.startswith("genbound: error: ") and err.count("\n") == 1, err
    return err


@pytest.fixture()
def ckpt(tmp_path):
    d = tmp_path / "bert"
    make_bert_checkpoint(d, layers=2, heads=2, hidden=8, d_ff=12, seed=3, std=0.3)
    return d


def _snapshot(folder: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


# ---------------------------------------------------------------------------------------------- outputs
@pytest.mark.parametrize("name", ["model.safetensors", "config.json"])
def test_analyze_csv_on_the_checkpoint_own_file_is_refused(ckpt, name):
    before = _snapshot(ckpt)
    rc, out, err = _in_process(["analyze", str(ckpt), "--quiet", "--csv", str(ckpt / name)])
    assert "a file of the checkpoint PATH" in _one_error_line(rc, err) and out == ""
    assert _snapshot(ckpt) == before


def test_analyze_csv_through_a_link_to_the_weights_is_refused(ckpt, tmp_path):
    before = _snapshot(ckpt)
    hard = tmp_path / "hard.csv"
    os.link(ckpt / "model.safetensors", hard)  # another name, the same inode
    soft = tmp_path / "soft.csv"
    soft.symlink_to(ckpt / "model.safetensors")
    for out in (hard, soft, ckpt / ".." / ckpt.name / "model.safetensors"):
        rc, _, err = _in_process(["analyze", str(ckpt), "--quiet", "--csv", str(out)])
        _one_error_line(rc, err)
    assert _snapshot(ckpt) == before


def test_analyze_csv_on_the_compared_checkpoint_is_refused(ckpt, tmp_path):
    b = tmp_path / "b"
    make_bert_checkpoint(b, layers=2, heads=2, hidden=8, d_ff=12, seed=4, std=0.3)
    before = _snapshot(b)
    argv = ["analyze", str(ckpt), "--compare", str(b), "--quiet", "--device", "cpu"]
    rc, _, err = _in_process(argv + ["--csv", str(b / "model.safetensors")])
    assert "--compare B" in _one_error_line(rc, err)
    assert _snapshot(b) == before


def test_analyze_csv_and_plot_on_one_file_are_refused(ckpt, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "both.png"
    argv = ["analyze", str(ckpt), "--quiet", "--csv", str(out), "--plot", str(out)]
    rc, _, err = _in_process(argv)
    assert "name one file" in _one_error_line(rc, err)
    assert not out.exists()


def test_analyze_writes_beside_the_checkpoint_when_the_file_is_new(ckpt):
    rc, _, err = _in_process(
        ["analyze", str(ckpt), "--quiet", "--device", "cpu", "--csv", str(ckpt / "table.csv")]
    )
    assert rc == 0, err
    assert (ckpt / "table.csv").read_text().startswith("kind,")


def test_certify_lm_csv_on_a_corpus_text_is_refused(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    text = "to be or not to be, that is the question\n" * 40
    (corpus / "a.txt").write_text(text, encoding="ascii")
    argv = ["experiment", "certify-lm", "--corpus", str(corpus), "--csv", str(corpus / "a.txt")]
    rc, _, err = _in_process(argv)
    assert "a corpus text" in _one_error_line(rc, err)
    assert (corpus / "a.txt").read_text(encoding="ascii") == text


# ---------------------------------------------------------------------------------------------- lengths
def test_a_huge_model_type_is_cut_in_the_error_line(ckpt):
    cfg = json.loads((ckpt / "config.json").read_text())
    cfg["model_type"] = "x" * 10**6
    (ckpt / "config.json").write_text(json.dumps(cfg))
    rc, _, err = _in_process(["analyze", str(ckpt), "--quiet", "--device", "cpu"])
    err = _one_error_line(rc, err)
    assert len(err) < 2000 and "(1000000 characters)" in err


def test_every_genbound_error_message_is_bounded():
    from genbound.errors import MAX_MESSAGE, ArchitectureError, shorten

    msg = str(ArchitectureError("y" * 10**6))
    assert len(msg) <= MAX_MESSAGE + 40 and msg.endswith("(1000000 characters)")
    assert shorten("short") == "short"


# ---------------------------------------------------------------------------------------------- streams
def _shell(script: str, cwd=None):
    p = subprocess.run(
        ["bash", "-c", script],
        cwd=str(cwd or ROOT),
        env=_env(),
        capture_output=True,
        timeout=180,
    )
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def test_with_stderr_closed_the_error_line_goes_nowhere():
    py = f"{sys.executable} -m genbound.cli"
    rc, out, _ = _shell(f"exec 2>&-; {py} analyze /nonexistent/ckpt")
    assert rc == 2 and out == ""
    rc, out, _ = _shell(f"exec 2>&-; {py} analyze --no-such-option")
    assert rc == 2 and out == ""


def test_a_deleted_working_directory_is_one_error_line(tmp_path):
    py = f"{sys.executable} -m genbound.cli"
    (tmp_path / "gone").mkdir()
    script = f"cd gone && rmdir ../gone && exec {py} analyze /nonexistent/ckpt"
    rc, out, err = _shell(script, cwd=tmp_path)
    err = _one_error_line(rc, err)
    assert "working directory" in err and "oneMKL" not in err and out == ""


# ---------------------------------------------------------------------------------------------- tensors
def test_analyze_refuses_a_meta_model_with_a_genbound_error():
    import torch

    import genbound
    from genbound.errors import GenboundError

    transformers = pytest.importorskip("transformers")
    cfg = transformers.BertConfig(
        hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=24
    )
    with torch.device("meta"):
        model = transformers.BertModel(cfg)
    with pytest.raises(GenboundError, match="meta device"):
        genbound.analyze(model, device="cpu")


def test_certify_csv_on_the_sweep_it_reads_is_refused(tmp_path):
    import shutil

    from genbound.experiments.sparse_majority import SAVED_SWEEP

    sweep = tmp_path / "sweep.csv"
    shutil.copyfile(SAVED_SWEEP, sweep)
    before = sweep.read_bytes()
    rc, _, err = _in_process(
        ["experiment", "certify", "--sweep", str(sweep), "--csv", str(tmp_path / "." / "sweep.csv")]
    )
    assert "the sweep it reads" in _one_error_line(rc, err)
    assert sweep.read_bytes() == before
