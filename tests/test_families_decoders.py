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
from test_spectral_bound import reference_proxies, rel

transformers = pytest.importorskip("transformers")
transformers.logging.set_verbosity_error()

RTOL = 1e-9
N, L, H, KV, F = 64, 2, 4, 2, 96


def _configs():
    T = transformers
    c = dict(
        vocab_size=20,
        hidden_size=N,
        num_hidden_layers=L,
        num_attention_heads=H,
        intermediate_size=F,
        max_position_embeddings=32,
    )
    return {
        "llama": (T.LlamaConfig(num_key_value_heads=KV, **c), T.LlamaForCausalLM),
        "llama_mha": (T.LlamaConfig(num_key_value_heads=H, **c), T.LlamaForCausalLM),
        "mistral": (T.MistralConfig(num_key_value_heads=KV, **c), T.MistralForCausalLM),
        "qwen2": (T.Qwen2Config(num_key_value_heads=KV, **c), T.Qwen2ForCausalLM),
        "qwen3": (T.Qwen3Config(num_key_value_heads=KV, head_dim=24, **c), T.Qwen3ForCausalLM),
        "gemma": (T.GemmaConfig(num_key_value_heads=KV, head_dim=24, **c), T.GemmaForCausalLM),
        "gemma2": (
            T.Gemma2Config(num_key_value_heads=KV, head_dim=24, query_pre_attn_scalar=20, **c),
            T.Gemma2ForCausalLM,
        ),
        "phi3": (T.Phi3Config(num_key_value_heads=KV, pad_token_id=0, **c), T.Phi3ForCausalLM),
        "mixtral": (
            T.MixtralConfig(
                num_key_value_heads=KV, num_local_experts=3, num_experts_per_tok=2, **c
            ),
            T.MixtralForCausalLM,
        ),
        "gpt_neox": (T.GPTNeoXConfig(**c), T.GPTNeoXForCausalLM),
        "opt": (
            T.OPTConfig(
                vocab_size=20,
                hidden_size=N,
                num_hidden_layers=L,
                num_attention_heads=H,
                ffn_dim=F,
                word_embed_proj_dim=N,
                max_position_embeddings=32,
            ),
            T.OPTForCausalLM,
        ),
        "falcon": (  # Falcon-7B's multi-query layout
            T.FalconConfig(
                vocab_size=20, hidden_size=N, num_hidden_layers=L, num_attention_heads=H
            ),
            T.FalconForCausalLM,
        ),
        "falcon_gqa": (  # Falcon-40B's new decoder architecture, grouped
            T.FalconConfig(
                vocab_size=20,
                hidden_size=N,
                num_hidden_layers=L,
                num_attention_heads=H,
                new_decoder_architecture=True,
                num_kv_heads=KV,
            ),
            T.FalconForCausalLM,
        ),
        "falcon_mha": (  # per-head interleaved
            T.FalconConfig(
                vocab_size=20,
                hidden_size=N,
                num_hidden_layers=L,
                num_attention_heads=H,
                multi_query=False,
            ),
            T.FalconForCausalLM,
        ),
        "gptj": (
            T.GPTJConfig(vocab_size=20, n_embd=N, n_layer=L, n_head=H, rotary_dim=8, n_inner=F),
            T.GPTJForCausalLM,
        ),
        "vit": (
            T.ViTConfig(
                hidden_size=N,
                num_hidden_layers=L,
                num_attention_heads=H,
                intermediate_size=F,
                image_size=8,
                patch_size=4,
            ),
            T.ViTModel,
        ),
    }


ARCHS = list(_configs())
FAMILY = {"llama_mha": "llama", "falcon_gqa": "falcon", "falcon_mha": "falcon"}
GATED = {"QK", "M_gate", "M_in", "M_out"}
#: The kinds the papers' bound does not cover, per architecture (what the report must say).
UNCOVERED = {
    **{a: GATED for a in ("llama", "llama_mha", "mistral", "qwen2", "qwen3", "gemma", "gemma2")},
    "phi3": GATED,
    "mixtral": GATED | {"router"},
    **{a: {"QK"} for a in ("gpt_neox", "falcon", "falcon_gqa", "falcon_mha", "gptj")},
    "opt": set(),
    "vit": set(),
}


#: transformers 5 holds ViT's and Mixtral's module parameters under other names than it saves
#: (``layers.{i}.attention.q_proj``; stacked experts): each family has a second name map for them
#: (``families.vit.MODULE_FAMILY``, ``families.mixtral.MODULE_FAMILY``), tested below.
IN_MEMORY_NAMES = ()


def make_model(arch: str, seed: int = 0):
    cfg, cls = _configs()[arch]
    torch.manual_seed(seed)
    model = cls(cfg)
    with torch.no_grad():  # spread the initialiser's tiny weights so that every spectrum is generic
        for p in model.parameters():
            p.normal_(0.0, 0.4)
    return model.double().eval()


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


def _raw(path) -> tuple[dict, dict]:
    from safetensors.torch import load_file

    sd = {k: v.double().numpy() for k, v in load_file(str(path / "model.safetensors")).items()}
    return sd, json.loads((path / "config.json").read_text())


def _get(sd, rel_name: str) -> np.ndarray:
    keys = [k for k in sd if k == rel_name or k.endswith("." + rel_name)]
    assert len(keys) == 1, (rel_name, keys)
    return sd[keys[0]]


def reference_layer(arch: str, sd: dict, cfg: dict, l: int):
    """``(q (H, dh, N), k (KV, dh, N), v (KV, dh, N), o (N, H*dh), [(kind, expert, W (out, in))])``."""
    fam = FAMILY.get(arch, arch)
    if fam in ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "mixtral"):
        dh = cfg.get("head_dim") or N // H
        kv = cfg.get("num_key_value_heads") or H
        g = lambda n: _get(sd, f"layers.{l}.{n}.weight")  # noqa: E731
        q = g("self_attn.q_proj").reshape(H, dh, N)
        k = g("self_attn.k_proj").reshape(kv, dh, N)
        v = g("self_attn.v_proj").reshape(kv, dh, N)
        o = g("self_attn.o_proj")
        if fam == "mixtral":
            E = cfg["num_local_experts"]
            ex = lambda e, w: g(f"block_sparse_moe.experts.{e}.{w}")  # noqa: E731
            ff = [("M_gate", e, ex(e, "w1")) for e in range(E)]
            ff += [("M_in", e, ex(e, "w3")) for e in range(E)]
            ff += [("M_out", e, ex(e, "w2")) for e in range(E)]
            ff += [("router", -1, g("block_sparse_moe.gate"))]
        else:
            ff = [
                ("M_gate", -1, g("mlp.gate_proj")),
                ("M_in", -1, g("mlp.up_proj")),
                ("M_out", -1, g("mlp.down_proj")),
            ]
        return q, k, v, o, ff
    if fam == "phi3":
        dh = N // H
        g = lambda n: _get(sd, f"layers.{l}.{n}.weight")  # noqa: E731
        qkv = g("self_attn.qkv_proj")  # forward: qkv[..., :H*dh], then KV*dh, then the rest
        q, k, v = np.split(qkv, [H * dh, H * dh + KV * dh], axis=0)
        gate, up = np.split(g("mlp.gate_up_proj"), 2, axis=0)  # forward: chunk(2, dim=-1)
        ff = [("M_gate", -1, gate), ("M_in", -1, up), ("M_out", -1, g("mlp.down_proj"))]
        return (
            q.reshape(H, dh, N),
            k.reshape(KV, dh, N),
            v.reshape(KV, dh, N),
            g("self_attn.o_proj"),
            ff,
        )
    if fam == "gpt_neox":
        dh = N // H
        g = lambda n: _get(sd, f"layers.{l}.{n}.weight")  # noqa: E731
        w = g("attention.query_key_value").reshape(H, 3, dh, N)  # view(..., H, 3 dh), chunk(3)
        ff = [("M_in", -1, g("mlp.dense_h_to_4h")), ("M_out", -1, g("mlp.dense_4h_to_h"))]
        return w[:, 0], w[:, 1], w[:, 2], g("attention.dense"), ff
    if fam == "falcon":
        dh = N // H
        g = lambda n: _get(sd, f"h.{l}.{n}.weight")  # noqa: E731
        w = g("self_attention.query_key_value")
        if cfg.get("new_decoder_architecture"):
            kv = cfg["num_kv_heads"]
            w = w.reshape(kv, H // kv + 2, dh, N)  # _split_heads: view(..., -1, H/KV + 2, dh)
            q, k, v = w[:, :-2].reshape(H, dh, N), w[:, -2], w[:, -1]
        elif cfg.get("multi_query", True):
            w = w.reshape(H + 2, dh, N)  # view(..., H + 2, dh): H queries, one key, one value
            q, k, v = w[:H], w[H : H + 1], w[H + 1 :]
        else:
            w = w.reshape(H, 3, dh, N)
            q, k, v = w[:, 0], w[:, 1], w[:, 2]
        ff = [("M_in", -1, g("mlp.dense_h_to_4h")), ("M_out", -1, g("mlp.dense_4h_to_h"))]
        return q, k, v, g("self_attention.dense"), ff
    if fam == "gptj":
        dh = N // H
        g = lambda n: _get(sd, f"h.{l}.{n}.weight")  # noqa: E731
        qkv = [g(f"attn.{x}_proj").reshape(H, dh, N) for x in "qkv"]
        ff = [("M_in", -1, g("mlp.fc_in")), ("M_out", -1, g("mlp.fc_out"))]
        return (*qkv, g("attn.out_proj"), ff)
    if fam == "opt":
        dh = N // H
        g = lambda n: _get(sd, f"decoder.layers.{l}.{n}.weight")  # noqa: E731
        qkv = [g(f"self_attn.{x}_proj").reshape(H, dh, N) for x in "qkv"]
        ff = [("M_in", -1, g("fc1")), ("M_out", -1, g("fc2"))]
        return (*qkv, g("self_attn.out_proj"), ff)
    if fam == "vit":
        dh = N // H
        g = lambda n: _get(sd, f"encoder.layer.{l}.{n}.weight")  # noqa: E731
        qkv = [g(f"attention.attention.{x}").reshape(H, dh, N) for x in ("query", "key", "value")]
        ff = [("M_in", -1, g("intermediate.dense")), ("M_out", -1, g("output.dense"))]
        return (*qkv, g("attention.output.dense"), ff)
    raise AssertionError(arch)


def reference_matrices(arch: str, path, scale: float = 1.0):
    """``[(kind, layer, head, expert, dense float64 matrix)]`` in the table order: per layer, QK and V
    of each query head (with key/value head ``h // (H / KV)``), then the feed-forward matrices."""
    sd, cfg = _raw(path)
    out = []
    for l in range(L):
        q, k, v, o, ff = reference_layer(arch, sd, cfg, l)
        dh = q.shape[1]
        rep = H // k.shape[0]
        for h in range(H):
            g = h // rep
            out.append(("QK", l, h, -1, scale * q[h].T @ k[g]))
            out.append(("V", l, h, -1, v[g].T @ o[:, h * dh : (h + 1) * dh].T))
        out += [(kind, l, -1, e, W.T) for kind, e, W in ff]
    return out


def _compare(ours, ref):
    assert len(ours) == len(ref)
    for m, (kind, l, h, e, M) in zip(ours, ref):
        assert (m.kind, m.layer, m.head, m.expert) == (kind, l, h, e)
        assert (m.rows, m.cols) == M.shape
        s = np.linalg.svd(M, compute_uv=False)
        k = m.svals.numel()
        assert rel(m.svals.numpy(), s[:k]) <= RTOL, (kind, l, h, e)
        assert np.all(s[k:] <= 1e-12 * s[0])  # a head's product has rank <= d_head
        assert rel(m.norm21, np.linalg.norm(M, axis=0).sum()) <= RTOL


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
        assert t.loc[t["kind"] == "QK", "note"].str.contains("rotary").all()
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
    # the command gives a spectra-only report, no bound (tests/test_analyze_spectra_only.py)
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


@pytest.mark.parametrize("arch", ["llama", "gemma2", "falcon_gqa", "gpt_neox"])
def test_attention_scale_is_the_modules_scaling(saved, arch):
    model, path = saved[arch]
    if arch.startswith("falcon"):
        att = model.transformer.h[0].self_attention
        scaling = float(att.inv_norm_factor)
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

    q = tmp_path / "bloom"
    q.mkdir()
    save_file(
        {"h.0.self_attention.query_key_value.weight": torch.zeros(12, 4)},
        str(q / "model.safetensors"),
    )
    (q / "config.json").write_text(json.dumps({"model_type": "bloom"}))
    err = _cli_error(q, capsys)
    assert "model_type 'bloom'" in err and "found '" not in err


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

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
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

    root = Path(__file__).resolve().parents[1]
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
