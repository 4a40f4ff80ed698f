"""The decoder, ViT and mixture-of-experts families, saved by ``transformers`` itself, against an
independent float64 computation from the raw state dict.

Each architecture is built from a tiny random config (hidden 64, 2 layers, 4 heads, 2 key/value heads
where the family has grouped-query attention), saved with ``save_pretrained`` in float64, and read
back twice: by genbound (``load_weights``, ``matrix_spectra``, ``matrix_table``, the CLI) and by the
reference here, which loads the safetensors file with ``safetensors.torch.load_file`` and splits
every fused tensor with numpy reshapes written from the models' forward code (``view``/``chunk`` in
``transformers``), independently of genbound's row lists. Every matrix's singular values, ``(2,1)``
norm, rank, Frobenius and nuclear norms must agree to a relative 1e-9; covered families (OPT, ViT)
must give the bound of ``reference_proxies`` on the reference's matrices; every uncovered block is
said per matrix and no bound is given for it.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from genbound.cli import main
from genbound.errors import ArchitectureError, ShapeError
from genbound.weights import load_weights
from reference_families import (
    ARCHS,
    FAMILY,
    UNCOVERED,
    _compare,
    make_model,
    reference_matrices,
)
from reference_proxies import reference_proxies, rel

from reference_families import F, H, KV, L, N, RTOL, transformers  # noqa: F401


#: transformers 5 holds ViT's and Mixtral's module parameters under other names than it saves
#: (``layers.{i}.attention.q_proj``; stacked experts): each family has a second name map for them
#: (``families.vit.MODULE_FAMILY``, ``families.mixtral.MODULE_FAMILY``), tested below.
IN_MEMORY_NAMES = ()


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    out = {}
    for i, arch in enumerate(ARCHS):
        model = make_model(arch, seed=i)
        path = tmp_path_factory.mktemp(arch)
        model.save_pretrained(path)
        out[arch] = (model, path)
    return out


# --------------------------------------------------------------------------------------------------
# the independent side: raw state dict -> per-layer q, k, v, o and feed-forward matrices (numpy)


# --------------------------------------------------------------------------------------------------
# every matrix of every family


@pytest.mark.parametrize("arch", ARCHS)
def test_every_matrix_matches_the_raw_state_dict(saved, arch):
    model, path = saved[arch]
    w = load_weights(path)
    assert w.family == FAMILY.get(arch, arch)
    ref = reference_matrices(arch, path)
    _compare(w.matrix_spectra(device="cpu"), ref)
    t = w.matrix_table(device="cpu")
    svals = [np.linalg.svd(M, compute_uv=False) for *_, M in ref]
    assert rel(t["sigma_max"], [s[0] for s in svals]) <= RTOL
    assert rel(t["frobenius"], [np.linalg.norm(M) for *_, M in ref]) <= RTOL
    assert rel(t["nuclear"], [s.sum() for s in svals]) <= RTOL
    assert list(t["rank"]) == [
        int((s > 1e-10 * min(M.shape) * max(s[0], 1)).sum()) for s, (*_, M) in zip(svals, ref)
    ]
    # the module itself gives the same numbers (named parameters, the model's config)
    if arch not in IN_MEMORY_NAMES:
        _compare(load_weights(model).matrix_spectra(device="cpu"), ref)


@pytest.mark.parametrize("arch", ARCHS)
def test_coverage_is_said_per_matrix(saved, arch):
    _, path = saved[arch]
    w = load_weights(path)
    t = w.matrix_table(device="cpu")
    assert set(t.loc[~t["covered"], "kind"]) == UNCOVERED[arch]
    assert w.covered == (not UNCOVERED[arch])
    for kind in UNCOVERED[arch]:
        assert (t.loc[t["kind"] == kind, "note"].str.len() > 0).all()
    kv = w.kv_heads
    gqa = t.loc[t["kind"].isin(["QK", "V"]), "note"].str.contains("grouped-query")
    assert gqa.all() == (kv < w.n_heads) and gqa.any() == (kv < w.n_heads), arch
    if "QK" in UNCOVERED[arch]:
        why = {"bloom": "ALiBi", "deberta_v2": "disentangled attention"}.get(arch, "rotary")
        assert t.loc[t["kind"] == "QK", "note"].str.contains(why).all()
    if "M_gate" in UNCOVERED[arch]:
        assert t.loc[t["kind"] == "M_gate", "note"].str.contains("bounded inputs").all()
    if arch == "qwen3":
        assert t.loc[t["kind"] == "QK", "note"].str.contains("q_norm").all()
    if arch == "mixtral":
        assert t.loc[t["kind"] == "router", "note"].str.contains("router").all()
        assert sorted(set(t.loc[t["kind"] == "M_in", "expert"])) == [0, 1, 2]


def test_llama_without_gqa_is_not_told_its_heads_are_shared(saved):
    t = load_weights(saved["llama_mha"][1]).matrix_table(device="cpu")
    assert not t["note"].str.contains("shared|grouped", regex=True).any()


@pytest.mark.parametrize("arch", [a for a in ARCHS if UNCOVERED[a]])
def test_no_bound_for_an_uncovered_family(saved, arch, capsys):
    """The bound's input is refused (one line naming the uncovered blocks), before any spectrum;
    ``genbound analyze`` says so and reports the spectra only."""
    _, path = saved[arch]
    w = load_weights(path)
    with pytest.raises(ArchitectureError, match="does not cover") as e:
        w.spectra(device="cpu")
    assert "matrix_table" in str(e.value)
    from genbound import spectral_adaptive_bound

    with pytest.raises(ArchitectureError, match="does not cover"):
        spectral_adaptive_bound(w)
    # the command gives a spectra-only report, no bound (tests/app/test_analyze_spectra_only.py)
    capsys.readouterr()
    assert main(["analyze", str(path), "--json", "--device", "cpu", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["spectra_only"] is True and out["bound"] is None and out["spectral_adaptive"] is None
    assert set(out["uncovered"]) == UNCOVERED[arch]


@pytest.mark.parametrize("arch", ["opt", "vit"])
@pytest.mark.parametrize("scaled", [False, True])
def test_covered_families_give_the_reference_bound(saved, arch, scaled, capsys):
    model, path = saved[arch]
    att = model.model.decoder.layers[0].self_attn if arch == "opt" else None
    if arch == "vit":
        att = model.layers[0].attention
    scale = float(att.scaling) if scaled else 1.0
    mats = [(l, h, kind, M) for kind, l, h, e, M in reference_matrices(arch, path, scale)]
    ref = reference_proxies(mats, N)
    capsys.readouterr()
    extra = ["--attention-scale"] if scaled else []
    assert main(["analyze", str(path), "--json", "--device", "cpu", "--quiet", *extra]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["family"] == arch and out["heads"] == H
    assert rel(out["spectral_adaptive"], ref["ours"]) <= RTOL
    assert rel(out["edelman_log"], ref["edelman_log"]) <= RTOL


@pytest.mark.parametrize(
    "arch", ["llama", "gemma2", "falcon_gqa", "gpt_neox", "bloom", "deberta_v2"]
)
def test_attention_scale_is_the_modules_scaling(saved, arch):
    model, path = saved[arch]
    if arch.startswith("falcon") or arch == "bloom":
        att = model.transformer.h[0].self_attention
        scaling = float(att.inv_norm_factor)
    elif arch == "deberta_v2":  # forward: scores / sqrt(dh * (1 + |{c2p, p2c}|))
        att = model.encoder.layer[0].attention.self
        scaling = 1.0 / float(att.attention_head_size * (1 + len(att.pos_att_type))) ** 0.5
    elif arch == "gpt_neox":
        scaling = float(model.gpt_neox.layers[0].attention.scaling)
    else:
        scaling = float(model.model.layers[0].self_attn.scaling)
    ref = reference_matrices(arch, path, scaling)
    _compare(load_weights(path, attention_scale=True).matrix_spectra(device="cpu"), ref)


# --------------------------------------------------------------------------------------------------
# refused and unmapped


def _cli_error(path, capsys) -> str:
    capsys.readouterr()
    assert main(["analyze", str(path), "--json", "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("genbound: error:") and err.count("\n") == 1 and "Traceback" not in err
    return err


@pytest.mark.parametrize("arch", ["t5", "bart"])
def test_encoder_decoders_are_refused_for_cross_attention(tmp_path, arch, capsys):
    T = transformers
    if arch == "t5":
        m = T.T5Model(
            T.T5Config(vocab_size=20, d_model=16, d_kv=4, d_ff=24, num_layers=1, num_heads=4)
        )
    else:
        m = T.BartModel(
            T.BartConfig(
                vocab_size=20,
                d_model=16,
                encoder_layers=1,
                decoder_layers=1,
                encoder_attention_heads=4,
                decoder_attention_heads=4,
                encoder_ffn_dim=24,
                decoder_ffn_dim=24,
                max_position_embeddings=32,
            )
        )
    m.save_pretrained(tmp_path)
    err = _cli_error(tmp_path, capsys)
    assert "cross-attention" in err and f"'{arch}'" in err
    with pytest.raises(ArchitectureError, match="cross-attention"):
        load_weights(m)


def _edit_config(path, **changes):
    p = path / "config.json"
    cfg = json.loads(p.read_text())
    for k, v in changes.items():
        if v is None:
            cfg.pop(k, None)
        else:
            cfg[k] = v
    p.write_text(json.dumps(cfg))


def _copy(saved, arch, tmp_path):
    import shutil

    dst = tmp_path / arch
    shutil.copytree(saved[arch][1], dst)
    return dst


def test_unmapped_model_type_is_one_line_naming_it(saved, tmp_path, capsys):
    # names of a mapped family under a model_type nobody mapped (as ESM's BERT-like names)
    p = _copy(saved, "llama", tmp_path)
    _edit_config(p, model_type="olmo")
    err = _cli_error(p, capsys)
    assert "model_type 'olmo' is not an architecture genbound maps" in err
    assert "refusing to guess" not in err
    # names nobody maps: the line names the model_type, not a list of tensors
    from safetensors.torch import save_file

    q = tmp_path / "mpt"
    q.mkdir()
    save_file(
        {"transformer.blocks.0.attn.Wqkv.weight": torch.zeros(12, 4)},
        str(q / "model.safetensors"),
    )
    (q / "config.json").write_text(json.dumps({"model_type": "mpt"}))
    err = _cli_error(q, capsys)
    assert "model_type 'mpt'" in err and "found '" not in err


def test_esm_is_told_its_model_type_is_unmapped(tmp_path, capsys):
    """ESM's layers carry BERT's parameter names; the line names model_type 'esm', no guessing."""
    T = transformers
    m = T.EsmModel(
        T.EsmConfig(
            vocab_size=20,
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=4,
            intermediate_size=24,
            pad_token_id=1,
            position_embedding_type="rotary",
        )
    )
    m.save_pretrained(tmp_path)
    err = _cli_error(tmp_path, capsys)
    assert "model_type 'esm' is not an architecture genbound maps" in err
    assert "guess" not in err


def test_shared_names_without_model_type_ask_for_it(saved, tmp_path):
    p = _copy(saved, "mistral", tmp_path)
    _edit_config(p, model_type=None)
    with pytest.raises(ArchitectureError, match="no model_type to choose"):
        load_weights(p)


# --------------------------------------------------------------------------------------------------
# bad input: config fields that contradict the tensors, before any spectrum


@pytest.fixture()
def no_spectra(monkeypatch):
    from genbound.weights import model as wmodel

    def boom(*a, **k):
        raise AssertionError("a spectrum was computed before the refusal")

    monkeypatch.setattr(wmodel, "_head_summary", boom)
    monkeypatch.setattr(wmodel, "certified_singular_values", boom)


@pytest.mark.parametrize(
    "arch, changes, err, needles",
    [
        (
            "llama",
            dict(num_attention_heads=5, head_dim=None),
            ArchitectureError,
            ["hidden_size=64", "num_attention_heads=5"],
        ),
        ("llama", dict(num_key_value_heads=3), ArchitectureError, ["num_key_value_heads=3"]),
        (
            "mixtral",
            dict(num_local_experts=2),
            ArchitectureError,
            ["num_local_experts=2", "expert 2"],
        ),
        ("mixtral", dict(num_local_experts=4), ArchitectureError, ["experts.3.w1", "missing"]),
        ("phi3", dict(intermediate_size=80), ShapeError, ["gate_up_proj", "intermediate_size=80"]),
        ("falcon", dict(multi_query=False), ShapeError, ["query_key_value", "qkv_heads"]),
        ("falcon_gqa", dict(num_kv_heads=3), ArchitectureError, ["num_kv_heads=3"]),
        (
            "llama",
            dict(rope_parameters={"rope_type": "warp", "factor": 2.0}),
            ArchitectureError,
            ["rope_parameters.rope_type", "'warp'"],
        ),
        (
            "qwen2",
            dict(rope_scaling={"type": "spiral"}),
            ArchitectureError,
            ["rope_scaling.type", "'spiral'"],
        ),
    ],
)
def test_config_contradicting_tensors(saved, tmp_path, no_spectra, arch, changes, err, needles):
    p = _copy(saved, arch, tmp_path)
    _edit_config(p, **changes)
    with pytest.raises(err) as e:
        load_weights(p)
    for n in needles:
        assert n in str(e.value), (n, str(e.value))


def test_missing_expert_is_named(saved, tmp_path, no_spectra):
    from safetensors.torch import load_file, save_file

    p = _copy(saved, "mixtral", tmp_path)
    sd = load_file(str(p / "model.safetensors"))
    gone = [k for k in sd if "layers.1.block_sparse_moe.experts.1.w2" in k]
    assert len(gone) == 1
    del sd[gone[0]]
    save_file(sd, str(p / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(
        ArchitectureError, match=r"experts\.1\.w2.*missing \(expert 1 of 3 in layer 1\)"
    ):
        load_weights(p)


def test_bad_config_through_the_cli(saved, tmp_path, capsys, no_spectra):
    p = _copy(saved, "llama", tmp_path)
    _edit_config(p, num_key_value_heads=3)
    err = _cli_error(p, capsys)
    assert "num_key_value_heads=3" in err


# --------------------------------------------------------------------------------------------------
# the README's family table is the package's


def test_readme_family_table_is_generated_from_the_families():
    from pathlib import Path

    from genbound.weights.families import family_table_markdown

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    start, end = "<!-- families:start -->", "<!-- families:end -->"
    assert start in text and end in text, "README.md lacks the family table markers"
    block = text.split(start, 1)[1].split(end, 1)[0].strip()
    assert block == family_table_markdown(), (
        "README.md's family table differs from genbound.weights.families.family_table_markdown(); "
        "paste its output between the markers"
    )


# --------------------------------------------------------------------------------------------------
# the Llama-shaped benchmark at a tiny size


def test_llama_layer_benchmark_at_tiny_size(capsys):
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("llama_layer", root / "benchmarks/llama_layer.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    argv = ["--layers", "1", "--hidden", "32", "--heads", "4", "--kv-heads", "2", "--d-ff", "48"]
    assert mod.main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["matrices"] == 2 * 4 + 3 and out["covered"] is False
    assert len(out["seconds_per_layer"]) == 1 and out["extrapolated_total_s"] > 0
    if not torch.cuda.is_available():
        assert mod.main([*argv, "--device", "cuda"]) == 2
        assert capsys.readouterr().err.count("\n") == 1


def test_deberta_with_per_layer_position_projections_is_refused_by_name(tmp_path, capsys):
    cfg = transformers.DebertaV2Config(
        vocab_size=20,
        hidden_size=N,
        num_hidden_layers=1,
        num_attention_heads=H,
        intermediate_size=F,
        relative_attention=True,
        pos_att_type=["p2c", "c2p"],
        share_att_key=False,
        position_buckets=8,
    )
    transformers.DebertaV2Model(cfg).save_pretrained(tmp_path)
    err = _cli_error(tmp_path, capsys)
    assert "pos_key_proj" in err or "pos_query_proj" in err
    assert "do not consume" in err
