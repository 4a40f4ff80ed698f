"""The five architectures, built and saved by ``transformers`` itself (random weights, tiny sizes, nothing
downloaded), against proxies computed independently from the models' own modules.

The independent side never reads a parameter name: it probes each module's forward map. A bias-free
linear map ``f`` (``nn.Linear`` or GPT-2's ``Conv1D``) applied to the identity gives its matrix in the
row-vector orientation, ``f(I) - f(0)``; the query, key, value and output maps of a head and the
feed-forward maps are probed this way, the score factor is the attention module's own ``scaling``, and
the two proxies then follow from dense SVDs and the formulas written out with loops
(``reference_proxies`` of ``test_spectral_bound``). ``genbound analyze`` (in process) and the Python
API must agree with it to a relative 1e-9 in float64.
"""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest
import torch

from genbound.cli import main
from genbound.errors import ArchitectureError
from genbound.weights import load_weights
from reference_proxies import COLUMNS, reference_proxies, rel

transformers = pytest.importorskip("transformers")
transformers.logging.set_verbosity_error()

RTOL = 1e-9
SIZES = dict(N=8, H=2, F=12, L=2)


def _configs():
    N, H, F, L = SIZES["N"], SIZES["H"], SIZES["F"], SIZES["L"]
    T = transformers
    common = dict(vocab_size=20, max_position_embeddings=16)
    return {
        "bert": (
            T.BertConfig(
                hidden_size=N,
                num_hidden_layers=L,
                num_attention_heads=H,
                intermediate_size=F,
                **common,
            ),
            T.BertModel,
        ),
        "roberta": (
            T.RobertaConfig(
                hidden_size=N,
                num_hidden_layers=L,
                num_attention_heads=H,
                intermediate_size=F,
                **common,
            ),
            T.RobertaForMaskedLM,
        ),
        "electra": (
            T.ElectraConfig(
                hidden_size=N,
                embedding_size=4,
                num_hidden_layers=L,
                num_attention_heads=H,
                intermediate_size=F,
                **common,
            ),
            T.ElectraForPreTraining,
        ),
        "distilbert": (
            T.DistilBertConfig(dim=N, n_layers=L, n_heads=H, hidden_dim=F, **common),
            T.DistilBertModel,
        ),
        "gpt2": (
            T.GPT2Config(
                n_embd=N,
                n_layer=L,
                n_head=H,
                vocab_size=20,
                n_positions=16,
                bos_token_id=0,
                eos_token_id=0,
            ),
            T.GPT2LMHeadModel,
        ),
    }


ARCHS = list(_configs())


def make_model(arch: str, seed: int = 0, **overrides):
    cfg, cls = _configs()[arch]
    for k, v in overrides.items():
        setattr(cfg, k, v)
    torch.manual_seed(seed)
    model = cls(cfg)
    with (
        torch.no_grad()
    ):  # initialisers give tiny or zero weights; spread them so every spectrum is generic
        for p in model.parameters():
            p.normal_(0.0, 0.4)
    return model.eval()


# --------------------------------------------------------------------------------------------------
# the independent side: probe the modules


def _linear_matrix(f, n_in: int) -> np.ndarray:
    """The row-vector matrix of a bias-free linear map: ``f(I) - f(0)``, shape ``(n_in, n_out)``."""
    with torch.no_grad():
        eye = torch.eye(n_in, dtype=torch.float64)
        return (f(eye) - f(torch.zeros_like(eye))).numpy()


def _blocks(model, arch: str):
    """Per layer: (attention module, query, key, value, attention output, ff_in, ff_out) maps (callables)."""
    if arch == "gpt2":
        out = []
        for blk in model.transformer.h:
            att = blk.attn
            N = att.embed_dim
            qkv = lambda x, c=att.c_attn: c(x)  # noqa: E731
            out.append(
                (
                    att,
                    lambda x, f=qkv, n=N: f(x)[:, :n],
                    lambda x, f=qkv, n=N: f(x)[:, n : 2 * n],
                    lambda x, f=qkv, n=N: f(x)[:, 2 * n :],
                    att.c_proj,
                    blk.mlp.c_fc,
                    blk.mlp.c_proj,
                )
            )
        return out
    if arch == "distilbert":
        return [
            (
                b.attention,
                b.attention.q_lin,
                b.attention.k_lin,
                b.attention.v_lin,
                b.attention.out_lin,
                b.ffn.lin1,
                b.ffn.lin2,
            )
            for b in model.transformer.layer
        ]
    base = {"bert": lambda m: m, "roberta": lambda m: m.roberta, "electra": lambda m: m.electra}[
        arch
    ](model)
    return [
        (
            b.attention.self,
            b.attention.self.query,
            b.attention.self.key,
            b.attention.self.value,
            b.attention.output.dense,
            b.intermediate.dense,
            b.output.dense,
        )
        for b in base.encoder.layer
    ]


def probed_matrices(model, arch: str, attention_scale: bool = False):
    """[(layer, head, kind, dense float64 matrix)] in the table order, from the modules' forward maps."""
    N, H, F = SIZES["N"], SIZES["H"], model_dff(model, arch)
    dh = N // H
    mats = []
    for l, (att, q, k, v, o, f_in, f_out) in enumerate(_blocks(model, arch)):
        Q, K, V, O = (_linear_matrix(m, N) for m in (q, k, v, o))
        c = float(att.scaling) if attention_scale else 1.0
        for h in range(H):
            s = slice(h * dh, (h + 1) * dh)
            mats.append((l, h, "QK", c * Q[:, s] @ K[:, s].T))
            mats.append((l, h, "V", V[:, s] @ O[s, :]))
        mats.append((l, -1, "M_in", _linear_matrix(f_in, N)))
        mats.append((l, -1, "M_out", _linear_matrix(f_out, F)))
    return mats


def model_dff(model, arch):
    return 4 * SIZES["N"] if arch == "gpt2" else SIZES["F"]


def analyze_json(path, *extra) -> dict:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["analyze", str(path), "--json", "--device", "cpu", "--quiet", *extra])
    assert rc == 0
    return json.loads(buf.getvalue())


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Every architecture, double precision, saved with save_pretrained (safetensors)."""
    out = {}
    for arch in ARCHS:
        model = make_model(arch, seed=ARCHS.index(arch)).double()
        path = tmp_path_factory.mktemp(arch)
        model.save_pretrained(path)
        out[arch] = (model, path)
    return out


# --------------------------------------------------------------------------------------------------
# the five families against the modules


@pytest.mark.parametrize("arch", ARCHS)
def test_analyze_matches_the_modules(saved, arch):
    model, path = saved[arch]
    assert (path / "model.safetensors").is_file()
    ref = reference_proxies(probed_matrices(model, arch), SIZES["N"])
    out = analyze_json(path)
    expected_family = {"roberta": "bert", "electra": "bert"}.get(arch, arch)
    assert (
        out["family"] == expected_family
        and out["layers"] == SIZES["L"]
        and out["heads"] == SIZES["H"]
    )
    assert rel(out["spectral_adaptive"], ref["ours"]) <= RTOL
    assert rel(out["edelman_log"], ref["edelman_log"]) <= RTOL
    assert rel(out["edelman"], np.exp(ref["edelman_log"])) <= RTOL
    # the Python API: every number of the per-matrix table, from the folder and from the module itself
    from genbound import edelman_proxy, spectral_adaptive_bound

    for src in (path, model):
        w = load_weights(src)
        r, e = spectral_adaptive_bound(w), edelman_proxy(w)
        assert rel(r.value, ref["ours"]) <= RTOL and rel(e.log_value, ref["edelman_log"]) <= RTOL
        for c in COLUMNS:
            assert rel(r.table[c].to_numpy(float), ref["table"][c]) <= RTOL, (arch, c)


@pytest.mark.parametrize("arch", ["bert", "distilbert", "gpt2"])
def test_attention_scale_is_the_modules_scaling(saved, arch):
    model, path = saved[arch]
    ref = reference_proxies(probed_matrices(model, arch, attention_scale=True), SIZES["N"])
    out = analyze_json(path, "--attention-scale")
    assert out["attention_scale"] is True
    assert (
        rel(out["spectral_adaptive"], ref["ours"]) <= RTOL
        and rel(out["edelman_log"], ref["edelman_log"]) <= RTOL
    )


def test_gpt2_inverse_layer_scaling(tmp_path):
    """GPT-2's optional 1/(layer + 1) score factor is read from the config (the module's scaling has it)."""
    model = make_model("gpt2", seed=7, scale_attn_by_inverse_layer_idx=True).double()
    model.save_pretrained(tmp_path)
    scalings = [blk.attn.scaling for blk in model.transformer.h]
    assert scalings[1] == pytest.approx(scalings[0] / 2)
    ref = reference_proxies(probed_matrices(model, "gpt2", attention_scale=True), SIZES["N"])
    out = analyze_json(tmp_path, "--attention-scale")
    assert (
        rel(out["spectral_adaptive"], ref["ours"]) <= RTOL
        and rel(out["edelman_log"], ref["edelman_log"]) <= RTOL
    )


def test_pytorch_model_bin_and_float32(tmp_path):
    """A float32 DistilBERT saved as pytorch_model.bin (torch.save of the state dict; transformers 5 writes
    safetensors even with safe_serialization=False) gives the numbers of its safetensors twin."""
    model = make_model("distilbert", seed=3)
    a, b = tmp_path / "st", tmp_path / "bin"
    model.save_pretrained(a, safe_serialization=False)
    b.mkdir()
    (b / "config.json").write_text((a / "config.json").read_text())
    torch.save(model.state_dict(), b / "pytorch_model.bin")
    ref = reference_proxies(probed_matrices(model.double(), "distilbert"), SIZES["N"])
    for path in (a, b):
        out = analyze_json(path)
        assert (
            rel(out["spectral_adaptive"], ref["ours"]) <= RTOL
            and rel(out["edelman_log"], ref["edelman_log"]) <= RTOL
        )


# --------------------------------------------------------------------------------------------------
# refused: parts the proxies do not consume, and the Llama family


def _one_line_error(path, capsys) -> str:
    capsys.readouterr()  # drop save_pretrained's progress bar
    assert main(["analyze", str(path), "--json", "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("genbound: error:") and err.count("\n") == 1 and "Traceback" not in err
    return err


def test_cross_attention_is_refused_by_name(tmp_path, capsys):
    T = transformers
    bert = T.BertModel(
        T.BertConfig(
            hidden_size=8,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=12,
            vocab_size=20,
            is_decoder=True,
            add_cross_attention=True,
        )
    )
    bert.save_pretrained(tmp_path / "bert")
    assert "crossattention" in _one_line_error(tmp_path / "bert", capsys)
    with pytest.raises(ArchitectureError, match="crossattention"):
        load_weights(bert)
    gpt = T.GPT2Model(
        T.GPT2Config(
            n_embd=8,
            n_layer=1,
            n_head=2,
            vocab_size=20,
            add_cross_attention=True,
            bos_token_id=0,
            eos_token_id=0,
        )
    )
    gpt.save_pretrained(tmp_path / "gpt2")
    assert "crossattention" in _one_line_error(tmp_path / "gpt2", capsys)


def test_longformer_global_projections_are_refused(tmp_path, capsys):
    T = transformers
    lf = T.LongformerModel(
        T.LongformerConfig(
            hidden_size=8,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=12,
            attention_window=4,
            vocab_size=20,
            max_position_embeddings=20,
        )
    )
    lf.save_pretrained(tmp_path)
    err = _one_line_error(tmp_path, capsys)
    assert "_global" in err and "Longformer" in err


def test_llama_gives_no_bound_and_says_why(tmp_path, capsys):
    """Llama is read (``test_families_decoders``), but the bound's input is refused, naming the
    uncovered blocks (rotary QK, gated feed-forward); the CLI says so and reports spectra only."""
    T = transformers
    ll = T.LlamaForCausalLM(
        T.LlamaConfig(
            hidden_size=8,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
            intermediate_size=12,
            vocab_size=20,
        )
    )
    ll.save_pretrained(tmp_path)
    capsys.readouterr()
    assert main(["analyze", str(tmp_path), "--device", "cpu", "--quiet"]) == 0
    head = capsys.readouterr().out.splitlines()[:3]
    assert head[0].startswith("SPECTRA ONLY, NO BOUND") and "llama" in head[0]
    assert "rotary" in head[1] and "gated" in head[2]
    with pytest.raises(ArchitectureError, match="rotary"):
        load_weights(ll).spectra()
