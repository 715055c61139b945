#!/usr/bin/env bash
# On the device tool's GPU machine, in one call: the Vulkan tests with convolution tuning on (a GPU's default,
# docs/vulkan.md#tuning), then for each model and batch the planning time (first forward) and the forward time of
# the static tables against the tuned plans, each configuration in a process of its own:
#   static-cold   --no-tuning, the driver's shader cache cold for these pipelines (compiles them)
#   tuned-first   tuning with an empty cache file: every new convolution shape timed (the first time)
#   tuned-cached  tuning with the file the run before wrote: no timing (afterwards); its forwards are timed
#   static        --no-tuning again, the driver's cache warm; its forwards are timed
# Prebuilt:
#   <folder>/bin/   model_benchmark, and the tests to run: vulkan_tuning_test vulkan_convolution_test
#                   vulkan_backend_test vulkan_model_test layer_harness_test (its Vulkan cases)
#   <folder>/lib/   libcorgy.so*
#   <folder>/onnx/  <model>.onnx.xz for the ImageNet models (benchmarks/peer_benchmark.py export-onnx, then xz)
# Usage, from the project root after `source .gl/env.sh` (scripts/gpu-runtime.sh with vulkan-validationlayers
# libonnx1 libprotobuf32):
#   benchmarks/vulkan_tuning_device_run.sh <folder> <source dir compiled into the tests> [model:batch ...]
# (default: yolov2-tiny-voc:1 yolov2-tiny-voc:64 resnet50:1 resnet50:32 efficientnet_b0:1 efficientnet_b0:32).
# CORGY_TESTS="a b" runs only those tests, each for at most CORGY_TEST_TIMEOUT seconds (240). One JSON line per run
# on stdout, prefixed with its configuration; logs and the tuning cache files in $OUT (or /tmp). The binaries may lie
# in any folder: the device tool carries only ignored folders of its session's checkout (docs/vulkan.md#tuning).
set -uo pipefail
folder=$1
built_from=$2
shift 2
runs=("$@")
((${#runs[@]})) || runs=(yolov2-tiny-voc:1 yolov2-tiny-voc:64 resnet50:1 resnet50:32 efficientnet_b0:1
  efficientnet_b0:32)
logs=${OUT:-/tmp}
work=$(mktemp -d /tmp/corgy-tuning.XXXXXX)
folder=$(cd "$folder" && pwd)
export LD_LIBRARY_PATH=$folder/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ ! -e "$built_from" ]; then mkdir -p "$(dirname "$built_from")" && ln -s "$PWD" "$built_from"; fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
status=0
all_tests="vulkan_tuning_test vulkan_convolution_test vulkan_backend_test vulkan_model_test layer_harness_test"
tests=${CORGY_TESTS:-$all_tests}
for test in $tests; do
  [ -x "$folder/bin/$test" ] || continue
  filter='*'
  [[ $test == layer_harness_test ]] && filter='*vulkan*'
  start=$(date +%s)
  timeout "${CORGY_TEST_TIMEOUT:-240}" "$folder/bin/$test" --gtest_brief=1 --gtest_filter="$filter" \
    >"$logs/$test.log" 2>&1 || status=1
  echo "== $test: $(grep -E '^\[  (PASSED|FAILED)' "$logs/$test.log" | tr '\n' ' ') ($(($(date +%s) - start)) s)"
  grep -E "FAILED|Failure|error" "$logs/$test.log" | head -8
done

python3 - "$work" "${runs[@]}" <<'PY'
import sys
import numpy as np
work = sys.argv[1]
for run in sys.argv[2:]:
    model, batch = run.split(":")
    side = 416 if model.startswith("yolo") else 224
    x = np.random.default_rng(0).standard_normal((int(batch), 3, side, side)).astype(np.float32)
    np.save(f"{work}/{model}-{batch}.npy", x)
PY
for run in "${runs[@]}"; do
  model=${run%%:*}
  batch=${run##*:}
  if [[ $model == yolo* ]]; then
    net=(--cfg "data/darknet/$model.cfg" --random-weights 1)
  else
    [ -f "$work/$model.onnx" ] || xz -dc "$folder/onnx/$model.onnx.xz" >"$work/$model.onnx"
    net=(--onnx "$work/$model.onnx")
  fi
  cache=$work/$model-$batch-tuning.jsonl
  for config in static-cold tuned-first tuned-cached static; do
    extra=(--tuning-cache "$cache")
    [[ $config == static* ]] && extra=(--no-tuning)
    line=$("$folder/bin/model_benchmark" "${net[@]}" --input "$work/$model-$batch.npy" --backend vulkan --repeat 30 \
      --warmup-ms 300 "${extra[@]}" 2>>"$logs/model_benchmark.log") || status=1
    echo "$config $line"
  done
  cp "$cache" "$logs/" 2>/dev/null
done
exit $status
