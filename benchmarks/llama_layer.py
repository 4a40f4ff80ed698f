"""A Llama-7B-shaped layer, read streaming from bfloat16 safetensors: time per layer, peak memory.

The shape of Llama-3-8B / Mistral-7B's layers by default: hidden 4096, 32 query heads, 8 key/value
heads (grouped-query attention, d_head 128), gated feed-forward width 14336. The script

1. writes a seeded random checkpoint of ``--layers`` such layers (default 2) in bfloat16, one
   safetensors file per tensor plus ``model.safetensors.index.json`` and a Llama ``config.json``
   (random weights, labelled ``genbound_synthetic``: for time and memory only, never for what a
   trained model's spectra look like);
2. in a fresh child process (so that its peak resident memory is the analysis's alone), loads it
   with :func:`genbound.weights.load_weights` and computes every matrix's spectrum layer by layer
   with :meth:`~genbound.weights.TransformerWeights.matrix_spectra` (the Llama family gets
   per-matrix spectra, no bound: rotary QK and gated feed-forward are not covered), timing each
   layer;
3. prints one JSON object: the shape, seconds per layer (each, and the median), the whole
   ``--total-layers``-layer model's time extrapolated as median x total, the child's peak RSS and the
   bytes of one layer's weights (bfloat16 on disk, float64 in memory), the machine (CPU model,
   threads, torch).

``--device cuda`` runs the spectra on the GPU (``benchmarks/gpu_scale.py --llama`` is the same run
for the GPU machine); without CUDA that ends in one line and exit code 2.

    python benchmarks/llama_layer.py --json                        # 2 layers of the 7B shape, CPU
    python benchmarks/llama_layer.py --hidden 256 --heads 8 --kv-heads 2 --d-ff 512 --json   # tiny
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def llama_shapes(hidden: int, heads: int, kv_heads: int, d_ff: int) -> dict[str, tuple]:
    """Parameter shapes of one Llama layer (names relative to ``model.layers.{i}.``)."""
    dh = hidden // heads
    return {
        "self_attn.q_proj.weight": (heads * dh, hidden),
        "self_attn.k_proj.weight": (kv_heads * dh, hidden),
        "self_attn.v_proj.weight": (kv_heads * dh, hidden),
        "self_attn.o_proj.weight": (hidden, heads * dh),
        "mlp.gate_proj.weight": (d_ff, hidden),
        "mlp.up_proj.weight": (d_ff, hidden),
        "mlp.down_proj.weight": (hidden, d_ff),
        "input_layernorm.weight": (hidden,),
        "post_attention_layernorm.weight": (hidden,),
    }


def write_llama_checkpoint(
    folder, *, layers, hidden, heads, kv_heads, d_ff, seed=0, dtype="bfloat16", device="cpu"
) -> dict:
    """Write the checkpoint (one file per tensor, so that writing holds one tensor at a time)."""
    import torch
    from safetensors.torch import save_file

    dt = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}[dtype]
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    gen = torch.Generator(device=device).manual_seed(seed)
    weight_map, n_bytes, layer_bytes = {}, 0, 0
    for i in range(layers):
        this_layer = 0
        for rel, shape in llama_shapes(hidden, heads, kv_heads, d_ff).items():
            name = f"model.layers.{i}.{rel}"
            if len(shape) == 1:
                t = torch.ones(shape, dtype=dt)
            else:
                t = (torch.randn(shape, generator=gen, device=device) * 0.02).to(dt).cpu()
            fname = f"{name}.safetensors"
            save_file({name: t.contiguous()}, str(folder / fname), metadata={"format": "pt"})
            weight_map[name] = fname
            this_layer += t.numel() * t.element_size()
            del t
        n_bytes += this_layer
        layer_bytes = max(layer_bytes, this_layer)
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": n_bytes}, "weight_map": weight_map})
    )
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": hidden // heads,
        "intermediate_size": d_ff,
        "num_hidden_layers": layers,
        "hidden_act": "silu",
        "rms_norm_eps": 1e-5,
        "rope_parameters": {"rope_type": "default", "rope_theta": 500000.0},
        "torch_dtype": dtype,
        "genbound_synthetic": True,
        "genbound_seed": seed,
    }
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    return {"bytes": n_bytes, "layer_bytes": layer_bytes}


def measure(folder, device: str) -> dict:
    """Load ``folder`` and time every layer's :meth:`matrix_spectra` (run in the child process)."""
    import torch

    from genbound.analysis.cli import fix_heap_growth
    from genbound.device import resolve_device
    from genbound.weights import load_weights

    fix_heap_growth()  # as the command line does: layer-sized temporaries are unmapped when freed
    dev = resolve_device(device)
    t0 = time.perf_counter()
    w = load_weights(folder)
    load_s = time.perf_counter() - t0
    per_layer, n_mats = [], 0
    for l in range(w.n_layers):
        t0 = time.perf_counter()
        mats = w.matrix_spectra(device=dev, layers=[l])
        if dev.type == "cuda":
            torch.cuda.synchronize()
        per_layer.append(time.perf_counter() - t0)
        n_mats += len(mats)
    return {
        "load_s": load_s,
        "seconds_per_layer": per_layer,
        "matrices": n_mats,
        "covered": w.covered,
        "float64_layer_bytes": w.layer_bytes(),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "gpu_peak_mib": torch.cuda.max_memory_allocated(dev) / 2**20
        if dev.type == "cuda"
        else None,
        "device": str(dev),
        "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else None,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
    }


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def run(a) -> dict:
    """Write, then measure in a child process; the JSON object described in the module docstring."""
    tmp = None
    folder = Path(a.folder) if a.folder else Path(tmp := tempfile.mkdtemp(prefix="genbound-llama-"))
    try:
        t0 = time.perf_counter()
        info = write_llama_checkpoint(
            folder,
            layers=a.layers,
            hidden=a.hidden,
            heads=a.heads,
            kv_heads=a.kv_heads,
            d_ff=a.d_ff,
            seed=a.seed,
            dtype=a.dtype,
        )
        write_s = time.perf_counter() - t0
        child = subprocess.run(
            [sys.executable, __file__, "--measure", str(folder), "--device", a.device],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        if child.returncode != 0:
            raise SystemExit(child.stderr.strip().splitlines()[-1] if child.stderr else "failed")
        m = json.loads(child.stdout)
    finally:
        if tmp and not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    med = statistics.median(m["seconds_per_layer"])
    return {
        "shape": {
            "layers_written": a.layers,
            "hidden": a.hidden,
            "heads": a.heads,
            "kv_heads": a.kv_heads,
            "d_ff": a.d_ff,
            "dtype": a.dtype,
        },
        "write_s": write_s,
        "checkpoint_mib": info["bytes"] / 2**20,
        "layer_mib_on_disk": info["layer_bytes"] / 2**20,
        "layer_mib_float64": m["float64_layer_bytes"] / 2**20,
        **{k: m[k] for k in ("load_s", "seconds_per_layer", "matrices", "covered", "device")},
        "median_seconds_per_layer": med,
        "total_layers": a.total_layers,
        "extrapolated_total_s": med * a.total_layers,
        "analysis_peak_rss_mib": m["peak_rss_mib"],
        "gpu_peak_mib": m["gpu_peak_mib"],
        "machine": {
            "cpu": cpu_model(),
            "device_name": m["device_name"],
            "threads": m["threads"],
            "torch": m["torch"],
            "python": platform.python_version(),
        },
    }


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=2, help="layers written and analysed (default 2)")
    ap.add_argument("--total-layers", type=int, default=32, help="layers of the whole model (32)")
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--d-ff", type=int, default=14336)
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cpu", help="cpu (default), cuda or auto")
    ap.add_argument("--folder", default=None, help="where to write (default: a temporary folder)")
    ap.add_argument("--keep", action="store_true", help="keep the checkpoint folder")
    ap.add_argument("--json", action="store_true", help="print only the JSON object")
    ap.add_argument("--measure", metavar="FOLDER", help=argparse.SUPPRESS)  # the child's mode
    return ap


def main(argv=None) -> int:
    a = parser().parse_args(argv)
    if a.measure:
        print(json.dumps(measure(a.measure, a.device)))
        return 0
    if a.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            print(
                "llama_layer: error: --device cuda, but no CUDA device is available",
                file=sys.stderr,
            )
            return 2
    out = run(a)
    if not a.json:
        print(
            f"{a.layers} layers of hidden {a.hidden}, {a.heads}/{a.kv_heads} heads, d_ff {a.d_ff}: "
            f"{out['median_seconds_per_layer']:.1f} s per layer on {out['device']}, "
            f"{a.total_layers} layers ~ {out['extrapolated_total_s'] / 60:.1f} min; peak RSS "
            f"{out['analysis_peak_rss_mib']:.0f} MiB (one layer: {out['layer_mib_float64']:.0f} MiB "
            f"in float64)",
            file=sys.stderr,
        )
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
