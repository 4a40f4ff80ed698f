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

from blocking import in_thread
from genbound import cli
from genbound.errors import CheckpointError, ParameterError, ResultsFileError
from genbound.testing import make_bert_checkpoint

ROOT = Path(__file__).resolve().parents[2]


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
        (["experiment", "certify", "--draws", "10000000"], "--draws must lie in"),
        (["claims", "--seed", "-3"], "--seed must lie in"),
        (
            ["experiment", "sparse-majority", "--seq-lens", "8192", "--n-train", "900000"],
            "MAX_TOKENS",
        ),
    ],
)
def test_numeric_parameters_have_ranges(argv, needle):
    rc, err = _in_process(argv)
    assert needle in _one_error_line(rc, err)


@pytest.mark.parametrize(
    "extra, needle",
    [(["--grid-m", "1000000000"], "--grid-m must lie in"), (["--rank-tol", "5"], "--rank-tol")],
)
def test_analyze_numeric_parameters_have_ranges(ckpt, extra, needle):
    rc, err = _in_process(["analyze", str(ckpt), "--quiet", "--device", "cpu", *extra])
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


# ------------------------------------------------------------------------------------ 2. results files
from genbound.experiments.runtime import results as res  # noqa: E402

SCHEMA = res.Schema("demo", (("n", int), ("seed", int), ("loss", float)), key=("n", "seed"))
ENV = {"threads": 1}


@pytest.mark.parametrize("kind", ["fifo", "zero", "null", "socket"])
def test_results_paths_that_are_not_regular_files(tmp_path, kind):
    import socket

    path = tmp_path / "r.csv"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
    else:
        path.symlink_to(f"/dev/{kind}")
    name = {"fifo": "FIFO", "zero": "character device", "null": "character device"}.get(
        kind, "socket"
    )
    for fn in (
        lambda: res.read_results(path, SCHEMA),
        lambda: res.open_results(path, SCHEMA, {"steps": 1}, environment=ENV),
    ):
        box = in_thread(fn)
        assert isinstance(box.get("error"), ResultsFileError), box
        assert name in str(box["error"])


def test_results_files_are_read_with_a_limit(tmp_path):
    path = tmp_path / "big.csv"
    with open(path, "wb") as fh:  # sparse: nothing is written, the size is what is checked
        fh.write(res.MAGIC.encode())
        fh.truncate(res.MAX_RESULTS_BYTES + 1)
    with pytest.raises(ResultsFileError, match="MAX_RESULTS_BYTES"):
        res.read_results(path, SCHEMA)


def _two_runs(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    w = res.open_results(a, SCHEMA, {"steps": 30}, environment=ENV)
    w.append([{"n": 1, "seed": 0, "loss": 0.5}])
    with res.open_results(b, SCHEMA, {"steps": 20}, environment=ENV) as wb:
        wb.append([{"n": 1, "seed": 0, "loss": 0.7}])
    return w, a, b


@pytest.mark.parametrize("how", ["rename", "copy", "append", "truncate", "edit"])
def test_a_file_replaced_mid_run_is_not_appended_to(tmp_path, how):
    w, a, b = _two_runs(tmp_path)
    if how == "rename":
        os.replace(b, a)
    elif how == "copy":
        shutil.copyfile(b, a)  # same inode, another run's header and rows
    elif how == "append":
        with open(a, "a") as fh:
            fh.write("9,9,0.1\n")
    elif how == "truncate":
        os.truncate(a, os.path.getsize(a) - 8)
    else:  # same size, another header value
        data = a.read_bytes()
        a.write_bytes(data.replace(b'"steps": 30', b'"steps": 99'))
    before = a.read_bytes()
    with pytest.raises(ResultsFileError, match="since this run opened it; nothing was appended"):
        w.append([{"n": 2, "seed": 0, "loss": 0.1}])
    assert a.read_bytes() == before
    w.close()


def test_the_run_own_file_still_takes_every_append(tmp_path):
    w, a, _ = _two_runs(tmp_path)
    for n in range(2, 6):
        w.append([{"n": n, "seed": 0, "loss": 0.1}])
    w.close()
    assert res.read_results(a, SCHEMA).keys == {(n, 0) for n in range(1, 6)}
    w = res.open_results(a, SCHEMA, {"steps": 30}, environment=ENV)  # a resume binds again
    w.append([{"n": 9, "seed": 0, "loss": 0.1}])
    w.close()


def test_analyze_csv_refuses_an_experiment_results_file(ckpt, tmp_path):
    target = tmp_path / "sweep.csv"
    with res.open_results(target, SCHEMA, {"steps": 30}, environment=ENV) as w:
        w.append([{"n": 1, "seed": 0, "loss": 0.5}])
    before = target.read_bytes()
    argv = ["analyze", str(ckpt), "--quiet", "--device", "cpu", "--csv", str(target)]
    rc, err = _in_process(argv)
    assert "results file of experiment 'demo'" in _one_error_line(rc, err) and "--overwrite" in err
    assert target.read_bytes() == before
    rc, err = _in_process(argv + ["--overwrite"])
    assert rc == 0 and not target.read_bytes().startswith(res.MAGIC.encode())
    rc, err = _in_process(argv)  # an analysis table may be replaced by another
    assert rc == 0, err


def test_experiment_csv_on_a_fifo_is_one_line_and_does_not_block(tmp_path):
    fifo = tmp_path / "f.csv"
    os.mkfifo(fifo)
    rc, _, err = _sub("experiment", "predict-gap", "--saved", "--csv", str(fifo), timeout=60)
    assert "FIFO" in _one_error_line(rc, err)


# ------------------------------------------------------------------------------------ 3. checkpoints
from genbound.weights import load_weights  # noqa: E402


def _spectra(path):
    s = load_weights(path).spectra()
    return torch.cat([t.flatten() for t in (s.qk.flatten(), s.v.flatten())])


def _copy(src, dst):
    shutil.copytree(src, dst, symlinks=True)
    return dst


def _bin_twin(src, dst):
    from safetensors.torch import load_file

    dst.mkdir()
    shutil.copy(src / "config.json", dst / "config.json")
    torch.save(load_file(str(src / "model.safetensors")), dst / "pytorch_model.bin")
    return dst


def test_a_tensor_in_two_shards_is_refused_naming_both(tmp_path):
    from safetensors.torch import load_file, save_file

    d = tmp_path / "sh"
    make_bert_checkpoint(d, layers=2, heads=2, hidden=8, d_ff=12, seed=5, shard=True)
    index = json.loads((d / "model.safetensors.index.json").read_text())
    name = "encoder.layer.0.attention.self.query.weight"
    own = index["weight_map"][name]
    other = next(f for f in set(index["weight_map"].values()) if f != own)
    t = load_file(str(d / other))
    t[name] = torch.randn(8, 8) * 10  # another value under the same name
    save_file(t, str(d / other))
    with pytest.raises(CheckpointError) as e:
        load_weights(d)
    assert "two shards" in str(e.value) and own in str(e.value) and other in str(e.value)


@pytest.mark.parametrize("fmt", ["safetensors", "bin"])
@pytest.mark.parametrize("how", ["rename", "rewrite"])
def test_a_checkpoint_changed_mid_run_is_an_error(ckpt, tmp_path, fmt, how):
    d = _copy(ckpt, tmp_path / "a") if fmt == "safetensors" else _bin_twin(ckpt, tmp_path / "a")
    o = tmp_path / "o"
    make_bert_checkpoint(o, layers=4, heads=2, hidden=8, d_ff=12, seed=99, std=0.3)
    if fmt == "bin":
        o = _bin_twin(o, tmp_path / "ob")
    fname = "model.safetensors" if fmt == "safetensors" else "pytorch_model.bin"
    w = load_weights(d)
    first = w.select(layers=[0]).spectra()  # layer 0 read from the first version
    assert first.qk.numel()
    if how == "rename":
        os.replace(o / fname, d / fname)
    else:  # same inode, other bytes (and a new modification time)
        data = bytearray((d / fname).read_bytes())
        data[-64:] = bytes(64)
        with open(d / fname, "r+b") as fh:
            fh.write(data)
        os.utime(d / fname, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    with pytest.raises(CheckpointError, match="during this run"):
        w.spectra()


def _bomb(clean_bin: Path, out: Path, inflated: int) -> Path:
    """A copy of a real .bin folder whose archive gains one deflated member of ``inflated`` zero
    bytes (a few hundred KiB on disk)."""
    import zipfile

    out.mkdir()
    shutil.copy(clean_bin / "config.json", out / "config.json")
    with (
        zipfile.ZipFile(clean_bin / "pytorch_model.bin") as src,
        zipfile.ZipFile(out / "pytorch_model.bin", "w") as dst,
    ):
        for m in src.infolist():
            dst.writestr(m, src.read(m), compress_type=zipfile.ZIP_STORED)
        prefix = src.infolist()[0].filename.split("/")[0]
        info = zipfile.ZipInfo(f"{prefix}/data/bomb")
        info.compress_type = zipfile.ZIP_DEFLATED
        zero = bytes(16 * 2**20)
        with dst.open(info, "w", force_zip64=True) as fh:
            for _ in range(inflated // len(zero)):
                fh.write(zero)
    return out


def _peak_kib(*args) -> tuple[int, int, str]:
    """Run the console command in a child and return ``(rc, its peak resident KiB, stderr)``."""
    code = (
        "import resource, subprocess, sys\n"
        "p = subprocess.run([sys.executable, '-m', 'genbound.cli', *sys.argv[1:]],"
        " capture_output=True, text=True)\n"
        "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "sys.stderr.write(p.stderr)\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=300,
    )
    rc, kib = map(int, p.stdout.split())
    return rc, kib, p.stderr


def test_a_decompression_bomb_is_refused_with_bounded_memory(ckpt, tmp_path):
    clean = _bin_twin(ckpt, tmp_path / "clean")
    bomb = _bomb(clean, tmp_path / "bomb", 512 * 2**20)
    assert (bomb / "pytorch_model.bin").stat().st_size < 2 * 2**20
    args = ("analyze", "--json", "--quiet", "--device", "cpu")
    rc0, normal, err0 = _peak_kib(args[0], str(clean), *args[1:])
    assert rc0 == 0, err0
    rc, peak, err = _peak_kib(args[0], str(bomb), *args[1:])
    assert "decompression bomb" in _one_error_line(rc, err)
    assert peak <= 1.5 * normal, (peak, normal)


def test_a_checkpoint_in_a_folder_whose_name_is_not_utf8(ckpt, tmp_path):
    want = _spectra(ckpt)
    raw = os.fsencode(tmp_path) + b"/ck-\xff\xfe"
    for kind in ("safetensors", "bin", "sharded"):
        src = tmp_path / f"src-{kind}"
        if kind == "safetensors":
            _copy(ckpt, src)
        elif kind == "bin":
            _bin_twin(ckpt, src)
        else:
            make_bert_checkpoint(
                src, layers=4, heads=2, hidden=8, d_ff=12, seed=3, std=0.3, shard=True
            )
        os.rename(os.fsencode(src), raw)
        path = Path(os.fsdecode(raw))
        assert torch.equal(_spectra(path), want), kind
        rc, err = _in_process(["analyze", os.fsdecode(raw), "--quiet", "--device", "cpu"])
        assert rc == 0 and err == "", (kind, err)
        os.rename(raw, os.fsencode(src))


# ----------------------------------------------------------------- 5. the Hugging Face cache layout
def _hf_cache(saved: Path, root: Path, rev: str = "0123abcd") -> Path:
    """The Hugging Face cache layout of the checkpoint folder ``saved``: every file a blob named by
    its hash, the snapshot folder holding symlinks ``../../blobs/HASH``, and ``refs/main``."""
    import hashlib

    repo = root / "models--org--tiny"
    (repo / "blobs").mkdir(parents=True)
    snap = repo / "snapshots" / rev
    snap.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(rev)
    for f in sorted(saved.iterdir()):
        digest = hashlib.sha256(f.read_bytes()).hexdigest()
        shutil.copy(f, repo / "blobs" / digest)
        (snap / f.name).symlink_to(Path("..", "..", "blobs", digest))
    return repo


def _older_bin_shards(src: Path, dst: Path) -> None:
    """The older sharded format (``pytorch_model-0000k-of-0000n.bin`` and
    ``pytorch_model.bin.index.json``, what save_pretrained wrote before safetensors became its only
    format) of a sharded safetensors folder: the same tensors, shard by shard, saved by torch."""
    from safetensors.torch import load_file

    dst.mkdir()
    shutil.copy(src / "config.json", dst / "config.json")
    index = json.loads((src / "model.safetensors.index.json").read_text())
    rename = {
        f: f.replace("model-", "pytorch_model-").replace(".safetensors", ".bin")
        for f in set(index["weight_map"].values())
    }
    for f, g in rename.items():
        torch.save(load_file(str(src / f)), dst / g)
    index["weight_map"] = {k: rename[v] for k, v in index["weight_map"].items()}
    (dst / "pytorch_model.bin.index.json").write_text(json.dumps(index))


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A tiny BERT saved by transformers' own save_pretrained: whole, sharded safetensors, sharded
    .bin."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    cfg = BertConfig(
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=24,
        vocab_size=40,
        max_position_embeddings=16,
    )
    model = BertModel(cfg)
    root = tmp_path_factory.mktemp("saved")
    model.save_pretrained(root / "whole")
    model.save_pretrained(root / "sharded", max_shard_size="8KB")
    _older_bin_shards(root / "sharded", root / "sharded-bin")
    assert (root / "sharded-bin" / "pytorch_model.bin.index.json").exists()
    return root


@pytest.mark.parametrize("kind", ["whole", "sharded", "sharded-bin"])
def test_the_hugging_face_cache_layout(saved, tmp_path, kind):
    want = _spectra(saved / "whole")
    repo = _hf_cache(saved / kind, tmp_path)
    snap = repo / "snapshots" / "0123abcd"
    assert all((snap / f).is_symlink() for f in os.listdir(snap))
    assert torch.equal(_spectra(snap), want)  # a snapshot path passed directly
    assert torch.equal(_spectra(repo), want)  # the model's cache folder: refs/main's snapshot
    rc, err = _in_process(["analyze", str(snap), "--quiet", "--device", "cpu"])
    assert rc == 0 and err == "", err


@pytest.mark.parametrize("kind", ["sharded", "sharded-bin"])
def test_an_index_entry_outside_the_folder_is_still_refused(saved, tmp_path, kind):
    repo = _hf_cache(saved / kind, tmp_path)
    snap = repo / "snapshots" / "0123abcd"
    name = next(f for f in os.listdir(snap) if f.endswith(".index.json"))
    index = json.loads((snap / name).read_text())
    key, shard = next(iter(index["weight_map"].items()))
    blob = os.readlink(snap / shard)  # ../../blobs/HASH: the very file, named from outside
    index["weight_map"][key] = blob
    (snap / name).unlink()
    (snap / name).write_text(json.dumps(index))
    with pytest.raises(CheckpointError, match="outside the checkpoint folder"):
        load_weights(snap)
