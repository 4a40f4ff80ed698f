"""Independent references for the decoder families: tiny models of every mapped architecture
(``make_model``) and their proxy matrices read straight from the raw state dict (``reference_matrices``),
shared by the family tests and the analysis tests."""

from __future__ import annotations
import json
import numpy as np
import pytest
import torch
from reference_proxies import rel

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
        "bloom": (
            T.BloomConfig(vocab_size=20, hidden_size=N, n_layer=L, n_head=H),
            T.BloomForCausalLM,
        ),
        "deberta_v2": (
            T.DebertaV2Config(
                relative_attention=True,
                pos_att_type=["p2c", "c2p"],
                share_att_key=True,
                position_buckets=8,
                **c,
            ),
            T.DebertaV2Model,
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
    "bloom": {"QK"},  # ALiBi
    "deberta_v2": {"QK"},  # disentangled attention
}


def make_model(arch: str, seed: int = 0):
    cfg, cls = _configs()[arch]
    torch.manual_seed(seed)
    model = cls(cfg)
    with torch.no_grad():  # spread the initialiser's tiny weights so that every spectrum is generic
        for p in model.parameters():
            p.normal_(0.0, 0.4)
    return model.double().eval()


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
    if fam == "bloom":
        dh = N // H
        g = lambda n: _get(sd, f"h.{l}.{n}.weight")  # noqa: E731
        w = g("self_attention.query_key_value").reshape(H, 3, dh, N)  # view(..., H, 3, dh)
        ff = [("M_in", -1, g("mlp.dense_h_to_4h")), ("M_out", -1, g("mlp.dense_4h_to_h"))]
        return w[:, 0], w[:, 1], w[:, 2], g("self_attention.dense"), ff
    if fam == "deberta_v2":
        dh = N // H
        g = lambda n: _get(sd, f"encoder.layer.{l}.{n}.weight")  # noqa: E731
        qkv = [g(f"attention.self.{x}_proj").reshape(H, dh, N) for x in ("query", "key", "value")]
        ff = [("M_in", -1, g("intermediate.dense")), ("M_out", -1, g("output.dense"))]
        return (*qkv, g("attention.output.dense"), ff)
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


def tiny_llama(tie: bool):
    """A one-layer Llama causal LM (hidden 16, vocabulary 40), its head tied to the embeddings or not:
    the extras tests' model with an LM head."""
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=24,
        vocab_size=40,
        tie_word_embeddings=tie,
    )
    return transformers.LlamaForCausalLM(cfg).eval()
