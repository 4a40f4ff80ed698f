"""Every bad checkpoint file is one clear error: property tests that corrupt real files.

``genbound analyze`` must answer a corrupt, truncated or empty weight file, a ``.bin`` that is not a
zip or holds anything but tensors, a sharded index that names a missing shard, and a config whose sizes
are not positive integers with exactly one line ``genbound: error: ...`` on stderr and exit code 2 (no
traceback), and must never execute anything pickled in a ``.bin``. The properties run ``main`` in
process (any other exception fails the test outright); a few cases also run the console command in a
fresh interpreter.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genbound.errors import CheckpointError, GenboundError
from genbound.testing import make_bert_checkpoint
from genbound.weights import load_weights
from cli_runs import run_cli

HYP = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """A tiny real checkpoint (safetensors), its .bin twin, and the clean numbers."""
    root = tmp_path_factory.mktemp("clean")
    st_dir = root / "st"
    make_bert_checkpoint(st_dir, layers=2, heads=2, hidden=8, d_ff=12, seed=5, std=0.3)
    from safetensors.torch import load_file

    bin_dir = root / "bin"
    bin_dir.mkdir()
    shutil.copy(st_dir / "config.json", bin_dir / "config.json")
    torch.save(load_file(str(st_dir / "model.safetensors")), bin_dir / "pytorch_model.bin")
    rc, out, err = run_main(st_dir)
    assert rc == 0 and err == ""
    return {
        "st": st_dir,
        "bin": bin_dir,
        "json": json.loads(out),
        "st_bytes": (st_dir / "model.safetensors").read_bytes(),
        "bin_bytes": (bin_dir / "pytorch_model.bin").read_bytes(),
    }


def run_main(path) -> tuple[int, str, str]:
    return run_cli(["analyze", str(path), "--json", "--device", "cpu", "--quiet"])


def assert_one_error_line(path) -> str:
    rc, out, err = run_main(path)
    assert rc == 2, (rc, out, err)
    assert (
        out == ""
        and err.startswith("genbound: error: ")
        and err.endswith("\n")
        and err.count("\n") == 1
    ), err
    return err


def with_file(tmp_path: Path, clean: dict, kind: str, data: bytes) -> Path:
    """A copy of the clean checkpoint folder whose weight file holds ``data``."""
    folder = tmp_path / f"case-{kind}"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    shutil.copy(clean[kind] / "config.json", folder / "config.json")
    name = "model.safetensors" if kind == "st" else "pytorch_model.bin"
    (folder / name).write_bytes(data)
    return folder


def header_length(data: bytes) -> int:
    return struct.unpack("<Q", data[:8])[0]


# --------------------------------------------------------------------------------------------------
# safetensors: truncation, flipped header bytes, lying lengths, empty


@st.composite
def cut_points(draw, data: bytes):
    """A truncation point in one of the three regions: the length field, the header, the data."""
    n = header_length(data)
    region = draw(st.sampled_from(["length", "header", "data"]))
    lo, hi = {"length": (0, 7), "header": (8, 8 + n - 1), "data": (8 + n, len(data) - 1)}[region]
    return draw(st.integers(lo, hi))


@HYP
@given(data=st.data())
def test_truncated_safetensors(tmp_path, clean, data):
    raw = clean["st_bytes"]
    cut = data.draw(cut_points(raw))
    folder = with_file(tmp_path, clean, "st", raw[:cut])
    err = assert_one_error_line(folder)
    assert "model.safetensors" in err
    with pytest.raises(CheckpointError):
        load_weights(folder)


@HYP
@given(data=st.data())
def test_flipped_header_bytes(tmp_path, clean, data):
    """A flipped byte in the header is an error, or (whitespace, metadata, the name of a bias) leaves a
    file that still loads: then the numbers are exactly the clean ones. Never anything else."""
    raw = bytearray(clean["st_bytes"])
    n = header_length(raw)
    pos = data.draw(st.integers(8, 8 + n - 1))
    raw[pos] ^= data.draw(st.integers(1, 255))
    folder = with_file(tmp_path, clean, "st", bytes(raw))
    rc, out, err = run_main(folder)
    if rc == 0:
        got = json.loads(out)
        assert err == ""
        for key in ("spectral_adaptive", "edelman_log", "layers", "hidden", "heads", "d_ff"):
            assert got[key] == clean["json"][key], key
    else:
        assert rc == 2 and err.startswith("genbound: error: ") and err.count("\n") == 1, err


@HYP
@given(data=st.data())
def test_lying_header_length(tmp_path, clean, data):
    raw = clean["st_bytes"]
    n = header_length(raw)
    lie = data.draw(
        st.one_of(st.integers(0, 2**64 - 1), st.integers(max(0, n - 64), n + 64)).filter(
            lambda x: x != n
        )
    )
    folder = with_file(tmp_path, clean, "st", struct.pack("<Q", lie) + raw[8:])
    err = assert_one_error_line(folder)
    assert "model.safetensors" in err


@HYP
@given(data=st.data())
def test_lying_tensor_offsets_and_shapes(tmp_path, clean, data):
    """Rewrite one tensor's data offsets or shape in an otherwise valid header: always an error."""
    raw = clean["st_bytes"]
    n = header_length(raw)
    header = json.loads(raw[8 : 8 + n])
    name = data.draw(st.sampled_from(sorted(k for k in header if k != "__metadata__")))
    what = data.draw(st.sampled_from(["begin", "end", "shape"]))
    delta = data.draw(st.integers(-10_000, 10_000).filter(lambda d: d != 0))
    entry = header[name]
    if what == "shape":
        entry["shape"] = [max(0, entry["shape"][0] + delta)] + entry["shape"][1:]
        if entry["shape"][0] == json.loads(raw[8 : 8 + n])[name]["shape"][0]:
            entry["shape"].append(2)
    else:
        i = 0 if what == "begin" else 1
        entry["data_offsets"][i] = max(0, entry["data_offsets"][i] + delta)
        if entry["data_offsets"] == json.loads(raw[8 : 8 + n])[name]["data_offsets"]:
            entry["data_offsets"][1] += 1
    text = json.dumps(header).encode()
    folder = with_file(tmp_path, clean, "st", struct.pack("<Q", len(text)) + text + raw[8 + n :])
    assert_one_error_line(folder)


def test_empty_and_tiny_safetensors(tmp_path, clean):
    for data, msg in (
        (b"", "is empty"),
        (b"\x01\x02\x03", "too short"),
        (b"\x00" * 8, "corrupt header"),
    ):
        err = assert_one_error_line(with_file(tmp_path, clean, "st", data))
        assert msg in err, err


def test_non_float_weight_is_refused(tmp_path, clean):
    """A header whose dtype says integers (e.g. a flipped 'F32' -> 'I32') is refused by name."""
    raw = clean["st_bytes"]
    n = header_length(raw)
    header = json.loads(raw[8 : 8 + n])
    header["encoder.layer.0.attention.self.key.weight"]["dtype"] = "I32"
    text = json.dumps(header).encode()
    err = assert_one_error_line(
        with_file(tmp_path, clean, "st", struct.pack("<Q", len(text)) + text + raw[8 + n :])
    )
    assert "attention.self.key.weight" in err and "I32" in err


# --------------------------------------------------------------------------------------------------
# pytorch_model.bin: not a zip, truncated, not tensors, never executed


@HYP
@given(data=st.data())
def test_truncated_bin(tmp_path, clean, data):
    raw = clean["bin_bytes"]
    cut = data.draw(st.integers(0, len(raw) - 1))
    err = assert_one_error_line(with_file(tmp_path, clean, "bin", raw[:cut]))
    assert "pytorch_model.bin" in err


@HYP
@given(junk=st.binary(min_size=0, max_size=300))
def test_bin_that_is_not_a_zip(tmp_path, clean, junk):
    err = assert_one_error_line(with_file(tmp_path, clean, "bin", junk))
    assert "pytorch_model.bin" in err


class _Payload:
    """Unpickling this would create the marker file (the classic malicious pickle)."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


@pytest.mark.parametrize("writer", ["torch.save", "pickle.dump"])
def test_malicious_pickle_is_never_executed(tmp_path, clean, writer):
    marker = tmp_path / "marker-created-by-unpickling"
    folder = with_file(tmp_path, clean, "bin", b"")
    obj = {"encoder.layer.0.attention.self.query.weight": _Payload(str(marker))}
    if writer == "torch.save":
        torch.save(obj, folder / "pytorch_model.bin")
    else:
        with open(folder / "pytorch_model.bin", "wb") as f:
            pickle.dump(obj, f)
    # the payload works: a plain unpickler would run it
    with open(tmp_path / "probe.pkl", "wb") as f:
        pickle.dump(_Payload(str(tmp_path / "probe-marker")), f)
    with open(tmp_path / "probe.pkl", "rb") as f:
        pickle.load(f)
    assert (tmp_path / "probe-marker").is_dir()
    err = assert_one_error_line(folder)
    assert "weights_only" in err and "safetensors" in err and "nothing in it was executed" in err
    if writer == "torch.save":  # torch's own pickler: the refusal names the blocked global
        assert "GLOBAL posix.mkdir" in err and "holds objects other than tensors" in err
    assert not marker.exists()
    with pytest.raises(CheckpointError):
        load_weights(folder)
    assert not marker.exists()


@pytest.mark.parametrize(
    "obj, msg",
    [
        ([torch.zeros(2)], "holds a list"),
        ({"a": torch.zeros(2), "b": 3}, "entry 'b' of type int"),
        ({"state_dict": {"a": torch.zeros(2)}}, "entry 'state_dict' of type dict"),
        (torch.zeros(3), "holds a Tensor"),
    ],
)
def test_bin_holding_non_tensors(tmp_path, clean, obj, msg):
    folder = with_file(tmp_path, clean, "bin", b"")
    torch.save(obj, folder / "pytorch_model.bin")
    err = assert_one_error_line(folder)
    assert msg in err and "safetensors" in err


# --------------------------------------------------------------------------------------------------
# sharded checkpoints and configs


def _sharded(tmp_path) -> Path:
    d = tmp_path / "sharded"
    make_bert_checkpoint(d, layers=2, heads=2, hidden=8, d_ff=12, seed=5, shard=True)
    return d


def test_sharded_index_problems(tmp_path):
    d = _sharded(tmp_path)
    assert load_weights(d).n_layers == 2
    index = json.loads((d / "model.safetensors.index.json").read_text())
    (d / "model-layer-00001.safetensors").rename(d / "moved.safetensors")
    err = assert_one_error_line(d)
    assert "model-layer-00001.safetensors" in err and "does not exist" in err
    (d / "moved.safetensors").rename(d / "model-layer-00001.safetensors")
    bad = dict(
        index,
        weight_map={
            **index["weight_map"],
            "encoder.layer.0.output.dense.weight": "../../outside.safetensors",
        },
    )
    (d / "model.safetensors.index.json").write_text(json.dumps(bad))
    assert "outside the checkpoint folder" in assert_one_error_line(d)
    (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}}))
    assert "weight_map" in assert_one_error_line(d)
    (d / "model.safetensors.index.json").write_text("{")
    assert "not valid JSON" in assert_one_error_line(d)
    wrong = dict(
        index,
        weight_map={
            **index["weight_map"],
            "encoder.layer.0.output.dense.weight": "model-layer-00001.safetensors",
        },
    )
    (d / "model.safetensors.index.json").write_text(json.dumps(wrong))
    assert "lacks" in assert_one_error_line(d)


@pytest.mark.parametrize(
    "key", ["hidden_size", "num_attention_heads", "intermediate_size", "num_hidden_layers"]
)
@pytest.mark.parametrize("value", [2.5, 0, -1, "12", True, 8.0, [8]])
def test_config_sizes_must_be_positive_integers(tmp_path, clean, key, value):
    folder = with_file(tmp_path, clean, "st", clean["st_bytes"])
    cfg = json.loads((folder / "config.json").read_text())
    cfg[key] = value
    (folder / "config.json").write_text(json.dumps(cfg))
    err = assert_one_error_line(folder)
    assert key in err and "positive integer" in err


@pytest.mark.parametrize(
    "text, msg",
    [
        ("", "is empty"),
        ("{", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        (b"\xff\xfe{}", "not UTF-8"),
    ],
)
def test_bad_config_files(tmp_path, clean, text, msg):
    folder = with_file(tmp_path, clean, "st", clean["st_bytes"])
    p = folder / "config.json"
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    err = assert_one_error_line(folder)
    assert msg in err and "config.json" in err


# --------------------------------------------------------------------------------------------------
# the console command itself, in a fresh interpreter


def test_console_command_exit_code_and_one_line(tmp_path, clean):
    """The real command in a fresh interpreter (no warning or traceback reaches stderr): a truncated
    safetensors file, and a .bin whose pickle would create a directory if it were ever executed."""
    raw = clean["st_bytes"]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    cases = [with_file(tmp_path / "a", clean, "st", raw[: len(raw) // 2])]
    marker = tmp_path / "marker"
    folder = with_file(tmp_path / "b", clean, "bin", b"")
    torch.save({"x": _Payload(str(marker))}, folder / "pytorch_model.bin")
    cases.append(folder)
    root = Path(__file__).resolve().parents[2]
    env = {"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)}
    for case in cases:
        out = subprocess.run(
            [sys.executable, "-m", "genbound.cli", "analyze", str(case), "--json"],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert out.returncode == 2, out.stderr
        assert (
            out.stdout == ""
            and out.stderr.startswith("genbound: error: ")
            and out.stderr.count("\n") == 1
        ), out.stderr
    assert not marker.exists()


def test_errors_are_genbound_errors():
    assert issubclass(CheckpointError, GenboundError)
