#!/usr/bin/env bash
# The README's first quick-start command: installs missing Debian packages, builds corgy in Release and runs the
# demos one after the other.
# Usage: bash scripts/demo.sh   (from any folder; the build goes to build/release in the repository)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$CORGY_ROOT"

# To add a demo: add its build targets here, write a function that runs it, and add a run_step line below.
DEMO_TARGETS=(corgy_demo mnist)

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

run_step --required "Debian packages" ensure_packages "${CORGY_PACKAGES[@]}"
run_step --required "release build: $CORGY_RELEASE_DIR (${DEMO_TARGETS[*]})" build_release "${DEMO_TARGETS[@]}"
run_step "demo: a small CNN built with the C++ API, on every backend" demo_backends
run_step "demo: MNIST digits with trained weights (examples/mnist)" demo_mnist
print_summary "scripts/demo.sh"
