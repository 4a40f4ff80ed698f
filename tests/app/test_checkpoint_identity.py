"""Which bytes a report of ``genbound analyze`` was computed from: the ``checkpoint`` record
(:mod:`genbound.analysis.identity`), checked against ``hashlib`` over the same files, against one byte
changed, a renamed folder, a sharded checkpoint, a model in memory, ``--no-hash`` and ``--compare``."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest
import torch

import genbound
from genbound.analysis import identity
from genbound.analysis.identity import folder_record
from genbound.testing import make_bert_checkpoint
from cli_runs import run_cli

SIZES = dict(layers=2, heads=2, hidden=8, d_ff=16)


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _listing_sha(folder, names) -> str:
    """The combined digest as the docs say to reproduce it: ``sha256sum`` of the files, sorted."""
    text = "".join(f"{_sha(folder / n)}  {n}\n" for n in sorted(names))
    return hashlib.sha256(text.encode()).hexdigest()


def _analyze_json(path, *extra) -> dict:
    rc, out, err = run_cli(["analyze", str(path), "--json", "--device", "cpu", "--quiet", *extra])
    assert rc == 0, err
    return json.loads(out)


@pytest.fixture
def ckpt(tmp_path):
    make_bert_checkpoint(tmp_path / "model", seed=0, **SIZES)
    return tmp_path / "model"


def test_json_record_equals_hashlib_over_the_files_read(ckpt):
    d = _analyze_json(ckpt)
    assert "checkpoint" in d and "checkpoint" in genbound.analysis.JSON_FIELDS
    rec = d["checkpoint"]
    assert set(rec) == set(identity.CHECKPOINT_FIELDS)
    assert rec["kind"] == "folder" and rec["hashed"] is True and rec["path"] == str(ckpt)
    names = [f["name"] for f in rec["files"]]
    assert names == ["config.json", "model.safetensors"]
    assert [f["role"] for f in rec["files"]] == ["config", "weights"]
    for f in rec["files"]:
        assert f["sha256"] == _sha(ckpt / f["name"])
        assert f["size"] == (ckpt / f["name"]).stat().st_size
    assert rec["bytes"] == sum(f["size"] for f in rec["files"])
    assert rec["sha256"] == _listing_sha(ckpt, names)
    assert rec["weights_sha256"] == _listing_sha(ckpt, ["model.safetensors"])


def test_console_names_the_digest(ckpt):
    rc, out, _ = run_cli(["analyze", str(ckpt), "--device", "cpu", "--quiet"])
    lines = out.splitlines()
    combined = _listing_sha(ckpt, ["config.json", "model.safetensors"])
    mine = [x for x in lines if x.startswith("checkpoint")]
    assert rc == 0 and len(mine) == 1 and lines.index(mine[0]) < 12
    assert mine[0].startswith(f"checkpoint sha256 {combined[:12]} (2 files, ")
    assert sum(combined[:12] in x for x in lines) == 1 and combined[:13] not in out


def test_one_byte_changed_in_a_shard_changes_the_digest(ckpt):
    before = folder_record(ckpt)
    shard = ckpt / "model.safetensors"
    data = bytearray(shard.read_bytes())
    data[-1] ^= 1  # the last byte of the last tensor's data
    shard.write_bytes(bytes(data))
    after = folder_record(ckpt)
    assert after["files"][0] == before["files"][0]  # config.json unchanged
    assert after["files"][1]["sha256"] != before["files"][1]["sha256"]
    assert after["files"][1]["sha256"] == hashlib.sha256(bytes(data)).hexdigest()
    assert after["sha256"] != before["sha256"]
    assert after["weights_sha256"] != before["weights_sha256"]


def test_a_renamed_folder_with_the_same_bytes_has_the_same_digest(ckpt, tmp_path):
    other = tmp_path / "renamed elsewhere"
    shutil.copytree(ckpt, other)
    a, b = folder_record(ckpt), folder_record(other)
    assert a["path"] != b["path"]
    assert a["sha256"] == b["sha256"] and a["weights_sha256"] == b["weights_sha256"]
    assert a["files"] == b["files"]


def test_a_sharded_checkpoint_lists_every_shard(tmp_path):
    make_bert_checkpoint(tmp_path, seed=0, shard=True, layers=3, heads=2, hidden=8, d_ff=16)
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    shards = sorted(set(index["weight_map"].values()))
    assert len(shards) >= 3
    rec = _analyze_json(tmp_path)["checkpoint"]
    names = [f["name"] for f in rec["files"]]
    assert names == ["config.json", "model.safetensors.index.json", *shards]
    assert [f["role"] for f in rec["files"]] == ["config", "index"] + ["weights"] * len(shards)
    assert all(f["sha256"] == _sha(tmp_path / f["name"]) for f in rec["files"])
    assert rec["sha256"] == _listing_sha(tmp_path, names)
    assert rec["weights_sha256"] == _listing_sha(tmp_path, shards)


def test_a_pytorch_bin_checkpoint_names_its_file(ckpt, tmp_path):
    from safetensors.torch import load_file

    folder = tmp_path / "bin"
    folder.mkdir()
    shutil.copy(ckpt / "config.json", folder / "config.json")
    torch.save(load_file(str(ckpt / "model.safetensors")), folder / "pytorch_model.bin")
    rec = genbound.analyze(folder, device="cpu").checkpoint
    assert [f["name"] for f in rec["files"]] == ["config.json", "pytorch_model.bin"]
    assert rec["files"][1]["sha256"] == _sha(folder / "pytorch_model.bin")


def test_no_hash_lists_the_files_without_hashing_them(ckpt, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("hashed although --no-hash")

    monkeypatch.setattr(identity, "sha256_regular", refuse)
    rec = _analyze_json(ckpt, "--no-hash")["checkpoint"]
    assert rec["hashed"] is False and rec["sha256"] is None and rec["weights_sha256"] is None
    assert [(f["name"], f["sha256"]) for f in rec["files"]] == [
        ("config.json", None),
        ("model.safetensors", None),
    ]
    assert rec["files"][1]["size"] == (ckpt / "model.safetensors").stat().st_size
    rc, out, _ = run_cli(["analyze", str(ckpt), "--device", "cpu", "--quiet", "--no-hash"])
    assert rc == 0 and "checkpoint: not hashed (--no-hash); 2 files, " in out
    with pytest.raises(AssertionError, match="hashed although"):  # the default does hash
        _analyze_json(ckpt)


def _model(seed=0):
    import transformers

    cfg = transformers.BertConfig(
        hidden_size=8,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=16,
        vocab_size=40,
    )
    torch.manual_seed(seed)
    return transformers.BertModel(cfg), cfg


def _recipe(tensors) -> str:
    """The documented digest of tensors, computed independently of genbound."""
    h = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name].detach()
        shape = ",".join(str(n) for n in t.shape)
        h.update(f"{name}\0{str(t.dtype)[len('torch.') :]}\0{shape}\n".encode())
        h.update(t.contiguous().numpy().tobytes())
    return h.hexdigest()


def test_a_model_in_memory_has_a_stable_digest_that_moves_with_a_weight():
    model, cfg = _model()
    a = genbound.analyze(model, device="cpu").checkpoint
    b = genbound.analyze(model, device="cpu").checkpoint
    assert a["kind"] == "module" and a["files"] == [] and a["path"] is None
    assert a["sha256"] == b["sha256"] == _recipe(dict(model.named_parameters()))
    assert a["tensors"] == len(dict(model.named_parameters()))
    with torch.no_grad():
        model.encoder.layer[1].output.dense.weight[0, 0] += 1e-3
    c = genbound.analyze(model, device="cpu").checkpoint
    assert c["sha256"] != a["sha256"] and c["sha256"] == _recipe(dict(model.named_parameters()))
    same = genbound.analyze(_model()[0], device="cpu").checkpoint  # same seed, same bytes
    assert same["sha256"] == a["sha256"]


def test_a_state_dict_digest_names_dtype_and_values():
    model, cfg = _model()
    sd = {k: v.clone() for k, v in model.state_dict().items()}
    a = genbound.analyze(sd, config=cfg, device="cpu").checkpoint
    assert a["kind"] == "state_dict" and a["sha256"] == _recipe(sd) and a["tensors"] == len(sd)
    half = {k: (v.half() if v.is_floating_point() else v) for k, v in sd.items()}
    h = genbound.analyze(half, config=cfg, device="cpu").checkpoint
    assert h["sha256"] != a["sha256"] and h["bytes"] < a["bytes"]
    off = genbound.analyze(sd, config=cfg, device="cpu", digest=False).checkpoint
    assert off["hashed"] is False and off["sha256"] is None and off["bytes"] == a["bytes"]


def test_tensors_without_values_enter_by_name_and_kind_only():
    """A tensor without dense values (on the meta device, sparse; the analysis refuses them, a record
    made directly may meet them) is named with its kind and no bytes, never an error."""
    model, _ = _model()
    sd = {k: v.clone() for k, v in model.state_dict().items()}
    base = identity.tensors_record(sd, "state_dict")["sha256"]
    meta = dict(sd, extra=torch.empty(3, 2, device="meta"))
    rec = identity.tensors_record(meta, "state_dict")
    assert rec["tensors"] == len(sd) + 1 and rec["sha256"] not in (None, base)
    sparse = dict(sd, extra=torch.ones(3, 2).to_sparse())
    other = identity.tensors_record(sparse, "state_dict")["sha256"]
    assert other not in (base, rec["sha256"])
    dense = identity.tensors_record(dict(sd, extra=torch.ones(3, 2)), "state_dict")["sha256"]
    assert dense not in (base, rec["sha256"], other)


def test_compare_says_both_digests_and_whether_the_weights_are_identical(ckpt, tmp_path):
    same = tmp_path / "copy"
    shutil.copytree(ckpt, same)
    cfg = json.loads((same / "config.json").read_text())
    (same / "config.json").write_text(json.dumps(cfg, indent=4))  # other config bytes, same weights
    d = _analyze_json(ckpt, "--compare", str(same))
    assert d["checkpoint_a"]["sha256"] == folder_record(ckpt)["sha256"]
    assert d["checkpoint_b"]["sha256"] == folder_record(same)["sha256"]
    assert d["checkpoint_a"]["sha256"] != d["checkpoint_b"]["sha256"]
    assert d["identical_weights"] is True
    moved = tmp_path / "moved"
    make_bert_checkpoint(moved, seed=1, **SIZES)
    d = _analyze_json(ckpt, "--compare", str(moved))
    assert d["identical_weights"] is False
    rc, out, _ = run_cli(["analyze", str(ckpt), "--compare", str(moved), "--device", "cpu"])
    wsha = [folder_record(p)["weights_sha256"][:12] for p in (ckpt, moved)]
    assert rc == 0 and f"weights: differ (sha256 A {wsha[0]}, B {wsha[1]})" in out.splitlines()
    assert _analyze_json(ckpt, "--compare", str(same), "--no-hash")["identical_weights"] is None
