#!/usr/bin/env bash
# The device checks as one prepared script (benchmarks/RESULTS.md, "7B-parameter scale on one GPU"):
#   1. the GPU tests (CPU and CUDA agree: spectra, both proxies, theorem P, analyze, Part I-II code);
#   2. the Llama-7B-shaped layer on CUDA (benchmarks/gpu_scale.py --llama);
#   3. the 7B-shape BERT checkpoint at 8 layers, then the whole 32 layers when the seconds per layer
#      measured at 8 say it fits in what is left of BUDGET (seconds, default 420).
# Every output goes to $OUT (default /tmp/gpu_out). Run from the repository root:
#   OUT=/tmp/x bash benchmarks/gpu_check.sh
set -u
OUT=${OUT:-/tmp/gpu_out}
BUDGET=${BUDGET:-420}
PY=${PY:-python3}
mkdir -p "$OUT"
start=$(date +%s)
left() { echo $((BUDGET - ($(date +%s) - start))); }
export PYTHONPATH=$PWD
{
    nvidia-smi -L
    $PY -c "import sys, torch; print(sys.version.split()[0], torch.__version__, torch.cuda.get_device_name(0))"
} >"$OUT/machine.txt" 2>&1
timeout 150 $PY -m pytest -o addopts="" -p no:cacheprovider -m gpu -rs -q \
    tests/bounds/test_spectral_bound.py tests/bounds/test_network_bound.py \
    tests/core/test_norms_spectra.py tests/core/test_part1_toolkit.py tests/core/test_part2_nets.py \
    >"$OUT/gpu_tests.txt" 2>&1
echo "pytest rc=$? after $(($(date +%s) - start)) s" >>"$OUT/gpu_tests.txt"
timeout 90 $PY benchmarks/gpu_scale.py --llama --json >"$OUT/llama.json" 2>"$OUT/llama.err"
echo "llama rc=$? after $(($(date +%s) - start)) s" >>"$OUT/llama.err"
timeout 150 $PY benchmarks/gpu_scale.py --json --layers 8 >"$OUT/scale8.json" 2>"$OUT/scale8.err"
echo "scale8 rc=$? after $(($(date +%s) - start)) s" >>"$OUT/scale8.err"
need=$($PY -c "import json; d = json.load(open('$OUT/scale8.json')); \
print(int(1.3 * 4 * (d['write_s'] + d['analyze_s']) + 20))" 2>/dev/null || echo 100000)
if [ "$need" -lt "$(left)" ]; then
    timeout "$(left)" $PY benchmarks/gpu_scale.py --json >"$OUT/scale32.json" 2>"$OUT/scale32.err"
    echo "scale32 rc=$? after $(($(date +%s) - start)) s" >>"$OUT/scale32.err"
else
    echo "scale32 not run: needs about $need s, $(left) s left" >"$OUT/scale32.err"
fi
echo "done after $(($(date +%s) - start)) s" >>"$OUT/machine.txt"
