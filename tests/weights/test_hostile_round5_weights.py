"""Issue 48 (reliability, round 5), the weights: config and index readers bounded by kind and size
before reading, and model objects that are not real tensors (meta, sparse) refused by name."""

from __future__ import annotations

import os

import pytest
import torch

from blocking import in_thread
from genbound.errors import CheckpointError, GenboundError
from genbound.testing import make_bert_checkpoint
from genbound.weights import load_weights, weights_from_state_dict
from genbound.weights.files import MAX_JSON_BYTES

transformers = pytest.importorskip("transformers")

QUERY = "encoder.layer.0.attention.self.query.weight"


def _config():
    return transformers.BertConfig(
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=24,
        vocab_size=40,
        max_position_embeddings=16,
    )


def _model():
    torch.manual_seed(0)
    return transformers.BertModel(_config())


@pytest.fixture()
def ckpt(tmp_path):
    d = tmp_path / "bert"
    make_bert_checkpoint(d, layers=2, heads=2, hidden=8, d_ff=12, seed=3, std=0.3)
    return d


# ---------------------------------------------------------------------------------------------- readers
def test_a_huge_config_is_refused_from_its_size(ckpt):
    cfg = ckpt / "config.json"
    with open(cfg, "r+b") as fh:  # sparse: 600 MB that are never read
        fh.truncate(600 * 2**20)
    with pytest.raises(CheckpointError, match="MAX_JSON_BYTES"):
        load_weights(ckpt)


def test_a_huge_shard_index_is_refused_from_its_size(tmp_path):
    d = tmp_path / "sharded"
    make_bert_checkpoint(d, layers=2, heads=2, hidden=8, d_ff=12, seed=3, shard=True)
    index = next(p for p in d.iterdir() if p.name.endswith(".index.json"))
    with open(index, "r+b") as fh:
        fh.truncate(MAX_JSON_BYTES["index"] + 1)
    with pytest.raises(CheckpointError, match="MAX_JSON_BYTES"):
        load_weights(d)


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_config_that_is_not_a_regular_file_is_refused_at_once(ckpt, kind):
    cfg = ckpt / "config.json"
    cfg.unlink()
    if kind == "fifo":
        os.mkfifo(cfg)
    else:
        cfg.symlink_to("/dev/zero")
    box = in_thread(lambda: load_weights(ckpt))
    assert isinstance(box.get("error"), GenboundError), box
    assert ("FIFO" if kind == "fifo" else "character device") in str(box["error"])


# ---------------------------------------------------------------------------------------------- tensors
def test_a_meta_device_model_is_refused_by_name():
    with torch.device("meta"):
        model = transformers.BertModel(_config())
    with pytest.raises(GenboundError, match="meta device"):
        load_weights(model)


def test_a_single_meta_parameter_is_named():
    model = _model()
    model.encoder.layer[0].attention.self.query.weight = torch.nn.Parameter(
        torch.empty(16, 16, device="meta")
    )
    with pytest.raises(GenboundError, match=rf"'{QUERY}' is on the meta device"):
        load_weights(model)


def test_a_meta_state_dict_is_refused_by_name():
    sd = {k: v.to("meta") if k == QUERY else v for k, v in _model().state_dict().items()}
    with pytest.raises(GenboundError, match=rf"'{QUERY}' is on the meta device"):
        weights_from_state_dict(sd, _config().to_dict()).spectra()


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_a_sparse_parameter_is_refused_by_name(layout):
    model = _model()
    w = model.encoder.layer[0].attention.self.query.weight.detach()
    sparse = w.to_sparse() if layout == "coo" else w.to_sparse_csr()
    model.encoder.layer[0].attention.self.query.weight = torch.nn.Parameter(sparse)
    with pytest.raises(GenboundError, match=rf"'{QUERY}' is a sparse {layout.upper()} tensor"):
        load_weights(model)


def test_a_sparse_tensor_in_a_state_dict_is_refused_by_name():
    sd = dict(_model().state_dict())
    sd[QUERY] = sd[QUERY].to_sparse()
    with pytest.raises(GenboundError, match="sparse COO"):
        weights_from_state_dict(sd, _config().to_dict())


def test_real_tensors_still_load():
    w = load_weights(_model())
    assert w.n_layers == 2 and torch.isfinite(w.spectra().qk).all()
