#!/usr/bin/env bash
# The README's first quick-start command: installs missing Debian packages, builds corgy in Release and runs the
# demos one after the other.
# Usage: bash scripts/demo.sh   (from any folder; the build goes to build/release in the repository)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$CORGY_ROOT"

# To add a demo: add its build targets here, write a function that runs it, and add a run_step line below.
DEMO_TARGETS=(corgy_demo mnist face_detect style_transfer)

demo_backends() {
  "$CORGY_RELEASE_DIR/examples/corgy_demo"
}

# The trained MNIST network (data/mnist) on the 2,000 held-out digits, on OpenBLAS and on the best backend here
# (Vulkan where a GPU is present), then on two sample images.
demo_mnist() {
  "$CORGY_RELEASE_DIR/examples/mnist" --backend blas --show 5
  "$CORGY_RELEASE_DIR/examples/mnist" --backend auto --show 0
  "$CORGY_RELEASE_DIR/examples/mnist" data/mnist/samples/digit_0_label_6.png data/mnist/samples/digit_1_label_5.pgm
}

# face-api's trained tiny face detector (data/face_api: uint8-quantized TensorFlow.js weights) on the six demo photos
# of its npm package; the photos with the faces boxed go to build/faces.
demo_faces() {
  "$CORGY_RELEASE_DIR/examples/face_detect" --backend auto --output-dir "$CORGY_ROOT/build/faces" \
    data/face_api/sample*.png
}

# The trained multi-style network (data/style_transfer) renders the held-out photo data/style_transfer/dog.png in each
# of its styles and in one blend, on the best backend here; the PNGs go to build/style_transfer.
demo_style_transfer() {
  local out="$CORGY_ROOT/build/style_transfer" program="$CORGY_RELEASE_DIR/examples/style_transfer" style
  mkdir -p "$out"
  for style in $("$program" --list-styles | cut -d' ' -f2); do
    "$program" --backend auto --size 512 --style "$style" data/style_transfer/dog.png "$out/dog_$style.png"
  done
  "$program" --backend auto --size 512 --style 0.5,0.5,0,0 data/style_transfer/dog.png "$out/dog_blend.png"
  echo "stylised photos: $(ls "$out"/dog_*.png | tr '\n' ' ')"
}

# The Python package (python/), installed with pip into build/venv (scripts/setup.sh: install_python_package), finds
# the faces of the same photos from Python (python/examples/detect_faces.py).
demo_python() {
  install_python_package
  "$CORGY_VENV_DIR/bin/python" python/examples/detect_faces.py --backend auto data/face_api/sample*.png
}

run_step --required "Debian packages" ensure_packages "${CORGY_PACKAGES[@]}"
run_step --required "release build: $CORGY_RELEASE_DIR (${DEMO_TARGETS[*]})" build_release "${DEMO_TARGETS[@]}"
run_step "demo: a small CNN built with the C++ API, on every backend" demo_backends
run_step "demo: MNIST digits with trained weights (examples/mnist)" demo_mnist
run_step "demo: faces in photos, face-api's trained detector (examples/face_detect)" demo_faces
run_step "demo: a photo in four painted styles and a blend (examples/style_transfer)" demo_style_transfer
run_step "demo: the same faces from Python (pip install ./python, python/examples/detect_faces.py)" demo_python
print_summary "scripts/demo.sh"
