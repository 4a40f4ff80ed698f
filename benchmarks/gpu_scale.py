"""Scale run (issue 7): ``genbound analyze`` on a 7B-parameter-scale BERT-architecture checkpoint, one GPU.

A single prepared script for the GPU machine. It

1. writes a seeded random BERT-architecture checkpoint, by default 32 layers, 32 heads, hidden 4096,
   feed-forward 16384 (6.4e9 encoder parameters), stored in bfloat16 as one safetensors shard per layer
   plus ``model.safetensors.index.json`` (about 13 GB on disk; the numbers are drawn on the GPU, and
   only one layer is ever in host memory while writing);
2. runs :func:`genbound.analysis.analyze` on it (the code behind ``genbound analyze``), which reads the
   checkpoint layer by layer and computes every spectrum in float64 on the device;
3. prints one JSON object: the shape, the time to write and to analyse, the seconds per layer, the
   peak GPU memory (``torch.cuda.max_memory_allocated``), the peak host RSS, both proxies, and the
   size of one layer.

Tested on CPU at a tiny size (``--layers 2 --heads 4 --hidden 256 --d-ff 1024 --device cpu``); see
``benchmarks/RESULTS.md`` for the status of the H200 run.

``--llama`` runs instead ``benchmarks/llama_layer.py`` on CUDA: a Llama-7B-shaped layer (hidden 4096,
32 heads, 8 key/value heads, gated feed-forward 14336, bfloat16 safetensors), read streaming, its
per-matrix spectra timed per layer and the 32-layer model's time extrapolated. Without a CUDA device
it prints ``{"skipped": ...}`` and exits 0 (the CPU numbers come from ``llama_layer.py`` itself).

    python benchmarks/gpu_scale.py --llama --json       # the Llama-shaped layer on the GPU

    python benchmarks/gpu_scale.py                      # the 7B-scale run (GPU)
    python benchmarks/gpu_scale.py --layers 2 --heads 4 --hidden 256 --d-ff 1024 --device cpu
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _pick_driver(choice: str, n: int, dev, torch):
    """The cuSOLVER driver for the square ``n x n`` float64 SVDs of the feed-forward triangles."""
    if dev.type != "cuda" or choice == "default":
        return None, None
    if choice != "probe":
        return choice, None
    g = torch.Generator(device=dev).manual_seed(1)
    A = torch.randn(n, n, generator=g, device=dev, dtype=torch.float64)
    times, vals = {}, {}
    for drv in ("gesvd", "gesvdj"):
        torch.linalg.svdvals(A[:64, :64], driver=drv)  # warm-up
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        vals[drv] = torch.linalg.svdvals(A, driver=drv)
        torch.cuda.synchronize()
        times[drv] = time.perf_counter() - t0
    agree = float(((vals["gesvd"] - vals["gesvdj"]).abs() / vals["gesvd"][0]).max())
    best = min(times, key=times.get) if agree < 1e-12 else "gesvd"
    return best, {"seconds": times, "max_abs_diff_over_sigma1": agree}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--d-ff", type=int, default=16384)
    ap.add_argument("--dtype", default="bfloat16", help="storage dtype of the checkpoint")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--device", default="auto", help="device of the analysis (auto: CUDA when available)"
    )
    ap.add_argument(
        "--folder", default=None, help="where to write the checkpoint (default: a temporary folder)"
    )
    ap.add_argument("--keep", action="store_true", help="keep the checkpoint folder")
    ap.add_argument("--json", action="store_true", help="print only the JSON object")
    ap.add_argument(
        "--driver",
        default="probe",
        help="cuSOLVER svd driver: gesvd, gesvdj, default (torch's choice) or probe (time gesvd and "
        "gesvdj on one hidden x hidden float64 matrix, check they agree, take the faster)",
    )
    ap.add_argument(
        "--llama",
        action="store_true",
        help="time a Llama-7B-shaped layer on CUDA instead (benchmarks/llama_layer.py)",
    )
    a, rest = ap.parse_known_args(argv)

    import torch

    if a.llama:
        if not torch.cuda.is_available():
            print(json.dumps({"skipped": "no CUDA device: the Llama-shaped GPU run was not made"}))
            return 0
        from benchmarks import llama_layer

        la = llama_layer.parser().parse_args(["--device", "cuda", *rest])
        print(json.dumps(llama_layer.run(la)))
        return 0
    if rest:
        ap.error(f"unrecognized arguments: {' '.join(rest)}")

    from genbound.analysis import analyze
    from genbound.device import resolve_device
    from genbound.testing import make_bert_checkpoint

    dev = resolve_device(a.device)
    gen_dev = "cuda" if dev.type == "cuda" else "cpu"
    tmp = None
    folder = Path(a.folder) if a.folder else Path(tmp := tempfile.mkdtemp(prefix="genbound-scale-"))
    try:
        t0 = time.perf_counter()
        info = make_bert_checkpoint(
            folder,
            layers=a.layers,
            heads=a.heads,
            hidden=a.hidden,
            d_ff=a.d_ff,
            seed=a.seed,
            dtype=a.dtype,
            shard=True,
            device=gen_dev,
        )
        write_s = time.perf_counter() - t0
        if dev.type == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        driver, probe = _pick_driver(a.driver, a.hidden, dev, torch)
        res = analyze(
            folder, device=dev, progress=not a.json and sys.stderr.isatty(), svd_driver=driver
        )
        if dev.type == "cuda":
            torch.cuda.synchronize()
        out = {
            "shape": {
                "layers": a.layers,
                "heads": a.heads,
                "hidden": a.hidden,
                "d_ff": a.d_ff,
                "dtype": a.dtype,
            },
            "parameters": info["parameters"],
            "checkpoint_gb": info["bytes"] / 1e9,
            "layer_gb": info["largest_layer_bytes"] / 1e9,
            "write_s": write_s,
            "analyze_s": res.seconds,
            "seconds_per_layer": res.seconds / a.layers,
            "device": str(dev),
            "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
            "gpu_peak_gb": torch.cuda.max_memory_allocated(dev) / 1e9
            if dev.type == "cuda"
            else None,
            "host_peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
            "proved_capacity": res.network.capacity,
            "proved_union_cost": res.network.union_cost,
            "spectral_adaptive": res.spectral.value,
            "edelman_log": res.edelman.log_value,
            "p_opt_zero": int((res.spectral.table["p_opt"] == 0).sum()),
            "matrices": len(res.spectral.table),
            "torch": torch.__version__,
            "svd_driver": driver,
            "driver_probe": probe,
        }
    finally:
        if tmp and not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    if not a.json:
        print(
            f"{out['parameters'] / 1e9:.2f}e9 parameters, written in {out['write_s']:.1f} s; analyze "
            f"{out['analyze_s']:.1f} s on {out['device_name']} ({out['seconds_per_layer']:.2f} s/layer)",
            file=sys.stderr,
        )
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
