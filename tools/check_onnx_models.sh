#!/usr/bin/env bash
# Checks the full-size test architectures against ONNX Runtime on corgy's backends: ResNet-18 and MobileNetV2 at
# 224 x 224, SqueezeNet 1.1, the fast neural style network at 256 x 256, Tiny YOLO v2 at 416 x 416 and the MNIST
# network, each exported by tools/make_onnx_models.py --size full at opsets 9 and 17, and torchvision's Inception v3 at
# 299 x 299 at opset 13 (5 to 95 MB each: not committed, and CI has no PyTorch; tests/onnx_models_test.cpp checks the
# reduced-width versions in CI).
#
#   tools/check_onnx_models.sh [--build DIR] [--work DIR] [--backends "naive blas vulkan"] [--models a,b]
#
# Needs Debian's python3-torch python3-torchvision python3-onnx and Node.js (npm onnxruntime-node is installed into
# the work folder), and a build with corgy-run (default build/release). Passes when every output of every model on
# every backend is within 1e-4 of the largest magnitude of ONNX Runtime's output.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
build=build/release work=build/onnx-full backends="naive blas vulkan" models=""
while (($#)); do
  case $1 in
    --build) build=$2; shift ;;
    --work) work=$2; shift ;;
    --backends) backends=$2; shift ;;
    --models) models=$2; shift ;;
    *) echo "usage: tools/check_onnx_models.sh [--build DIR] [--work DIR] [--backends LIST] [--models a,b]" >&2; exit 2 ;;
  esac
  shift
done
ORT_VERSION=1.30.0
mkdir -p "$work"
if [[ ! -d $work/node/node_modules/onnxruntime-node ]]; then
  (mkdir -p "$work/node" && cd "$work/node" && npm install --ignore-scripts --no-audit --no-fund --silent \
    "onnxruntime-node@$ORT_VERSION")
fi
/usr/bin/python3 tools/make_onnx_models.py --size full --out "$work/models" ${models:+--models "$models"}
NODE_PATH=$work/node/node_modules node tools/onnx_reference.mjs "$work"/models/*/

failed=0
for dir in "$work"/models/*/; do
  name=$(basename "$dir")
  for backend in $backends; do
    start=$SECONDS
    if ! "$build/examples/corgy-run" --onnx "$dir/model.onnx" --input "$dir/input.npy" --backend "$backend" \
      --output "$dir/corgy-$backend" >"$dir/corgy-$backend.log" 2>&1; then
      echo "FAILED $name on $backend: $(tail -1 "$dir/corgy-$backend.log")"
      failed=1
      continue
    fi
    if ! result=$(/usr/bin/python3 - "$dir" "$backend" <<'EOF'
import json, pathlib, sys
import numpy as np
directory, backend = pathlib.Path(sys.argv[1]), sys.argv[2]
outputs = json.loads((directory / "outputs.json").read_text())["outputs"]
worst = 0.0
for k in range(len(outputs)):
    expected = np.load(directory / f"output_{k}.npy").astype(np.float64)
    actual = np.load(directory / f"corgy-{backend}.{k}.npy").astype(np.float64).reshape(expected.shape)
    worst = max(worst, float(np.abs(actual - expected).max() / max(np.abs(expected).max(), 1e-6)))
print(f"{worst:.2e}")
sys.exit(0 if worst <= 1e-4 else 1)
EOF
    ); then
      echo "FAILED $name on $backend: max relative error $result > 1e-4"
      failed=1
    else
      echo "ok     $name on $backend: max relative error $result ($((SECONDS - start)) s)"
    fi
  done
done
exit $failed
