#!/usr/bin/env bash
# Prepares, on this machine, the folder that `benchmarks/run.sh --gpu-machine --prebuilt DIR` runs from on the
# device tool's GPU machine, which has neither a compiler nor Debian's libraries nor torchvision's ONNX exports:
#
#   DIR/bin/{model_benchmark,roofline_benchmark}   from a Release build (built here if needed)
#   DIR/lib/                                       libcorgy.so* and the ONNX loader's libraries (Debian 12's
#                                                  libonnx, libonnx_proto, libprotobuf), which the GPU machine lacks
#   DIR/onnx/<model>.onnx.xz                       the ImageNet zoo exported here (peer_benchmark.py export-onnx;
#                                                  seeded_weights repeat a block, so VGG-16 travels as ~7 MB)
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
cmake --build "$build" -j"$(nproc)" --target model_benchmark roofline_benchmark >/dev/null

mkdir -p "$out/bin" "$out/lib" "$out/onnx"
cp "$build/benchmarks/model_benchmark" "$build/benchmarks/roofline_benchmark" "$out/bin/"
cp -P "$build"/corgy/libcorgy.so* "$out/lib/"
# The loader's libraries, wherever ldd finds them here (the GPU machine's Ubuntu has other versions or none).
ldd "$build/benchmarks/model_benchmark" | awk '/libonnx|libprotobuf/ {print $3}' | while read -r library; do
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
du -sh "$out"
