"""Seeded synthetic checkpoints for tests, benchmarks and the GPU scale run.

:func:`make_bert_checkpoint` writes a BERT-shaped checkpoint (``config.json`` plus ``model.safetensors``,
or one safetensors shard per layer with an index) whose weights are seeded Gaussians. It is a
*random-initialised* model, labelled as such in its config (``"genbound_synthetic": true``); use it for
shapes, speed and memory, never as evidence about trained weights.

>>> import tempfile, json, pathlib
>>> with tempfile.TemporaryDirectory() as d:
...     info = make_bert_checkpoint(d, layers=1, heads=2, hidden=8, d_ff=16, seed=0)
...     cfg = json.loads((pathlib.Path(d) / "config.json").read_text())
>>> cfg["num_hidden_layers"], cfg["hidden_size"], cfg["num_attention_heads"], cfg["intermediate_size"]
(1, 8, 2, 16)
>>> info["largest_layer_bytes"], info["largest_layer_weight_bytes"]   # all tensors, the six matrices
(2400, 2048)
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from ._validate import check_positive_int, check_real
from .errors import ParameterError

__all__ = ["make_bert_checkpoint", "bert_layer_shapes"]

_DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float64": torch.float64,
}


def bert_layer_shapes(hidden: int, d_ff: int) -> dict[str, tuple[int, ...]]:
    """Parameter shapes of one BERT encoder layer (names relative to ``encoder.layer.{i}.``)."""
    N, F = hidden, d_ff
    return {
        "attention.self.query.weight": (N, N),
        "attention.self.query.bias": (N,),
        "attention.self.key.weight": (N, N),
        "attention.self.key.bias": (N,),
        "attention.self.value.weight": (N, N),
        "attention.self.value.bias": (N,),
        "attention.output.dense.weight": (N, N),
        "attention.output.dense.bias": (N,),
        "attention.output.LayerNorm.weight": (N,),
        "attention.output.LayerNorm.bias": (N,),
        "intermediate.dense.weight": (F, N),
        "intermediate.dense.bias": (F,),
        "output.dense.weight": (N, F),
        "output.dense.bias": (N,),
        "output.LayerNorm.weight": (N,),
        "output.LayerNorm.bias": (N,),
    }


def _layer_tensors(
    i: int, hidden: int, d_ff: int, std: float, gen: torch.Generator, dtype, device, prefix: str
) -> dict[str, torch.Tensor]:
    out = {}
    for name, shape in bert_layer_shapes(hidden, d_ff).items():
        if name.endswith("LayerNorm.weight"):
            t = torch.ones(shape, device=device)
        elif name.endswith("bias"):
            t = torch.zeros(shape, device=device)
        else:
            t = torch.randn(shape, generator=gen, device=device, dtype=torch.float32) * std
        out[f"{prefix}encoder.layer.{i}.{name}"] = t.to(dtype).cpu().contiguous()
    return out


def make_bert_checkpoint(
    folder,
    *,
    layers: int,
    heads: int,
    hidden: int,
    d_ff: int | None = None,
    seed: int = 0,
    std: float = 0.02,
    dtype: str = "float32",
    vocab_size: int = 64,
    prefix: str = "",
    shard: bool = False,
    device: str = "cpu",
) -> dict:
    """Write a seeded random BERT-shaped checkpoint into ``folder`` and describe it.

    Weights are ``N(0, std^2)`` (BERT's initialiser scale by default), biases zero, LayerNorm gains one;
    small embeddings (``vocab_size`` rows) are included so that Hugging Face ``BertModel`` can load
    the folder. ``dtype`` is the storage type (``"float32"``, ``"float16"``, ``"bfloat16"``).
    ``shard=True`` writes one safetensors file per layer plus ``model.safetensors.index.json`` (so
    memory while writing stays at one layer); ``device="cuda"`` draws the numbers on the GPU. Returns
    ``{"path", "parameters", "bytes", "largest_layer_bytes"}`` (bytes of the stored weights).
    """
    L = check_positive_int(layers, "layers")
    H = check_positive_int(heads, "heads")
    N = check_positive_int(hidden, "hidden")
    F = check_positive_int(d_ff if d_ff is not None else 4 * N, "d_ff")
    V = check_positive_int(vocab_size, "vocab_size")
    std = check_real(std, "std", lo=0.0, lo_open=True)
    if N % H:
        raise ParameterError(f"hidden ({N}) must be divisible by heads ({H})")
    if dtype not in _DTYPES:
        raise ParameterError(f"dtype must be one of {sorted(_DTYPES)}, got {dtype!r}")
    from safetensors.torch import save_file

    dt = _DTYPES[dtype]
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    gen = torch.Generator(device=device).manual_seed(int(seed))
    config = {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "hidden_size": N,
        "num_hidden_layers": L,
        "num_attention_heads": H,
        "intermediate_size": F,
        "hidden_act": "gelu",
        "vocab_size": V,
        "max_position_embeddings": 64,
        "type_vocab_size": 2,
        "layer_norm_eps": 1e-12,
        "hidden_dropout_prob": 0.0,
        "attention_probs_dropout_prob": 0.0,
        "initializer_range": std,
        "torch_dtype": dtype,
        "genbound_synthetic": True,
        "genbound_seed": int(seed),
    }
    (path / "config.json").write_text(json.dumps(config, indent=2))
    emb = {
        f"{prefix}embeddings.word_embeddings.weight": torch.randn(
            V, N, generator=gen, device=device
        )
        * std,
        f"{prefix}embeddings.position_embeddings.weight": torch.randn(
            64, N, generator=gen, device=device
        )
        * std,
        f"{prefix}embeddings.token_type_embeddings.weight": torch.randn(
            2, N, generator=gen, device=device
        )
        * std,
        f"{prefix}embeddings.LayerNorm.weight": torch.ones(N, device=device),
        f"{prefix}embeddings.LayerNorm.bias": torch.zeros(N, device=device),
    }
    emb = {k: v.to(dt).cpu().contiguous() for k, v in emb.items()}
    itemsize = torch.empty((), dtype=dt).element_size()
    layer_params = sum(int(torch.Size(s).numel()) for s in bert_layer_shapes(N, F).values())
    weight_params = 4 * N * N + 2 * N * F
    total_params = L * layer_params + sum(int(t.numel()) for t in emb.values())
    meta = {"format": "pt"}
    if not shard:
        tensors = dict(emb)
        for i in range(L):
            tensors.update(_layer_tensors(i, N, F, std, gen, dt, device, prefix))
        save_file(tensors, str(path / "model.safetensors"), metadata=meta)
    else:
        weight_map = {}
        save_file(emb, str(path / "model-embeddings.safetensors"), metadata=meta)
        weight_map.update({k: "model-embeddings.safetensors" for k in emb})
        for i in range(L):
            fname = f"model-layer-{i:05d}.safetensors"
            t = _layer_tensors(i, N, F, std, gen, dt, device, prefix)
            save_file(t, str(path / fname), metadata=meta)
            weight_map.update({k: fname for k in t})
            del t
        index = {"metadata": {"total_size": total_params * itemsize}, "weight_map": weight_map}
        (path / "model.safetensors.index.json").write_text(json.dumps(index, indent=1))
    return {
        "path": str(path),
        "parameters": total_params,
        "bytes": total_params * itemsize,
        "largest_layer_bytes": layer_params * itemsize,
        "largest_layer_weight_bytes": weight_params * itemsize,
    }
