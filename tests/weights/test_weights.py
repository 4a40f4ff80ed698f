"""genbound.weights: loading checkpoints and modules, conventions, spectra, arguments, bad input.

The five architectures against ``transformers``' own modules are in ``test_families.py``; corrupt and
unsafe files in ``test_bad_files.py``; the certified feed-forward route in ``test_certified_spectra.py``.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from genbound.errors import (
    ArchitectureError,
    CheckpointError,
    GenboundError,
    NonFiniteError,
    ParameterError,
    ShapeError,
)
from genbound.testing import make_bert_checkpoint
from genbound.weights import (
    KINDS,
    TransformerWeights,
    bert_weights_from_state_dict,
    load_weights,
    weights_from_state_dict,
)


@pytest.fixture()
def ckpt(tmp_path):
    make_bert_checkpoint(tmp_path, layers=2, heads=3, hidden=12, d_ff=20, seed=1, std=0.3)
    return tmp_path


def _dense_svals(W):
    return torch.linalg.svdvals(W)


# --------------------------------------------------------------------------------------------------
# conventions


def test_conventions_match_the_authors_extraction(ckpt):
    """QK = q[s_h]^T k[s_h], V = v[s_h]^T (o^T)[s_h], M_in = f_in^T, M_out = f_out^T (row-vector form)."""
    from safetensors.torch import load_file

    sd = {k: v.double() for k, v in load_file(str(ckpt / "model.safetensors")).items()}
    w = load_weights(ckpt)
    dh = 4
    for l in range(2):
        g = lambda n: sd[f"encoder.layer.{l}.{n}.weight"]  # noqa: E731
        for h in range(3):
            s = slice(h * dh, (h + 1) * dh)
            assert torch.allclose(
                w.matrix("QK", l, h),
                g("attention.self.query")[s].T @ g("attention.self.key")[s],
                rtol=0,
                atol=1e-15,
            )
            assert torch.allclose(
                w.matrix("V", l, h),
                g("attention.self.value")[s].T @ g("attention.output.dense").T[s],
                rtol=0,
                atol=1e-15,
            )
        assert torch.equal(w.matrix("M_in", l), g("intermediate.dense").T)
        assert torch.equal(w.matrix("M_out", l), g("output.dense").T)
    # scores are x QK y^T = (x Wq^T)(y Wk^T)^T with the stored nn.Linear weights Wq, Wk: QK = W_Q W_K^T
    # in the row-vector convention (W_Q = Wq^T), summed over the head's coordinates
    x, y = torch.randn(12, dtype=torch.float64), torch.randn(12, dtype=torch.float64)
    qx = g("attention.self.query") @ x
    ky = g("attention.self.key") @ y
    assert math.isclose(
        float(x @ w.matrix("QK", 1, 2) @ y), float(qx[8:12] @ ky[8:12]), rel_tol=1e-12
    )


def test_core_spectra_equal_dense_spectra(ckpt):
    w = load_weights(ckpt)
    core, dense = w.spectra(method="core"), w.spectra(method="dense")
    assert core.qk.shape == (2, 3, 4) and dense.qk.shape == (2, 3, 12)
    for kind in ("QK", "V"):
        a, b = core.svals(kind), dense.svals(kind)
        assert torch.allclose(a, b[..., :4], rtol=1e-12, atol=0)
        assert float(b[..., 4:].max()) < 1e-14  # the dense SVD's round-off floor
        assert torch.allclose(core.norm21(kind), dense.norm21(kind), rtol=1e-12, atol=0)
    for kind in ("M_in", "M_out"):
        assert torch.allclose(core.svals(kind), dense.svals(kind), rtol=1e-12, atol=0)
        assert torch.allclose(core.norm21(kind), dense.norm21(kind), rtol=1e-13, atol=0)


def test_core_is_accurate_for_small_singular_values():
    """QR + SVD of the triangle keeps tiny singular values to high relative accuracy (graded spectrum
    over 12 orders of magnitude); the Gram-matrix eigenvalues do not."""
    g = torch.Generator().manual_seed(0)
    U, _ = torch.linalg.qr(torch.randn(40, 10, generator=g, dtype=torch.float64))
    V, _ = torch.linalg.qr(torch.randn(10, 10, generator=g, dtype=torch.float64))
    s = torch.logspace(0, -12, 10, dtype=torch.float64)
    M = (U * s) @ V.T  # 40 x 10, known singular values
    w = TransformerWeights.from_proxy_matrices(
        torch.zeros(1, 1, 10, 10, dtype=torch.float64),
        torch.zeros(1, 1, 10, 10, dtype=torch.float64),
        M.T.unsqueeze(0),
        M.unsqueeze(0),
    )
    sp = w.spectra()
    got = sp.m_out[0]
    assert sp.routes["M_out"] == (
        "qr-svd",
    )  # the Gram route cannot certify this spectrum: fallback
    assert float(((got - s).abs() / s).max()) < 1e-3  # relative, down to sigma = 1e-12
    gram = torch.linalg.eigvalsh(M.T @ M).clamp(min=0).sqrt().flip(0)
    assert float(((gram - s).abs() / s).max()) > 1.0  # the Gram route loses the small ones entirely


def test_attention_scale(ckpt):
    a = load_weights(ckpt).matrix("QK", 0, 1)
    b = load_weights(ckpt, attention_scale=True).matrix("QK", 0, 1)
    assert torch.allclose(b, a / 2.0, rtol=1e-15, atol=0)  # d_head = 4
    assert torch.equal(
        load_weights(ckpt, attention_scale=True).matrix("V", 0, 1),
        load_weights(ckpt).matrix("V", 0, 1),
    )


def test_module_and_prefixed_state_dict_and_folder_agree(ckpt):
    transformers = pytest.importorskip("transformers")
    model = transformers.BertModel.from_pretrained(str(ckpt), local_files_only=True)
    a = load_weights(ckpt).spectra()
    b = load_weights(model).spectra()
    sd = {"bert." + k: v for k, v in model.state_dict().items()}
    c = bert_weights_from_state_dict(sd, model.config).spectra()
    for kind in KINDS:
        assert torch.allclose(a.svals(kind), b.svals(kind), rtol=1e-12, atol=0)
        assert torch.allclose(a.svals(kind), c.svals(kind), rtol=1e-12, atol=0)


def test_pytorch_model_bin_and_sharded_folders(tmp_path):
    from safetensors.torch import load_file

    one, shards, binf = tmp_path / "one", tmp_path / "shards", tmp_path / "bin"
    make_bert_checkpoint(one, layers=3, heads=2, hidden=8, d_ff=12, seed=4)
    make_bert_checkpoint(shards, layers=3, heads=2, hidden=8, d_ff=12, seed=4, shard=True)
    binf.mkdir()
    (binf / "config.json").write_text((one / "config.json").read_text())
    torch.save(load_file(str(one / "model.safetensors")), binf / "pytorch_model.bin")
    ref = load_weights(one).spectra()
    for path in (shards, binf):
        sp = load_weights(path).spectra()
        for kind in KINDS:
            assert torch.equal(ref.svals(kind), sp.svals(kind))
    assert json.loads((shards / "model.safetensors.index.json").read_text())["weight_map"]


def test_layer_selection(ckpt):
    full = load_weights(ckpt).spectra()
    one = load_weights(ckpt, layers=[1])
    assert one.n_layers == 1
    assert torch.equal(one.spectra().qk[0], full.qk[1])


def test_minilm_shapes_and_ranks(minilm_path):
    w = load_weights(minilm_path)
    assert (w.n_layers, w.n_heads, w.hidden, w.d_head, w.d_ff) == (6, 12, 384, 32, 1536)
    sp = w.spectra()
    assert sp.qk.shape == (6, 12, 32) and sp.m_in.shape == (6, 384)
    assert bool((sp.qk[..., -1] > 1e-6).all())  # every head's QK has full rank d_head = 32
    assert bool((sp.m_in[..., -1] > 1e-6).all())


def test_from_proxy_matrices_nested_lists():
    I = torch.eye(3, dtype=torch.float64)
    w = TransformerWeights.from_proxy_matrices(
        [[I, 2 * I]], [[I, I]], [torch.ones(3, 5)], [torch.ones(5, 3)]
    )
    sp = w.spectra()
    assert sp.qk[0, :, 0].tolist() == [1.0, 2.0]
    assert math.isclose(float(sp.m_in[0, 0]), math.sqrt(15), rel_tol=1e-14)
    assert w.is_dense and w.d_head is None
    with pytest.raises(ArchitectureError, match="dense proxy"):
        w.head_factors("QK", 0)


def test_spectra_progress_bar_goes_to_stderr(ckpt, capsys):
    load_weights(ckpt).spectra(progress=True, cache=False)
    out = capsys.readouterr()
    assert out.out == ""


# --------------------------------------------------------------------------------------------------
# bad input


def test_bad_sources(tmp_path):
    with pytest.raises(GenboundError, match="does not exist"):
        load_weights(tmp_path / "nope")
    with pytest.raises(ArchitectureError, match="config.json"):
        load_weights(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"hidden_size": 8}))
    with pytest.raises(ArchitectureError, match="model.safetensors"):
        load_weights(tmp_path)
    with pytest.raises(ArchitectureError, match="expected a checkpoint folder"):
        load_weights(42)
    with pytest.raises(ArchitectureError, match="not a model of a supported family.*GPT-2"):
        load_weights(torch.nn.Linear(3, 3))
    f = tmp_path / "file.txt"
    f.write_text("x")
    with pytest.raises(GenboundError, match="is a file"):
        load_weights(f)


def test_gpt2_names_are_not_bert_names():
    """bert_weights_from_state_dict stays BERT-only; weights_from_state_dict finds GPT-2 and asks for its keys."""
    sd = {"transformer.h.0.attn.c_attn.weight": torch.zeros(4, 12)}
    with pytest.raises(ArchitectureError, match="transformer.h.0.attn.c_attn.weight"):
        bert_weights_from_state_dict(
            sd, {"hidden_size": 4, "num_attention_heads": 1, "intermediate_size": 8}
        )
    with pytest.raises(ArchitectureError, match="n_embd"):
        weights_from_state_dict(
            sd, {"hidden_size": 4, "num_attention_heads": 1, "intermediate_size": 8}
        )
    with pytest.raises(ArchitectureError, match="attn.c_proj.weight' is missing"):
        weights_from_state_dict(sd, {"n_embd": 4, "n_head": 1, "n_inner": 8})


def test_config_and_shape_mismatches(tmp_path):
    make_bert_checkpoint(tmp_path, layers=2, heads=2, hidden=8, d_ff=12, seed=0)
    cfg = json.loads((tmp_path / "config.json").read_text())
    for key, val, err, msg in (
        ("num_attention_heads", 3, ArchitectureError, "not divisible"),
        ("intermediate_size", 13, ShapeError, "intermediate.dense"),
        ("num_hidden_layers", 5, ArchitectureError, "num_hidden_layers=5"),
        ("hidden_size", None, ArchitectureError, "hidden_size"),
    ):
        bad = dict(cfg)
        if val is None:
            del bad[key]
        else:
            bad[key] = val
        (tmp_path / "config.json").write_text(json.dumps(bad))
        with pytest.raises(err, match=msg):
            load_weights(tmp_path)
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="not valid JSON"):
        load_weights(tmp_path)


def test_missing_parameter_and_non_finite_weights():
    sd = {
        f"encoder.layer.0.{n}.weight": torch.zeros(s)
        for n, s in (
            ("attention.self.query", (4, 4)),
            ("attention.self.key", (4, 4)),
            ("attention.self.value", (4, 4)),
            ("attention.output.dense", (4, 4)),
            ("intermediate.dense", (6, 4)),
        )
    }
    cfg = {"hidden_size": 4, "num_attention_heads": 2, "intermediate_size": 6}
    with pytest.raises(ArchitectureError, match="output.dense.weight' is missing"):
        bert_weights_from_state_dict(sd, cfg)
    sd["encoder.layer.0.output.dense.weight"] = torch.zeros(4, 6)
    sd["encoder.layer.0.attention.self.key.weight"] = torch.full((4, 4), float("nan"))
    w = bert_weights_from_state_dict(sd, cfg)
    with pytest.raises(NonFiniteError, match="attention.self.key.weight"):
        w.spectra()


def test_bad_proxy_matrices_and_parameters():
    I = torch.eye(3, dtype=torch.float64)
    with pytest.raises(ShapeError, match="must agree"):
        TransformerWeights.from_proxy_matrices(
            [[I]], [[I, I]], [torch.ones(3, 5)], [torch.ones(5, 3)]
        )
    with pytest.raises(ShapeError, match="m_out"):
        TransformerWeights.from_proxy_matrices([[I]], [[I]], [torch.ones(3, 5)], [torch.ones(3, 5)])
    with pytest.raises(ShapeError, match="square"):
        TransformerWeights.from_proxy_matrices(
            [[torch.ones(3, 4)]], [[torch.ones(3, 4)]], [torch.ones(3, 5)], [torch.ones(5, 3)]
        )
    with pytest.raises(NonFiniteError, match="qk"):
        TransformerWeights.from_proxy_matrices(
            [[I * float("inf")]], [[I]], [torch.ones(3, 5)], [torch.ones(5, 3)]
        )
    with pytest.raises(ShapeError, match="layers"):
        TransformerWeights.from_proxy_matrices(
            [[I]], [[I]], [torch.ones(3, 5)] * 2, [torch.ones(5, 3)]
        )
    w = TransformerWeights.from_proxy_matrices([[I]], [[I]], [torch.ones(3, 5)], [torch.ones(5, 3)])
    with pytest.raises(ParameterError, match="method"):
        w.spectra(method="fast")
    with pytest.raises(ParameterError, match="svd_driver"):
        w.spectra(svd_driver="lapack", cache=False)
    assert w.spectra(svd_driver="gesvd", cache=False).m_in.shape == (1, 3)  # ignored on the CPU
    with pytest.raises(ParameterError, match="layer"):
        w.matrix("M_in", 3)
    with pytest.raises(ParameterError, match="head"):
        w.matrix("QK", 0)
    with pytest.raises(ParameterError, match="kind"):
        w.matrix("QV", 0)


def test_layer_selection_errors(ckpt):
    with pytest.raises(ParameterError, match="do not exist"):
        load_weights(ckpt, layers=[0, 7])
    with pytest.raises(ParameterError, match="empty"):
        load_weights(ckpt, layers=[])
    with pytest.raises(ParameterError, match="layers"):
        load_weights(ckpt, layers=1)


def test_arguments_apply_to_loaded_weights(ckpt):
    """load_weights(weights, attention_scale=..., layers=...) applies both instead of ignoring them."""
    w = load_weights(ckpt)
    assert load_weights(w) is w
    scaled = load_weights(w, attention_scale=True)
    assert scaled.attention_scale and not w.attention_scale
    assert torch.allclose(
        scaled.matrix("QK", 1, 2), w.matrix("QK", 1, 2) / 2.0, rtol=1e-15, atol=0
    )  # d_head 4
    one = load_weights(w, layers=[1])
    assert one.n_layers == 1 and torch.equal(one.spectra().qk[0], w.spectra().qk[1])
    both = load_weights(scaled, layers=[1, 0])
    assert both.attention_scale and torch.equal(both.matrix("M_in", 0), w.matrix("M_in", 1))
    assert torch.equal(
        load_weights(both, layers=[1]).matrix("V", 0, 0), w.matrix("V", 0, 0)
    )  # ids compose
    unscaled = load_weights(scaled, attention_scale=False)
    assert torch.equal(unscaled.matrix("QK", 0, 0), w.matrix("QK", 0, 0))
    with pytest.raises(ParameterError, match="do not exist"):
        load_weights(w, layers=[2])
    with pytest.raises(ParameterError, match="attention_scale"):
        load_weights(w, attention_scale="yes")
    I = torch.eye(3, dtype=torch.float64)
    dense = TransformerWeights.from_proxy_matrices([[I], [2 * I]], [[I], [I]], [I, I], [I, I])
    assert load_weights(dense, layers=[1]).matrix("QK", 0, 0)[0, 0] == 2.0
    with pytest.raises(ParameterError, match="dense proxy matrices"):
        load_weights(dense, attention_scale=True)


def test_authors_mode_needs_dense_spectra(ckpt):
    """Precomputed exact spectra cannot be evaluated in the authors' mode (and vice versa): it raises
    instead of reporting a mode that was not used."""
    from genbound.bounds.sakai_imaizumi import edelman_proxy, spectral_adaptive_bound

    w = load_weights(ckpt)
    core, dense = w.spectra(method="core"), w.spectra(method="dense")
    with pytest.raises(ParameterError, match="method='dense'"):
        spectral_adaptive_bound(core, mode="authors")
    with pytest.raises(ParameterError, match="method='core'"):
        spectral_adaptive_bound(dense)
    with pytest.raises(ParameterError, match="method='dense'"):
        edelman_proxy(core, mode="authors")
    assert spectral_adaptive_bound(dense, mode="authors").mode == "authors"
    assert (
        spectral_adaptive_bound(w, mode="authors").value
        == spectral_adaptive_bound(dense, mode="authors").value
    )


def test_make_bert_checkpoint_validates(tmp_path):
    with pytest.raises(ParameterError, match="divisible"):
        make_bert_checkpoint(tmp_path, layers=1, heads=3, hidden=8)
    with pytest.raises(ParameterError, match="dtype"):
        make_bert_checkpoint(tmp_path, layers=1, heads=2, hidden=8, dtype="int8")
    info = make_bert_checkpoint(tmp_path, layers=1, heads=2, hidden=8, dtype="bfloat16", seed=3)
    w = load_weights(tmp_path)
    assert np.isfinite(w.spectra().m_in.numpy()).all() and info["bytes"] == info["parameters"] * 2
