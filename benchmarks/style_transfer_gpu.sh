#!/usr/bin/env bash
# Times the trained style network (data/style_transfer) at 256 x 256 and 512 x 512 on the device tool's GPU
# machine, in one short call: corgy's Vulkan backend (and blas on all cores) against PyTorch CUDA eager and
# jit-frozen (fp32, TF32 off), each PyTorch run first checked against corgy's output (benchmarks/peer_benchmark.py).
# The full benchmarks/run.sh --gpu-machine covers the style network too; this is the quick look.
#
#   benchmarks/style_transfer_gpu.sh --prebuilt DIR     (DIR: bin/model_benchmark, bin/style_transfer, lib/libcorgy.so*)
#
# Writes $OUT/gpu-style.jsonl (one JSON object per run, as model_benchmark and peer_benchmark.py print them) and
# $OUT/dog_blend_gpu.png. Run from the repository root after `source .gl/env.sh` (scripts/gpu-runtime.sh,
# docs/vulkan.md#on-a-gpu-machine).
set -euo pipefail
[[ ${1:-} == --prebuilt && -n ${2:-} ]] || { echo "usage: $0 --prebuilt DIR" >&2; exit 2; }
prebuilt=$(realpath "$2")
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LD_LIBRARY_PATH=$prebuilt/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
out=${OUT:-/tmp/style-gpu}
work=$(mktemp -d)
mkdir -p "$out" "$work/out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
python3 benchmarks/make_inputs.py "$work" --mnist-batches --yolo-batches --style-sides 256 512
results=$out/gpu-style.jsonl
: >"$results"
weights=data/style_transfer/weights
for side in 256 512; do
  input=$work/style.s$side.npy
  "$prebuilt/bin/model_benchmark" --style-transfer "$weights" --input "$input" --backend vulkan --warmup-ms 300 \
    --repeat 30 --output "$work/out/corgy-style$side" >>"$results"
  "$prebuilt/bin/model_benchmark" --style-transfer "$weights" --input "$input" --backend blas --threads 0 \
    --warmup 1 --repeat 5 >>"$results"
  for peer in torch-cuda torch-cuda-jit; do
    python3 benchmarks/peer_benchmark.py run --peer "$peer" --model "style$side" --weights "$weights" \
      --input "$input" --reference "$work/out/corgy-style$side" --threads 0 --repeat 30 --warmup-ms 300 >>"$results"
  done
done
"$prebuilt/bin/style_transfer" --backend vulkan --size 512 --style 0.5,0.5,0,0 --repeat 10 \
  data/style_transfer/dog.png "$out/dog_blend_gpu.png"
cat "$results"
