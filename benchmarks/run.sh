#!/usr/bin/env bash
# The speedup benchmarks of docs/benchmarks.md in one command: corgy's MNIST and Tiny YOLO (v2-VOC, v3-tiny) on
# every backend (naive; blas, corgy's own kernels, and blas:im2col, the im2col + OpenBLAS baseline, each at 1 thread
# and all cores; vulkan on every device present), the peers on the same
# weights and inputs (PyTorch eager and jit-frozen, OpenCV DNN, ONNX Runtime, darknet; each checked against corgy's
# outputs before it is timed), and the CPU's FMA peak and sgemm rate; then the tables and charts.
#
#   benchmarks/run.sh [--quick] [--build DIR] [--work DIR] [--no-docs] [--models a,b] [--serve]
#   benchmarks/run.sh --gpu-machine --prebuilt DIR [--work DIR] [--models a,b]    (on the device tool's GPU machine)
#
# --quick       few repetitions, one process per configuration, naive and lavapipe on batch 1 only: checks the
#               pipeline in a few minutes; its numbers are not for the docs (they go to docs/ only without --quick)
# --build DIR   CMake build folder (default build/bench; configured Release, the benchmark targets built)
# --work DIR    inputs, weights, outputs and raw results (default DIR/bench-work)
# --no-docs     keep docs/ as it is; write the tables and charts under the work folder only
# --models a,b  only these of mnist, yolov2-tiny-voc, yolov3-tiny, style256, style512, the ImageNet zoo (resnet18,
#               resnet50, mobilenet_v2, mobilenet_v3_large, efficientnet_b0, densenet121, vgg16), the modern set
#               (convnext_tiny, inception_v3, shufflenet_v2_x1_0, fcn_resnet50, lraspp_mobilenet_v3_large) and
#               yolov8n (to check a few rows quickly; docs/ is left as it is)
# --no-peers    corgy alone: no peers and none of their packages (the pipeline smoke test that CI runs)
# --serve       then the serve benchmark too (benchmarks/serve_benchmark.sh, with --quick, --build, --no-docs,
#               --no-peers and the models it has among --models passed on; its work folder: WORK/serve): corgy-serve
#               with and without dynamic batching against ONNX Runtime behind an HTTP server, 1, 8 and 32 clients
#               (this machine; on the GPU machine: benchmarks/serve_benchmark.sh --gpu-machine)
# --gpu-machine runs the GPU machine's set instead (vulkan on the GPU, blas on 2 pinned cores and all cores,
#               PyTorch fp32 on CUDA) from prebuilt binaries (--prebuilt DIR with bin/model_benchmark,
#               bin/roofline_benchmark, lib/libcorgy.so* and the libraries it needs that the GPU machine lacks,
#               onnx/resnet18.onnx.xz, onnx/mobilenet_v2.onnx.xz, onnx/yolov8n.onnx.xz: the ONNX exports this script
#               writes here);
#               results go to $OUT (or the work folder), and docs/benchmarks/gpu-machine.jsonl takes them back here
#               (report.py renders them)
#
# Benchmark-only packages (CI's --no-peers smoke run needs only python3-numpy and python3-matplotlib): Debian
# python3-torch python3-torchvision python3-opencv python3-onnx python3-matplotlib darknet
# (and nodejs npm when there is no npm), installed when missing (as root); npm onnxruntime-node, into the build folder.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
BENCH_DEBS=(python3-numpy python3-torch python3-torchvision python3-opencv python3-onnx python3-matplotlib darknet)
source "$(dirname "${BASH_SOURCE[0]}")/peer_packages.sh"  # ORT_VERSION, install_peer_packages
SEED=1   # --random-weights of the Tiny YOLO runs

command_line="benchmarks/run.sh $*"
quick=0 gpu=0 docs=1 build=build/bench work="" prebuilt="" only_models="" with_peers=1 serve=0
while (($#)); do
  case $1 in
    --quick) quick=1 ;;
    --gpu-machine) gpu=1 ;;
    --no-docs) docs=0 ;;
    --no-peers) with_peers=0 ;;
    --serve) serve=1 ;;
    --build) build=$2; shift ;;
    --work) work=$2; shift ;;
    --prebuilt) prebuilt=$2; shift ;;
    --models) only_models=$2; docs=0; shift ;;
    *)
      echo "usage: benchmarks/run.sh [--quick] [--build DIR] [--work DIR] [--no-docs] [--models a,b] [--no-peers] [--serve]" >&2
      echo "       benchmarks/run.sh --gpu-machine --prebuilt DIR [--work DIR] [--models a,b]" >&2
      exit 2
      ;;
  esac
  shift
done

build=$(realpath -m "$build")
[[ -z $prebuilt ]] || prebuilt=$(realpath -m "$prebuilt")

log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

# --- setup ---------------------------------------------------------------------------------------------------
install_packages() {
  # Without peers: what the pipeline itself needs (inputs, the report and its charts).
  ((with_peers)) || BENCH_DEBS=(python3-numpy python3-matplotlib)
  install_peer_packages "$with_peers" "$build" "${BENCH_DEBS[@]}"
}

build_programs() {
  # A build folder configured before (scripts/test.sh's build/release, say) is used as it is configured.
  [[ -f $build/CMakeCache.txt ]] ||
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCORGY_BUILD_TESTS=OFF >"$work/cmake.log"
  cmake --build "$build" -j"$(nproc)" --target model_benchmark roofline_benchmark >>"$work/cmake.log"
}

if ((gpu)); then
  [[ -n $prebuilt ]] || { echo "--gpu-machine needs --prebuilt DIR" >&2; exit 2; }
  work=${work:-/tmp/bench-work}
  bin=$prebuilt/bin
  export LD_LIBRARY_PATH=$prebuilt/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  python=python3   # the image's Python, which has PyTorch with CUDA
  compiler="same binaries as the CPU machine"
  corgy_version=$(cat "$prebuilt/corgy-version" 2>/dev/null || true)  # written where the binaries were built
else
  work=${work:-$build/bench-work}
  bin=$build/benchmarks
  python=/usr/bin/python3
  compiler="" corgy_version=""
fi
mkdir -p "$work/out"
work=$(cd "$work" && pwd)
results=$work/results.jsonl
: >"$results"
: >"$work/stderr.log"
rm -f "$work/failures.log"
if ((!gpu)); then
  install_packages
  build_programs
  export NODE_PATH=$build/node/node_modules
  # The blas backend's tuning cache (and lavapipe's shader cache) start empty in each run, in its work folder: the
  # first two processes of a layer shape time its candidates, the later ones plan from the file where the two agreed,
  # as a deployed program's later runs do; no choice made by another build or an earlier run is timed.
  rm -rf "$work/cache"
  export XDG_CACHE_HOME=$work/cache
fi

# --- what runs -----------------------------------------------------------------------------------------------
# Timed forwards per model and batch: `repeat` for the fast configurations (after 2 untimed warm-ups, 1 at batch
# 8), `slow_repeat` after `slow_warmup` for naive and lavapipe. Naive's batch 8 takes over a minute a forward, so
# it is timed once, cold: the first forward costs no more than the others (the 'first ms' column of batch 1).
# The style network (data/style_transfer) runs at 256 x 256 and 512 x 512, batch 1 (models style256, style512).
# The ImageNet zoo (torchvision's architectures, seeded random weights: benchmarks/torch_models.py) runs from its
# ONNX export through corgy::load_onnx, at 224 x 224, batch 1 and 8 (kind "imagenet"), against ONNX Runtime and
# PyTorch at 1 and 2 threads, each configuration in a process of its own (for its peak RSS).
# The modern set (issue 25: the networks the loader learnt last; the U-Net is tools/unet_net.py's, at 224 x 224)
# joins the zoo's table at batch 1 on the CPU.
# YOLOv8n (tools/yolov8_net.py: Ultralytics' architecture in plain PyTorch, the box decoding in the graph, seeded
# random weights) runs the same way at 640 x 640, batch 1 (kind "detector"): blas against ONNX Runtime and PyTorch
# on the CPU machine, vulkan against PyTorch on CUDA on the GPU machine.
zoo=(resnet18 resnet50 mobilenet_v2 mobilenet_v3_large efficientnet_b0 densenet121 vgg16)
modern=(convnext_tiny inception_v3 shufflenet_v2_x1_0 fcn_resnet50 lraspp_mobilenet_v3_large unet)
zoo+=("${modern[@]}")
detectors=(yolov8n)
models=(mnist yolov2-tiny-voc yolov3-tiny style256 style512 "${zoo[@]}" "${detectors[@]}")
declare -A batches=([mnist]="1 64" [yolov2-tiny-voc]="1 8" [yolov3-tiny]="1 8" [style256]="1" [style512]="1"
  [yolov8n]="1")
for model in "${zoo[@]}"; do batches[$model]="1 8"; done
for model in "${modern[@]}"; do batches[$model]="1"; done
declare -A repeat=([mnist.1]=200 [mnist.64]=30 [yolo.1]=15 [yolo.8]=4 [yolo.64]=10 [style.1]=8 [imagenet.1]=15
  [imagenet.8]=4 [imagenet.32]=10 [detector.1]=10)
declare -A slow_repeat=([mnist.1]=20 [mnist.64]=3 [yolo.1]=3 [yolo.8]=1 [style.1]=1 [imagenet.1]=2 [imagenet.8]=1
  [detector.1]=1)
declare -A slow_warmup=([mnist.1]=1 [mnist.64]=1 [yolo.1]=1 [yolo.8]=0 [style.1]=0 [imagenet.1]=1 [imagenet.8]=0
  [detector.1]=0)
rounds=3
peers=(torch torch-jit opencv onnxruntime darknet)
gpu_warmup_ms=300
if ((quick)); then
  # Every model keeps its rows (a model without one made the pipeline check fail); fewer batches.
  batches=([mnist]="1 64" [yolov2-tiny-voc]="1" [yolov3-tiny]="1" [style256]="1" [style512]="1" [yolov8n]="1")
  for model in "${zoo[@]}"; do batches[$model]="1"; done
  repeat=([mnist.1]=30 [mnist.64]=5 [yolo.1]=3 [yolo.8]=2 [yolo.64]=3 [style.1]=3 [imagenet.1]=3 [imagenet.8]=2
    [detector.1]=3)
  slow_repeat=([mnist.1]=3 [mnist.64]=1 [yolo.1]=1 [yolo.8]=1 [style.1]=1 [imagenet.1]=1 [imagenet.8]=1
    [detector.1]=1)
  slow_warmup=([mnist.1]=1 [mnist.64]=1 [yolo.1]=0 [yolo.8]=0 [style.1]=0 [imagenet.1]=0 [imagenet.8]=0
    [detector.1]=0)
  rounds=1
fi
if ((gpu)); then
  # An idle host, and one call of the device tool: one process per configuration, naive's Tiny YOLO timed once.
  # The zoo at batch 1 and 32, as issue 23's table compares it with PyTorch; the modern networks whose export has a
  # fixed batch (peer_benchmark.py's FIXED_BATCH_MODELS) at batch 1 only.
  batches=([mnist]="1 64" [yolov2-tiny-voc]="1 8 64" [yolov3-tiny]="1 8 64" [style256]="1" [style512]="1"
    [yolov8n]="1")
  for model in "${zoo[@]}"; do batches[$model]="1 32"; done
  for model in shufflenet_v2_x1_0 fcn_resnet50 lraspp_mobilenet_v3_large; do batches[$model]="1"; done
  slow_repeat[yolo.1]=1 slow_warmup[yolo.1]=0 slow_repeat[imagenet.1]=1 slow_warmup[imagenet.1]=0
  rounds=1
  peers=(torch-cuda torch-cuda-jit torch-cuda-graph torch-cuda-fp16)
fi

if [[ -n $only_models ]]; then IFS=, read -ra models <<<"$only_models"; fi
((with_peers)) || peers=()
for model in "${models[@]}"; do
  [[ -n ${batches[$model]:-} ]] || { echo "unknown model $model (see --models in benchmarks/run.sh)" >&2; exit 2; }
done

in_zoo() { [[ " ${zoo[*]} " == *" $1 "* ]]; }
is_detector() { [[ " ${detectors[*]} " == *" $1 "* ]]; }
# Every configuration (naive, the im2col baselines, lavapipe, PyTorch jit) for the models of the speedup tables; the
# rest of the zoo and the detectors against their peers only (naive would take minutes a forward on VGG-16).
all_configurations() { ! is_detector "$1" && { ! in_zoo "$1" || [[ $1 == resnet18 || $1 == mobilenet_v2 ]]; }; }
kind_of() {
  case $1 in
    mnist) echo mnist ;;
    style*) echo style ;;
    *) if in_zoo "$1"; then echo imagenet; elif is_detector "$1"; then echo detector; else echo yolo; fi ;;
  esac
}
# Models that corgy runs from the ONNX export of their benchmarks/torch_models.py network.
from_onnx() { [[ $(kind_of "$1") == imagenet || $(kind_of "$1") == detector ]]; }
input_of() {  # MODEL BATCH
  if [[ $1 == style* ]]; then echo "$work/style.s${1#style}.npy"
  elif [[ $1 == inception_v3 ]]; then echo "$work/imagenet299.b$2.npy"
  else echo "$work/$(kind_of "$1").b$2.npy"; fi
}
weights_of() {
  case $(kind_of "$1") in
    mnist) echo data/mnist ;;
    style) echo data/style_transfer/weights ;;
    imagenet | detector) echo "$SEED" ;;  # torch_models.seeded_weights
    *) echo "$work/$1.weights" ;;
  esac
}
# model_args MODEL: sets model_flags to model_benchmark's flags for MODEL.
model_args() {
  case $(kind_of "$1") in
    mnist) model_flags=(--mnist data/mnist) ;;
    style) model_flags=(--style-transfer data/style_transfer/weights) ;;
    imagenet | detector) model_flags=(--onnx "$work/$1.onnx") ;;
    *) model_flags=(--cfg "data/darknet/$1.cfg" --random-weights "$SEED") ;;
  esac
}
model_path() { [[ $(kind_of "$1") != yolo ]] && echo "$1" || echo "data/darknet/$1.cfg"; }

# The OpenBLAS kernel choice as given, and the other one: OPENBLAS_CORETYPE=Haswell forces the AVX2 kernels.
blas_env_given=${OPENBLAS_CORETYPE:-}
blas_env_other=(env OPENBLAS_CORETYPE=Haswell)
[[ -z $blas_env_given ]] || blas_env_other=(env -u OPENBLAS_CORETYPE)

failures=0
# record TAGS COMMAND...: appends the command's JSON lines to the results with TAGS added to each.
record() {
  local tags=$1
  shift
  local output
  if output=$("$@" 2>>"$work/stderr.log"); then
    # shellcheck disable=SC2001  # a tag for every line of the output
    [[ -z $output ]] || sed "s/^{/{$tags, /" <<<"$output" >>"$results"
  else
    log "FAILED: $*"
    echo "FAILED: $*" >>"$work/failures.log"
    failures=$((failures + 1))
  fi
}

# corgy ROUND MODEL BATCH BACKEND THREADS [ENV] [PIN]: one model_benchmark process.
corgy() {
  local round=$1 model=$2 batch=$3 backend=$4 threads=$5 blas_env=${6:-given} pin=${7:-}
  local key
  key=$(kind_of "$model").$batch
  local warmup=2 warmup_ms=0 reps=${repeat[$key]}
  if [[ $backend == naive || $backend == vulkan-cpu ]]; then
    warmup=${slow_warmup[$key]} reps=${slow_repeat[$key]}
  fi
  [[ $backend == vulkan:* && $gpu == 1 ]] && warmup_ms=$gpu_warmup_ms
  [[ $backend == vulkan-cpu ]] && backend=vulkan:$lavapipe_index
  local prefix=(env)
  [[ $blas_env == other ]] && prefix=("${blas_env_other[@]}")
  [[ -n $pin ]] && prefix+=(taskset -c "$pin")
  local name=corgy-$model-b$batch-${backend/:/}-t$threads-$blas_env${pin:+-pin}
  local output=()
  ((round == 1)) && output=(--output "$work/out/$name")
  model_args "$model"
  record "\"framework\": \"corgy\", \"round\": $round, \"blas_env\": \"$blas_env\", \"pinned\": \"$pin\"" \
    "${prefix[@]}" "$bin/model_benchmark" "${model_flags[@]}" --input "$(input_of "$model" "$batch")" \
    --backend "$backend" --threads "$threads" --warmup "$warmup" --warmup-ms "$warmup_ms" --repeat "$reps" \
    "${output[@]}"
}

# peer ROUND PEER MODEL BATCH: one process of a peer, at 1 and 2 threads (CPU peers).
peer() {
  local round=$1 peer=$2 model=$3 batch=$4
  local key
  key=$(kind_of "$model").$batch
  local reps=${repeat[$key]} warmup=2 warmup_ms=0
  [[ $key == yolo.8 ]] && warmup=1
  [[ $peer == darknet && $key == yolo.8 ]] && reps=2  # 4 s or more per forward
  [[ $peer == torch-cuda* ]] && warmup_ms=$gpu_warmup_ms
  local reference=$work/out/corgy-$model-b$batch-$reference_config
  # fp16 peers against corgy's fp16 outputs (vulkan with +fp16).
  [[ $peer == *fp16 ]] && reference=$work/out/corgy-$model-b$batch-${reference_config/-t0/+fp16-t0}
  local common=(--model "$(model_path "$model")" --input "$(input_of "$model" "$batch")" --reference "$reference"
    --repeat "$reps" --warmup "$warmup" --warmup-ms "$warmup_ms")
  local threads=(1 2)
  [[ $peer == torch-cuda* ]] && threads=(0)
  [[ $peer == darknet ]] && threads=(1)  # single-threaded
  local tags="\"framework\": \"$peer\", \"round\": $round" t
  for t in "${threads[@]}"; do  # a process per thread count: each its own peak RSS
    if [[ $peer == onnxruntime ]]; then
      record "$tags" node benchmarks/onnxruntime_benchmark.js --onnx "$work/$model.onnx" "${common[@]}" --threads "$t"
    else
      record "$tags" "$python" benchmarks/peer_benchmark.py run --peer "$peer" --weights "$(weights_of "$model")" \
        --onnx "$work/$model.onnx" "${common[@]}" --threads "$t"
    fi
  done
}

# --- inputs, weights, the ONNX exports -------------------------------------------------------------------------
started=$(date -u +%s)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
log "work folder $work; load average $load_start"
read -ra mnist_batches <<<"${batches[mnist]}"
read -ra yolo_batches <<<"${batches[yolov2-tiny-voc]}"
"$python" benchmarks/make_inputs.py "$work" --mnist-batches "${mnist_batches[@]}" --yolo-batches "${yolo_batches[@]}" \
  --style-sides 256 512 --imagenet-batches $( ((gpu)) && echo 1 32 || echo 1 8) --imagenet-sides 224 299 \
  --detector-batches 1
for model in yolov2-tiny-voc yolov3-tiny; do
  model_args "$model"
  "$bin/model_benchmark" "${model_flags[@]}" --write-weights "$work/$model.weights"
done
if ((!gpu)); then
  for model in "${models[@]}"; do
    [[ $model == style* ]] && continue  # the style network is timed against PyTorch only
    ((with_peers)) || from_onnx "$model" || continue  # ONNX: for corgy only the zoo's and the detectors'
    "$python" benchmarks/peer_benchmark.py export-onnx --model "$(model_path "$model")" \
      --weights "$(weights_of "$model")" --out "$work/$model.onnx" 2>>"$work/stderr.log"
  done
else
  # The zoo and YOLOv8n: corgy loads the ONNX exports made on the CPU machine (benchmarks/gpu_machine_prepare.sh;
  # PyTorch there rebuilds the same seeded weights, torch_models.seeded_weights); without them those models are left
  # out.
  kept=()
  for model in "${models[@]}"; do
    if from_onnx "$model"; then
      if [[ ! -f $prebuilt/onnx/$model.onnx.xz ]]; then
        log "no $prebuilt/onnx/$model.onnx.xz: $model left out"
        continue
      fi
      "$python" -c "import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], 'wb'))" \
        "$prebuilt/onnx/$model.onnx.xz" "$work/$model.onnx"
    fi
    kept+=("$model")
  done
  models=("${kept[@]}")
fi

devices=$("$bin/model_benchmark" --list-devices 2>>"$work/stderr.log" || echo "[]")
echo "$devices" >"$work/vulkan-devices.json"
# Vulkan devices: lavapipe (a CPU) is slow, timed like naive; a GPU like blas.
device_indices() {  # the indices of the Vulkan devices whose type is (or, with "!=", is not) "CPU"
  local test="d['type'] $1 'CPU'"
  "$python" -c "import json, sys; print(' '.join(str(d['index']) for d in json.load(sys.stdin) if $test))" <<<"$devices"
}
lavapipe_index=$(device_indices "==")
gpu_indices=$(device_indices "!=")
lavapipe_index=${lavapipe_index%% *}
if ((gpu)); then lavapipe_index=""; fi

# The roofline: FMA peak and sgemm rate, once per round (a peak is the best of them: load only lowers it).
roofline() {
  log "roofline"
  record "\"framework\": \"roofline\", \"blas_env\": \"given\"" "$bin/roofline_benchmark" --repeat 10
  ((gpu)) || record "\"framework\": \"roofline\", \"blas_env\": \"other\"" "${blas_env_other[@]}" \
    "$bin/roofline_benchmark" --repeat 10
}

# --- corgy and the peers, round by round (the fast configurations in fresh processes each round) -------------------
fast_backends() {  # ROUND MODEL BATCH
  if ((gpu)) && { [[ $3 != 1 && $2 != mnist ]] || ! all_configurations "$2"; }; then
    :  # Tiny YOLO at batch 8 and 64, and most of the zoo, only on the GPU: the host's CPU would take the call's time
  elif ((gpu)); then
    corgy "$1" "$2" "$3" blas 1 given 2
    corgy "$1" "$2" "$3" blas 2 given 2,3
    corgy "$1" "$2" "$3" blas 0
  else
    corgy "$1" "$2" "$3" blas 1
    corgy "$1" "$2" "$3" blas 0
    all_configurations "$2" || return 0
    # The baseline, whose convolutions are OpenBLAS's: with the OpenBLAS kernels as given, and the other choice.
    corgy "$1" "$2" "$3" blas:im2col 1
    corgy "$1" "$2" "$3" blas:im2col 0
    corgy "$1" "$2" "$3" blas:im2col 1 other
    corgy "$1" "$2" "$3" blas:im2col 0 other
  fi
  for index in $gpu_indices; do
    corgy "$1" "$2" "$3" "vulkan:$index" 0
    ((gpu)) && corgy "$1" "$2" "$3" "vulkan:$index+fp16" 0
  done
}

slow_backends() {  # MODEL BATCH
  all_configurations "$1" || return 0
  if ((gpu)) && [[ $1 != mnist && $2 != 1 ]]; then return; fi  # naive batch 8+ would take the GPU call's time
  if ((gpu)) && [[ $1 == style512 ]]; then return; fi          # as would naive's 80 GFLOP at 512 x 512
  corgy 1 "$1" "$2" naive 1
  # lavapipe at 512 x 512 takes minutes a forward; the style network is timed on lavapipe at 256 only
  [[ -z $lavapipe_index ]] || ((quick && $2 != 1)) || [[ $1 == style512 ]] || corgy 1 "$1" "$2" vulkan-cpu 0
}

# On the GPU machine, first one untimed forward of every Vulkan configuration. A process that compiled its
# pipelines while the driver's shader cache was cold ran 3-4x slower all its life on the H100 (Tiny YOLO v2-VOC,
# fp16, batch 1: 1.94 ms against 0.58 in the next process; fp32 1.64 against 0.51; docs/vulkan.md): after this
# pass the timed processes find the cache warm, as every run of a deployed program but its very first does.
if ((gpu)); then
  log "warming the GPU driver's shader cache"
  for model in "${models[@]}"; do
    model_args "$model"
    for batch in ${batches[$model]}; do
      for index in $gpu_indices; do
        for precision in "" "+fp16"; do
          "$bin/model_benchmark" "${model_flags[@]}" --input "$(input_of "$model" "$batch")" \
            --backend "vulkan:$index$precision" --warmup 0 --repeat 1 >/dev/null 2>>"$work/stderr.log" ||
            log "FAILED: warming vulkan:$index$precision $model $batch"
        done
      done
    done
  done
fi

# The corgy run whose outputs the peers must match (written in round 1).
reference_config=blas-t1-given
if ((gpu)); then
  first_gpu=${gpu_indices%% *}
  reference_config=vulkan$first_gpu-t0-given
fi
for round in $(seq 1 "$rounds"); do
  roofline
  for model in "${models[@]}"; do
    for batch in ${batches[$model]}; do
      log "round $round: $model batch $batch (load $(cut -d' ' -f1 /proc/loadavg))"
      fast_backends "$round" "$model" "$batch"
      for p in "${peers[@]}"; do
        [[ $batch == 64 && $model != mnist && $p != torch-cuda* ]] && continue
        # The CUDA graph and fp16 peers where the GPU tables compare them: Tiny YOLO at batch 1 and 64, the zoo at 1
        # and 32 (PyTorch jit-frozen only for the models of the speedup tables).
        [[ ($p == torch-cuda-graph || $p == torch-cuda-fp16) && ($model == mnist || $batch == 8) ]] && continue
        [[ $p == torch-cuda-jit ]] && ! all_configurations "$model" && continue
        # darknet: its own cfgs only, and one round (a second or more per forward, one thread)
        [[ $p == darknet && ($(kind_of "$model") != yolo || $round != 1) ]] && continue
        [[ $model == style* && $p != torch* ]] && continue  # no ONNX export or darknet cfg of the style network
        from_onnx "$model" && [[ $p == opencv ]] && continue  # its peer reads darknet files and MNIST
        [[ $p == torch-jit ]] && ! all_configurations "$model" && continue
        peer "$round" "$p" "$model" "$batch"
      done
      ((round == 1)) && slow_backends "$model" "$batch"
      load=$(cut -d' ' -f1-3 /proc/loadavg)
      echo "{\"framework\": \"load\", \"round\": $round, \"loadavg\": \"$load\"}" >>"$results"
    done
  done
done

# The GPU's matrix ceilings (cuBLAS through PyTorch), and where a Tiny YOLO forward's time goes on it: corgy's
# per-dispatch profile against the fp32 or fp16 ceiling (when the Tiny YOLOs are among the models: a call of the
# device tool may run the other models apart).
if ((gpu)) && [[ " ${models[*]} " == *" yolov2-tiny-voc "* ]]; then
  log "GPU peaks and profiles"
  peaks=$("$python" benchmarks/gpu_peak.py 2>>"$work/stderr.log" || echo '{"framework": "gpu-peak"}')
  echo "$peaks" >>"$results"
  : >"$work/profiles.txt"
  for model in yolov2-tiny-voc yolov3-tiny; do
    for batch in 1 64; do
      for precision in fp32 fp16; do
        peak=$("$python" -c "import json, sys; print(json.loads(sys.argv[1]).get('${precision}_gflops', 0))" "$peaks")
        backend=vulkan:$first_gpu
        [[ $precision == fp16 ]] && backend+=+fp16
        model_args "$model"
        {
          echo "== $model batch $batch, $backend"
          "$bin/model_benchmark" "${model_flags[@]}" --input "$(input_of "$model" "$batch")" --backend "$backend" \
            --warmup-ms "$gpu_warmup_ms" --repeat 10 --profile --peak-gflops "$peak" \
            --peak-label "cuBLAS $precision 8192^3 on this GPU$([[ $precision == fp16 ]] && echo ', tensor cores' || echo ', TF32 off')"
        } >>"$work/profiles.txt" 2>>"$work/stderr.log" || log "FAILED: profile $model $batch $backend"
      done
    done
  done
fi

# Do corgy's backends agree with each other? (The peers were checked against corgy before they were timed.)
"$python" benchmarks/compare_outputs.py "$work/out" >>"$results"

# Where the time goes: model_benchmark --profile's per-layer table (algorithm, ms, GFLOP/s, % of the FMA peak) for
# Tiny YOLO v2-VOC at batch 1 and MNIST at batch 64, on blas at 1 thread and all cores (on the GPU machine, vulkan's
# per-dispatch profiles are above, against the GPU's ceilings).
mkdir -p "$work/profiles"
profile() {  # MODEL BATCH BACKEND THREADS
  local name
  name=$1-b$2-${3/:/}-t$4
  model_args "$1"
  log "profile $name"
  "$bin/model_benchmark" "${model_flags[@]}" --input "$(input_of "$1" "$2")" --backend "$3" --threads "$4" \
    --warmup 2 --repeat "${repeat[$(kind_of "$1").$2]}" --profile 2>>"$work/stderr.log" | tail -n +2 \
    >"$work/profiles/$name.txt" || log "FAILED: profile $name"
}
if ((!gpu)) && [[ -z $only_models ]]; then  # (--models: a check of a few rows, no profiles)
  for threads in 1 0; do
    profile yolov2-tiny-voc 1 blas "$threads"
    profile mnist 64 blas "$threads"
  done
fi
# The zoo's worst cell against ONNX Runtime (corgy's median over ORT's, same batch and thread count), profiled.
if ((!gpu && with_peers)); then
  worst=$("$python" - "$results" "${zoo[@]}" <<'PY'
import collections, json, statistics, sys
medians = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("model") in sys.argv[2:] and r.get("median_ms"):
        if r["framework"] == "corgy" and r["backend"] == "blas":
            medians[("corgy", r["model"], r["batch"], r["threads"])].append(r["median_ms"])
        elif r["framework"] == "onnxruntime":
            medians[("ort", r["model"], r["batch"], r["threads"])].append(r["median_ms"])
ratios = {}
for (who, model, batch, threads), values in medians.items():
    ort = medians.get(("ort", model, batch, threads))
    if who == "corgy" and ort:
        ratios[(model, batch, threads)] = statistics.median(values) / statistics.median(ort)
if ratios:
    model, batch, threads = max(ratios, key=ratios.get)
    print(model, batch, threads)
PY
  )
  if [[ -n $worst ]]; then
    read -r worst_model worst_batch worst_threads <<<"$worst"
    profile "$worst_model" "$worst_batch" blas "$worst_threads"
  fi
fi

# --- what this was run on ----------------------------------------------------------------------------------------
"$python" benchmarks/machine_info.py --command "$command_line" --started "$started" --load-start "$load_start" \
  --blas-env-given "${blas_env_given:-unset}" --blas-env-other "${blas_env_other[*]}" --quick "$quick" \
  --devices "$work/vulkan-devices.json" ${compiler:+--compiler "$compiler"} \
  ${corgy_version:+--corgy "$corgy_version"} >"$work/machine.json"
log "done in $(($(date -u +%s) - started)) s; $failures failures; load average $(cut -d' ' -f1-3 /proc/loadavg)"

if ((gpu)); then
  out=${OUT:-$work}
  cat "$work/machine.json" "$results" >"$out/gpu-machine.jsonl"
  cp "$work/stderr.log" "$out/gpu-stderr.log" 2>/dev/null || true
  cp "$work/profiles.txt" "$out/gpu-profiles.txt" 2>/dev/null || true
  exit 0
fi
report_out=$work/report
splice=()
if ((docs && !quick)); then
  report_out=docs/benchmarks
  splice=(--splice docs/benchmarks.md)
fi
mkdir -p "$report_out"
cat "$work/machine.json" "$results" >"$report_out/cpu-machine.jsonl"
rm -f "$report_out"/profile-cpu-*.txt
for file in "$work"/profiles/*.txt; do
  [[ -f $file ]] && cp "$file" "$report_out/profile-cpu-$(basename "$file")"
done
# Other GPUs than the main GPU machine's (docs/benchmarks/gpu-machine-<gpu>.jsonl) add their rows to the GPU zoo table.
"$python" benchmarks/report.py --cpu "$report_out/cpu-machine.jsonl" --gpu docs/benchmarks/gpu-machine.jsonl \
  docs/benchmarks/gpu-machine-*.jsonl \
  --out "$report_out" "${splice[@]}"
log "tables and charts in $report_out"

# The serve benchmark, with this run's choices (its models among --models; none there: it is not run).
if ((serve)); then
  serve_args=(--build "$build" --work "$work/serve")
  ((quick)) && serve_args+=(--quick)
  ((docs)) || serve_args+=(--no-docs)
  ((with_peers)) || serve_args+=(--no-peers)
  if [[ -n $only_models ]]; then
    serve_models=$(tr , '\n' <<<"$only_models" | grep -xE 'mnist|yolov2-tiny-voc' | paste -sd, || true)
    serve_args+=(--models "$serve_models")
  fi
  if [[ -z $only_models || -n $serve_models ]]; then
    if ! bash benchmarks/serve_benchmark.sh "${serve_args[@]}"; then
      log "FAILED: the serve benchmark"
      failures=$((failures + 1))
    fi
  fi
fi
# A configuration that failed (its command is in failures.log) fails the run, after the rest was measured.
((failures == 0))
