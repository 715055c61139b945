#!/usr/bin/env bash
# The serve benchmark of docs/benchmarks.md ("Serving"): requests/s and p50/p99 latency of corgy-serve with dynamic
# batching, corgy-serve at batch 1 and ONNX Runtime behind a minimal KServe v2 server (the peer, in the same run),
# at 1, 8 and 32 concurrent clients, for MNIST and Tiny YOLO v2-VOC; then the Serving tables
# (benchmarks/serve_benchmark.py and serve_client.py say how each is measured).
#
#   benchmarks/serve_benchmark.sh [--quick] [--build DIR] [--work DIR] [--no-docs] [--no-peers] [--models a,b]
#   benchmarks/serve_benchmark.sh --gpu-machine --prebuilt DIR [--backend vulkan:0,vulkan:1] [--work DIR]
#                                 [--models a,b]                                  (on the device tool's GPU machine)
#
# --quick       MNIST's pipeline in seconds (one repetition, half a second per client count); not for the docs
# --build DIR   CMake build folder (default build/bench; Release; corgy-serve, corgy-run and model_benchmark built)
# --work DIR    inputs, ONNX files, logs and raw results (default DIR/serve-work)
# --no-docs     keep docs/ as it is; the tables go to the work folder only
# --no-peers    corgy-serve alone: no ONNX Runtime, and MNIST is the committed ONNX fixture (no PyTorch needed to
#               export one; its batch of 2 is free in corgy-serve, not in ONNX Runtime): the smoke test CI runs
# --models a,b  only these of mnist, yolov2-tiny-voc (docs/ is left as it is)
# --gpu-machine from prebuilt binaries (benchmarks/gpu_machine_prepare.sh: bin/corgy-serve, bin/corgy-run,
#               bin/model_benchmark, lib/, onnx/mnist.onnx.xz, onnx/yolov2-tiny-voc-seeded.onnx.xz), corgy-serve on
#               --backend (default vulkan:0; a comma-separated list is one instance per backend: vulkan:0,vulkan:1
#               puts one on each of two GPUs), ONNX Runtime from the Python package (CPU); results to
#               $OUT/serve-gpu-<N>.jsonl (N: the number of backends), which go to docs/benchmarks/ by hand:
#               benchmarks/report.py --serving docs/benchmarks/serve-*.jsonl --out docs/benchmarks \
#                   --splice docs/benchmarks.md
#
# The networks: MNIST (data/mnist's trained weights) and Tiny YOLO v2-VOC at 416 x 416 with seeded random weights
# (benchmarks/torch_models.py seeded_weights, seed 1: its ONNX file compresses for the GPU machine), each exported
# to ONNX with a free batch (benchmarks/peer_benchmark.py export-onnx); corgy-serve and ONNX Runtime serve the same
# file. The requests carry 64 distinct inputs (benchmarks/make_inputs.py: held-out digits, uniform noise), whose
# expected outputs corgy-run computes on blas; every response is checked against them.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
source "$(dirname "${BASH_SOURCE[0]}")/peer_packages.sh"  # ORT_VERSION, install_peer_packages
SEED=1   # seeded_weights of the Tiny YOLO network
POOL=64  # distinct inputs per model

command_line="benchmarks/serve_benchmark.sh $*"
quick=0 gpu=0 docs=1 build=build/bench work="" prebuilt="" only_models="" with_peers=1 backend=""
while (($#)); do
  case $1 in
    --quick) quick=1 ;;
    --gpu-machine) gpu=1 ;;
    --no-docs) docs=0 ;;
    --no-peers) with_peers=0 ;;
    --build) build=$2; shift ;;
    --work) work=$2; shift ;;
    --prebuilt) prebuilt=$2; shift ;;
    --backend) backend=$2; shift ;;
    --models) only_models=$2; docs=0; shift ;;
    *)
      echo "usage: benchmarks/serve_benchmark.sh [--quick] [--build DIR] [--work DIR] [--no-docs] [--no-peers]" >&2
      echo "           [--models a,b]" >&2
      echo "       benchmarks/serve_benchmark.sh --gpu-machine --prebuilt DIR [--backend vulkan:0,vulkan:1]" >&2
      echo "           [--work DIR] [--models a,b]" >&2
      exit 2
      ;;
  esac
  shift
done
build=$(realpath -m "$build")
[[ -z $prebuilt ]] || prebuilt=$(realpath -m "$prebuilt")
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

models=(mnist yolov2-tiny-voc)
[[ -z $only_models ]] || IFS=, read -ra models <<<"$only_models"
for model in "${models[@]}"; do
  if [[ $model != mnist && $model != yolov2-tiny-voc ]]; then
    echo "unknown model $model (mnist, yolov2-tiny-voc)" >&2
    exit 2
  fi
done

# --- what runs ---------------------------------------------------------------------------------------------------
# Per model: seconds of each timed phase (at most; also at most max_requests requests), and corgy-serve's batching.
# The queue delay is 0 (corgy-serve's default, and Triton's): a free instance takes what is queued at once, so a
# lone request never waits and batches grow while the instances are busy (a delay of 1 ms, before 2026-11-27, made
# every request at one client wait it out, and with two instances the one forming a batch kept the other waiting).
# Each batch runs padded to the next of corgy-serve's default allowed batch sizes (the powers of two up to
# max_batch_size), each planned at load and kept: no batch waits for a plan (on blas each convolution's algorithm
# is timed per shape; Vulkan builds pipelines per shape), and padding wastes less than half a batch.
declare -A duration=([mnist]=6 [yolov2-tiny-voc]=10) max_requests=([mnist]=100000 [yolov2-tiny-voc]=20000)
max_batch_size=32 queue_delay_us=0 repetitions=3 warmup=2 clients=(1 8 32)
if ((gpu)); then
  duration=([mnist]=5 [yolov2-tiny-voc]=5)
  # Batches of up to 16: 32 clients that each wait for their answer fall into two cohorts of 16, so batches of up
  # to 32 held 16 on average and ran padded to 32 (H100, 23:46 UTC: Tiny YOLO 867 requests/s batched against 1264
  # one at a time).
  max_batch_size=16
fi
if ((quick)); then
  duration=([mnist]=0.5 [yolov2-tiny-voc]=1) max_requests=([mnist]=2000 [yolov2-tiny-voc]=50)
  repetitions=1 warmup=1
fi

# --- setup -------------------------------------------------------------------------------------------------------
if ((gpu)); then
  [[ -n $prebuilt ]] || { echo "--gpu-machine needs --prebuilt DIR" >&2; exit 2; }
  work=${work:-/tmp/serve-work}
  bin=$prebuilt/bin serve_bin=$prebuilt/bin model_benchmark=$prebuilt/bin/model_benchmark
  export LD_LIBRARY_PATH=$prebuilt/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  python=python3  # the image's Python, with the onnxruntime package
  backend=${backend:-vulkan:0}
  corgy_version=$(cat "$prebuilt/corgy-version" 2>/dev/null || true)
else
  work=${work:-$build/serve-work}
  bin=$build/examples serve_bin=$build/serve model_benchmark=$build/benchmarks/model_benchmark
  python=/usr/bin/python3
  backend=${backend:-blas}
  corgy_version=""
fi
mkdir -p "$work"
work=$(cd "$work" && pwd)

if ((!gpu)); then
  # As benchmarks/run.sh: Debian's packages when missing (PyTorch exports the ONNX files), onnxruntime-node into
  # the build folder (Debian has no ONNX Runtime for Python).
  debs=(python3-numpy python3-matplotlib)
  ((with_peers)) && debs+=(python3-torch python3-onnx)
  install_peer_packages "$with_peers" "$build" "${debs[@]}"
  [[ -f $build/CMakeCache.txt ]] ||
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCORGY_BUILD_TESTS=OFF >"$work/cmake.log"
  cmake --build "$build" -j"$(nproc)" --target corgy-serve corgy-run model_benchmark >>"$work/cmake.log"
fi

# The ONNX Runtime server: the Python package where it imports (the GPU machine), else onnxruntime-node.
ort=""
if ((with_peers)); then
  if "$python" -c "import onnxruntime" 2>/dev/null; then
    ort="$python $repo/benchmarks/ort_serve.py"
  elif [[ -d $build/node/node_modules/onnxruntime-node ]]; then
    export NODE_PATH=$build/node/node_modules
    ort="node $repo/benchmarks/ort_serve.js"
  else
    echo "no ONNX Runtime: neither the Python package nor $build/node/node_modules/onnxruntime-node" >&2
    exit 1
  fi
fi

# --- the networks, the inputs and their expected outputs -----------------------------------------------------------
started=$(date -u +%s)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
log "work folder $work; load average $load_start"
"$python" benchmarks/make_inputs.py "$work" --mnist-batches "$POOL" --yolo-batches "$POOL" --style-sides \
  --imagenet-batches --detector-batches
onnx_of() { [[ $1 == mnist ]] && echo "$work/mnist.onnx" || echo "$work/yolov2-tiny-voc-seeded.onnx"; }
input_of() { [[ $1 == mnist ]] && echo "$work/mnist.b$POOL.npy" || echo "$work/yolo.b$POOL.npy"; }
for model in "${models[@]}"; do
  onnx=$(onnx_of "$model")
  if ((gpu)); then
    "$python" -c "import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], 'wb'))" \
      "$prebuilt/onnx/$(basename "$onnx").xz" "$onnx"
  elif [[ $model == mnist ]] && ((!with_peers)); then
    cp tests/fixtures/onnx/mnist_opset17/model.onnx "$onnx"
  elif [[ $model == mnist ]]; then
    (cd benchmarks && "$python" peer_benchmark.py export-onnx --model mnist --weights ../data/mnist --out "$onnx") \
      2>>"$work/export.log"
  else
    (cd benchmarks && "$python" peer_benchmark.py export-onnx --model ../data/darknet/yolov2-tiny-voc.cfg \
      --weights "$SEED" --out "$onnx") 2>>"$work/export.log"
  fi
  # The expected outputs of the pool's inputs: corgy on blas, the backend the peers are checked against elsewhere.
  "$bin/corgy-run" --onnx "$onnx" --input "$(input_of "$model")" --backend blas --threads 0 \
    --output "$work/$model.expected" >/dev/null
done

# --- the servers, model by model -----------------------------------------------------------------------------------
results=$work/results.jsonl
: >"$results"
failures=0
for model in "${models[@]}"; do
  log "$model: corgy-serve on $backend${ort:+ and ONNX Runtime}, clients ${clients[*]}, $repetitions repetitions"
  if ! "$python" benchmarks/serve_benchmark.py --model "$model" --onnx "$(onnx_of "$model")" \
    --inputs "$(input_of "$model")" --expected "$work/$model.expected.0.npy" --corgy-serve "$serve_bin/corgy-serve" \
    --backend "$backend" ${ort:+--ort "$ort"} --max-batch-size "$max_batch_size" --queue-delay-us "$queue_delay_us" \
    --clients "${clients[@]}" --duration "${duration[$model]}" \
    --max-requests "${max_requests[$model]}" --warmup "$warmup" --repetitions "$repetitions" --work "$work" \
    >>"$results"; then
    log "FAILED: $model (see $work/*.log and the errors above)"
    failures=$((failures + 1))
  fi
done

# --- what this was run on, and the tables --------------------------------------------------------------------------
"$model_benchmark" --list-devices >"$work/vulkan-devices.json" 2>/dev/null || echo "[]" >"$work/vulkan-devices.json"
built_by=()
((gpu)) && built_by=(--compiler "same binaries as the CPU machine")
"$python" benchmarks/machine_info.py --command "$command_line" --started "$started" --load-start "$load_start" \
  --blas-env-given "${OPENBLAS_CORETYPE:-unset}" --blas-env-other "none" --quick "$quick" \
  --devices "$work/vulkan-devices.json" ${corgy_version:+--corgy "$corgy_version"} "${built_by[@]}" \
  >"$work/machine.json"
log "done in $(($(date -u +%s) - started)) s; $failures failures; load average $(cut -d' ' -f1-3 /proc/loadavg)"

if ((gpu)); then
  IFS=, read -ra instance_backends <<<"$backend"
  out=${OUT:-$work}
  cat "$work/machine.json" "$results" >"$out/serve-gpu-${#instance_backends[@]}.jsonl"
  # The servers' logs in one file: the device tool brings back few files.
  (cd "$work" && tar czf "$out/serve-gpu-${#instance_backends[@]}-logs.tar.gz" -- *.log) || true
  exit $((failures > 0))
fi
report_out=$work/report splice=()
if ((docs && !quick && with_peers)); then
  report_out=docs/benchmarks
  splice=(--splice docs/benchmarks.md)
fi
mkdir -p "$report_out"
cat "$work/machine.json" "$results" >"$report_out/serve-cpu.jsonl"
# The GPU machine's runs (docs/benchmarks/serve-gpu-*.jsonl, made by hand from --gpu-machine's output) join the table.
gpu_runs=()
if [[ $report_out == docs/benchmarks ]]; then
  for file in docs/benchmarks/serve-gpu-*.jsonl; do
    [[ -f $file ]] && gpu_runs+=("$file")
  done
fi
"$python" benchmarks/report.py --serving "$report_out/serve-cpu.jsonl" "${gpu_runs[@]}" --out "$report_out" \
  "${splice[@]}"
log "serving tables in $report_out/serving.md"
((failures == 0))
