#!/usr/bin/env bash
# Prepares, on this machine, the folder that `benchmarks/run.sh --gpu-machine --prebuilt DIR` runs from on the
# device tool's GPU machine, which has neither a compiler nor Debian's libraries nor torchvision's ONNX exports:
#
#   DIR/bin/{model_benchmark,roofline_benchmark}   from a Release build (built here if needed)
#   DIR/bin/{corgy-serve,corgy-run}                for benchmarks/serve_benchmark.sh --gpu-machine
#   DIR/lib/                                       libcorgy.so* and the libraries that the GPU machine lacks (Debian
#                                                  12's libonnx, libonnx_proto, libprotobuf; corgy-serve's
#                                                  libcpp-httplib and libbrotli*)
#   DIR/onnx/<model>.onnx.xz                       the ImageNet zoo exported here (peer_benchmark.py export-onnx;
#                                                  seeded_weights repeat a block, so VGG-16 travels as ~7 MB), and
#                                                  the serve benchmark's mnist and yolov2-tiny-voc-seeded
#   DIR/corgy-version                              git describe of the tree
#
#   benchmarks/gpu_machine_prepare.sh [--build DIR] [--out DIR] [--models a,b]
#
# --build DIR   a Release build folder (default build/release, as scripts/test.sh leaves it)
# --out DIR     the folder to fill (default build-gpu/bench; /build*/ is git-ignored, so carry it by name)
# --models a,b  which models to export (default: benchmarks/run.sh's zoo, modern set and yolov8n); exports already
#               there are kept
#
# Then carry [".gl", "build-gpu"] (the .gl folder of ../shared/device/prepare.sh) and run there:
#   source .gl/env.sh; benchmarks/run.sh --gpu-machine --prebuilt build-gpu/bench --models ...
#   source .gl/env.sh; benchmarks/serve_benchmark.sh --gpu-machine --prebuilt build-gpu/bench --backend vulkan:0
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
build=build/release out=build-gpu/bench
models="resnet18,resnet50,mobilenet_v2,mobilenet_v3_large,efficientnet_b0,densenet121,vgg16,convnext_tiny,inception_v3"
models+=",shufflenet_v2_x1_0,fcn_resnet50,lraspp_mobilenet_v3_large,unet,yolov8n"
while (($#)); do
  case $1 in
    --build) build=$2; shift ;;
    --out) out=$2; shift ;;
    --models) models=$2; shift ;;
    *) echo "usage: benchmarks/gpu_machine_prepare.sh [--build DIR] [--out DIR] [--models a,b]" >&2; exit 2 ;;
  esac
  shift
done
[[ -f $build/CMakeCache.txt ]] || { echo "$build: not a configured build folder (run scripts/test.sh or cmake first)" >&2; exit 2; }
grep -q '^CMAKE_BUILD_TYPE:STRING=Release$' "$build/CMakeCache.txt" ||
  { echo "$build: not a Release build: timings would not be corgy's" >&2; exit 2; }
cmake --build "$build" -j"$(nproc)" --target model_benchmark roofline_benchmark corgy-serve corgy-run >/dev/null

mkdir -p "$out/bin" "$out/lib" "$out/onnx"
cp "$build/benchmarks/model_benchmark" "$build/benchmarks/roofline_benchmark" "$build/serve/corgy-serve" \
  "$build/examples/corgy-run" "$out/bin/"
cp -P "$build"/corgy/libcorgy.so* "$out/lib/"
# The loader's and the HTTP server's libraries, wherever ldd finds them here (the GPU machine's Ubuntu has other
# versions or none).
ldd "$build/serve/corgy-serve" | awk '/libonnx|libprotobuf|libcpp-httplib|libbrotli/ {print $3}' |
  while read -r library; do
    cp -L "$library" "$out/lib/"
  done
git describe --always --dirty >"$out/corgy-version"

IFS=, read -ra wanted <<<"$models"
for model in "${wanted[@]}"; do
  target=$out/onnx/$model.onnx.xz
  [[ -f $target ]] && continue
  echo "exporting $model"
  exported=$(mktemp /tmp/corgy-gpu-export.XXXXXX.onnx)
  (cd benchmarks && /usr/bin/python3 peer_benchmark.py export-onnx --model "$model" --weights 1 --out "$exported" \
    2>/dev/null)
  xz -T0 -6 -c "$exported" >"$target.partial" && mv "$target.partial" "$target"
  rm -f "$exported"
done
# The serve benchmark's networks (benchmarks/serve_benchmark.sh exports them the same way on this machine): MNIST's
# trained weights, and Tiny YOLO v2-VOC with seeded_weights (seed 1), which compresses to ~120 kB.
for model in mnist yolov2-tiny-voc-seeded; do
  target=$out/onnx/$model.onnx.xz
  [[ -f $target ]] && continue
  echo "exporting $model"
  exported=$(mktemp /tmp/corgy-gpu-export.XXXXXX.onnx)
  if [[ $model == mnist ]]; then
    source_args=(--model mnist --weights ../data/mnist)
  else
    source_args=(--model ../data/darknet/yolov2-tiny-voc.cfg --weights 1)
  fi
  (cd benchmarks && /usr/bin/python3 peer_benchmark.py export-onnx "${source_args[@]}" --out "$exported" 2>/dev/null)
  xz -T0 -6 -c "$exported" >"$target.partial" && mv "$target.partial" "$target"
  rm -f "$exported"
done
du -sh "$out"
