"""Embeddings and the LM head as spectra only (``genbound.weights.extras``): which rows, their
values against numpy's SVD, tied heads once, nothing where a family names none, and no bound reads
them."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers as T
from safetensors.torch import load_file

from genbound import load_weights, spectral_adaptive_bound
from genbound.testing import make_bert_checkpoint
from genbound.weights import TransformerWeights, extra_spectra, extra_table, weights_from_state_dict
from genbound.weights.extras import EXTRA_LAYER, EXTRA_NOTE, TIED_NOTE, extra_names, with_extras
from reference_families import make_model, tiny_llama

BLOCK_KINDS = {"QK", "V", "M_in", "M_out", "M_gate", "router"}


def _svd(t: torch.Tensor) -> np.ndarray:
    return np.linalg.svd(t.double().numpy(), compute_uv=False)


@pytest.fixture()
def bert(tmp_path):
    make_bert_checkpoint(tmp_path / "m", layers=2, heads=2, hidden=8, d_ff=16, seed=3, std=0.5)
    return tmp_path / "m"


_llama = tiny_llama


def _gpt2():
    torch.manual_seed(1)
    cfg = T.GPT2Config(n_embd=16, n_layer=1, n_head=2, vocab_size=40, n_positions=24)
    return T.GPT2LMHeadModel(cfg).eval()


def test_bert_rows_match_numpy_and_only_on_request(bert):
    w = load_weights(bert)
    assert not BLOCK_KINDS.isdisjoint(m.kind for m in w.matrix_spectra())
    assert all(m.kind in BLOCK_KINDS for m in w.matrix_spectra())  # absent by default
    rows = extra_spectra(w)
    assert [m.kind for m in rows] == ["embed_tokens", "embed_positions"]
    stored = load_file(str(bert / "model.safetensors"))
    for m, name in zip(rows, ["word_embeddings", "position_embeddings"]):
        ref = stored[f"embeddings.{name}.weight"]
        assert (m.rows, m.cols) == tuple(ref.shape) == (64, 8)
        assert (m.layer, m.head, m.expert, m.covered, m.note) == (-1, -1, -1, False, EXTRA_NOTE)
        np.testing.assert_allclose(m.svals.numpy(), _svd(ref), rtol=1e-10, atol=0)
        assert m.norm21 == pytest.approx(float(ref.double().norm(dim=0).sum()), rel=1e-12)
    t = extra_table(w)
    assert list(t["kind"]) == ["embed_tokens", "embed_positions"]
    assert (t["layer"] == EXTRA_LAYER).all() and not t["covered"].any()
    assert (t["note"] == "not in any bound: the papers' bounds cover the blocks only").all()


def test_the_bound_never_reads_them(bert):
    before = spectral_adaptive_bound(load_weights(bert), device="cpu")
    w = load_weights(bert)
    assert len(extra_spectra(w)) == 2
    after = spectral_adaptive_bound(w, device="cpu")
    assert after.value == before.value and after.capacity == before.capacity
    # a checkpoint whose embeddings are huge and non-finite gives the same bound: never read
    sd = load_file(str(bert / "model.safetensors"))
    cfg = {"hidden_size": 8, "num_attention_heads": 2, "intermediate_size": 16}
    bad = dict(sd, **{"embeddings.word_embeddings.weight": torch.full((64, 8), float("nan"))})
    assert spectral_adaptive_bound(weights_from_state_dict(bad, cfg)).value == before.value


def test_untied_llama_gives_embedding_and_head():
    model = _llama(tie=False)
    w = load_weights(model)
    rows = extra_spectra(w)
    assert [(m.kind, m.rows, m.cols) for m in rows] == [
        ("embed_tokens", 40, 16),
        ("lm_head", 40, 16),
    ]
    assert all(TIED_NOTE not in m.note for m in rows)
    ref = model.lm_head.weight.detach()
    np.testing.assert_allclose(rows[1].svals.numpy(), _svd(ref), rtol=1e-10)
    assert not w.covered  # a spectra-only family: the extra rows are its table's rows, too
    t = with_extras(w.matrix_table(), extra_table(w))
    assert list(t["kind"][-2:]) == ["embed_tokens", "lm_head"]
    assert t["covered"].iloc[:-2].tolist() == w.matrix_table()["covered"].tolist()


def test_tied_head_appears_once():
    model = _llama(tie=True)
    sd = model.state_dict()  # lm_head.weight and model.embed_tokens.weight: one storage
    assert sd["lm_head.weight"].data_ptr() == sd["model.embed_tokens.weight"].data_ptr()
    rows = extra_spectra(weights_from_state_dict(sd, model.config))
    assert [m.kind for m in rows] == ["embed_tokens"]
    assert rows[0].note == EXTRA_NOTE + "; " + TIED_NOTE
    # equal values in two tensors (a file that stores both) are one matrix too
    copy = {k: v.clone() for k, v in sd.items()}
    assert [m.kind for m in extra_spectra(weights_from_state_dict(copy, model.config))] == [
        "embed_tokens"
    ]
    # a head that differs is its own row
    copy["lm_head.weight"] = copy["lm_head.weight"] * 2
    rows = extra_spectra(weights_from_state_dict(copy, model.config))
    assert [m.kind for m in rows] == ["embed_tokens", "lm_head"]
    assert float(rows[1].svals[0]) == pytest.approx(2 * float(rows[0].svals[0]), rel=1e-12)


def test_gpt2_folder_with_a_tied_head_left_out(tmp_path):
    model = _gpt2()
    model.save_pretrained(tmp_path / "g")
    w = load_weights(tmp_path / "g")
    names = extra_names(w)
    assert [k for k, _ in names] == ["embed_tokens", "embed_positions"]  # no lm_head stored
    rows = extra_spectra(w)
    assert [(m.kind, m.rows, m.cols) for m in rows] == [
        ("embed_tokens", 40, 16),
        ("embed_positions", 24, 16),
    ]
    assert TIED_NOTE in rows[0].note and TIED_NOTE not in rows[1].note  # config: GPT2LMHeadModel
    np.testing.assert_allclose(
        rows[1].svals.numpy(), _svd(model.transformer.wpe.weight.detach()), rtol=1e-10
    )


def test_classifier_after_the_prefix_parent():
    torch.manual_seed(2)
    cfg = T.BertConfig(
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=16,
        vocab_size=30,
        max_position_embeddings=20,
        num_labels=3,
    )
    model = T.BertForSequenceClassification(cfg).eval()
    rows = extra_spectra(load_weights(model))
    assert [(m.kind, m.rows, m.cols) for m in rows] == [
        ("embed_tokens", 30, 8),
        ("embed_positions", 20, 8),
        ("classifier", 3, 8),
    ]
    np.testing.assert_allclose(
        rows[2].svals.numpy(), _svd(model.classifier.weight.detach()), rtol=1e-10
    )


def test_none_named_or_none_held_gives_no_rows(bert):
    sd = load_file(str(bert / "model.safetensors"))
    blocks = {k: v for k, v in sd.items() if not k.startswith("embeddings.")}
    cfg = {"hidden_size": 8, "num_attention_heads": 2, "intermediate_size": 16}
    w = weights_from_state_dict(blocks, cfg)
    assert extra_spectra(w) == [] and len(extra_table(w)) == 0
    assert list(extra_table(w).columns) == list(w.matrix_table().columns)
    qk = torch.randn(1, 2, 4, 4, dtype=torch.float64)
    m_in = torch.randn(1, 4, 6, dtype=torch.float64)
    proxy = TransformerWeights.from_proxy_matrices(qk, qk, m_in, m_in.transpose(1, 2))
    assert extra_spectra(proxy) == []
    vit = make_model("vit", seed=3)  # the ViT of the family tests
    wv = load_weights(vit)
    assert wv.family == "vit" and extra_spectra(wv) == []  # ViT's family names none
