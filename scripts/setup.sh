#!/usr/bin/env bash
# Shared setup for scripts/demo.sh and scripts/test.sh: the one list of Debian packages corgy needs, the function
# that installs the missing ones, the Release build both scripts share, and step/summary bookkeeping.
#
# Sourced by the other scripts; `bash scripts/setup.sh` on its own just installs the packages, and with
# --reference-tools also what tools/face_api_reference.mjs needs (Node.js, npm and the packages of tools/package.json).
# To add a dependency, add it to the right list below; to add a step, write a function and pass it to run_step.

# Everything the C++ library builds and tests with. Its test fixtures are committed: only the tools/ scripts that
# regenerate them need PyTorch (the Python package below needs it for its own tests).
CORGY_BUILD_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libopenblas-dev libfmt-dev libstb-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev
  # corgy-serve (serve/): the HTTP server library; curl and requests for its tests (with pytest and numpy, below).
  libcpp-httplib-dev curl python3-requests
  # The ONNX loader: the ONNX project's protobuf schema and checker.
  libonnx-dev libprotobuf-dev protobuf-compiler
  clang-format
  # The fuzz targets (tests/fuzz): clang with libFuzzer and the sanitizer runtimes.
  clang libclang-rt-dev
)
# The Vulkan backend: headers and loader, the GLSL compiler, and Mesa's drivers (lavapipe gives a CPU Vulkan device
# where there is no GPU), validation layers for tests and vulkaninfo for diagnosis.
CORGY_VULKAN_PACKAGES=(libvulkan-dev glslang-tools mesa-vulkan-drivers vulkan-validationlayers vulkan-tools)
# The Python package (python/): the headers and pybind11 to build it; pip, venv, setuptools and wheel to install it;
# numpy, which it exchanges arrays with; pytest to test it, and PyTorch for the tests that pass tensors to it through
# DLPack and check networks built in Python against PyTorch's layers; Dask's distributed (with dask) for corgy.dask
# and its tests, which run a two-process local cluster.
CORGY_PYTHON_PACKAGES=(
  python3-dev pybind11-dev python3-numpy python3-pip python3-venv python3-setuptools python3-wheel
  python3-pytest python3-torch python3-distributed
)
CORGY_PACKAGES=("${CORGY_BUILD_PACKAGES[@]}" "${CORGY_VULKAN_PACKAGES[@]}" "${CORGY_PYTHON_PACKAGES[@]}")
# tools/face_api_reference.mjs, run by hand to regenerate the face-api fixtures (never by the demo or the tests):
# Node.js and npm, then the npm packages pinned by tools/package-lock.json.
CORGY_REFERENCE_PACKAGES=(nodejs npm)

CORGY_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Build folders live in the repository (ignored by git through /build*/), one per configuration.
CORGY_RELEASE_DIR="$CORGY_ROOT/build/release"
CORGY_JOBS=$(nproc)

# Prints a banner that makes the running step easy to find in a long CI log.
banner() {
  printf '\n==== %s ====\n' "$*"
}

# Runs a command as root: directly when we are root, through sudo otherwise.
as_root() {
  if [[ $(id -u) -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    echo "error: '$*' needs root, and sudo is not installed; run this script as root" >&2
    return 1
  fi
}

# Installs the given Debian packages that are not installed yet. Touches apt only when something is missing.
ensure_packages() {
  local missing=() package
  for package in "$@"; do
    if [[ $(dpkg-query -W -f='${Status}' "$package" 2>/dev/null) != "install ok installed" ]]; then
      missing+=("$package")
    fi
  done
  if [[ ${#missing[@]} -eq 0 ]]; then
    echo "all ${#} required Debian packages are installed"
    return 0
  fi
  echo "installing missing Debian packages: ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# configure_and_build DIR BUILD_TYPE [CMAKE_ARGS...] [-- TARGETS...]: configures DIR with Ninja and builds it.
configure_and_build() {
  local dir=$1 build_type=$2
  shift 2
  local cmake_args=()
  while [[ $# -gt 0 && $1 != -- ]]; do
    cmake_args+=("$1")
    shift
  done
  if [[ $# -gt 0 ]]; then shift; fi
  local targets=("$@")
  cmake -S "$CORGY_ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" "${cmake_args[@]}"
  if [[ ${#targets[@]} -gt 0 ]]; then
    cmake --build "$dir" -j "$CORGY_JOBS" --target "${targets[@]}"
  else
    cmake --build "$dir" -j "$CORGY_JOBS"
  fi
}

# The Release build that the demo runs from and the tests check. Both scripts configure it identically (warnings
# are errors: corgy is warning-free on Debian 12's compiler), so running one after the other rebuilds nothing.
# Every build of these scripts compiles the library in batches (CORGY_UNITY_BUILD, corgy/CMakeLists.txt): about half
# the time of a fresh build, which is what CI and a new clone make.
build_release() {
  configure_and_build "$CORGY_RELEASE_DIR" Release -DCORGY_WERROR=ON -DCORGY_UNITY_BUILD=ON -- "$@"
}

# The Python package, built the way docs/python.md tells users to (pip, from the clone, nothing downloaded) and
# installed into a virtual environment of the repository, build/venv, that also sees Debian's numpy, pytest and torch
# (--system-site-packages). It is built against the Release build, installed into build/install first, so only the
# binding compiles (python/CMakeLists.txt finds that corgy through CMAKE_PREFIX_PATH). pip builds the wheel (into
# folder $1, default build/wheels), then installs that wheel: what `pip install ./python` does in one command, with
# the binding compiled once for both the wheel that scripts/test.sh inspects and the package it tests. Debian's
# Python: the python3 first on PATH may be another without these packages.
CORGY_VENV_DIR="$CORGY_ROOT/build/venv"
CORGY_INSTALL_DIR="$CORGY_ROOT/build/install"
install_python_package() {
  local wheels=${1:-$CORGY_ROOT/build/wheels}
  cmake --install "$CORGY_RELEASE_DIR" --prefix "$CORGY_INSTALL_DIR"
  if [[ ! -x $CORGY_VENV_DIR/bin/python ]]; then
    /usr/bin/python3 -m venv --system-site-packages "$CORGY_VENV_DIR"
  fi
  rm -f "$wheels"/corgy-*.whl
  CMAKE_PREFIX_PATH="$CORGY_INSTALL_DIR" CMAKE_ARGS="-DCORGY_WERROR=ON" \
    "$CORGY_VENV_DIR/bin/pip" wheel -q --no-build-isolation --no-index --no-deps --disable-pip-version-check \
    -w "$wheels" "$CORGY_ROOT/python"
  "$CORGY_VENV_DIR/bin/pip" install -q --force-reinstall --no-index --no-deps --disable-pip-version-check \
    "$wheels"/corgy-*.whl
}

# The libFuzzer targets (tests/fuzz) and the library under them, built by clang with ASan and UBSan in a folder of
# their own; the CPU backends only, since no target runs Vulkan, and no corgy-serve, which no target calls (it was a
# minute of CI time). Without -Werror: GCC's -Werror build is the one that keeps the code warning-free, and a
# clang-only warning must not stop the fuzzers. Args: targets to build.
CORGY_FUZZ_DIR="$CORGY_ROOT/build/fuzz"
build_fuzz_targets() {
  # Line tables only: a finding's stack trace names files and lines; full debug information cost a quarter of the
  # compile time.
  configure_and_build "$CORGY_FUZZ_DIR" Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -gline-tables-only" -DCMAKE_CXX_COMPILER=clang++ \
    -DCORGY_UNITY_BUILD=ON -DCORGY_FUZZ=ON -DCORGY_VULKAN=OFF -DCORGY_BUILD_TESTS=OFF -DCORGY_BUILD_BENCHMARKS=OFF \
    -DCORGY_BUILD_EXAMPLES=OFF -DCORGY_BUILD_SERVE=OFF -- "$@"
}

# run_fuzz_target NAME SECONDS CORPUS [libFuzzer options...]: runs fuzz_NAME for SECONDS on CORPUS (written to) and the
# committed seeds and regressions (read), with its dictionary. Returns non-zero on a finding (crash, sanitizer
# report, leak, timeout of a single input over 10 s, more than 2 GiB of memory); the input is in build/fuzz/artifacts.
run_fuzz_target() {
  local name=$1 seconds=$2 corpus=$3
  shift 3
  local dict=tests/fuzz/dict/$name.dict options=()
  [[ $name == darknet_forward ]] && dict=tests/fuzz/dict/darknet_cfg.dict
  [[ -f $dict ]] && options+=("-dict=$dict")
  mkdir -p "$CORGY_FUZZ_DIR/artifacts" "tests/fuzz/regressions/$name"
  "$CORGY_FUZZ_DIR/tests/fuzz/fuzz_$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$CORGY_FUZZ_DIR/artifacts/$name-" "${options[@]}" "$@" \
    "$corpus" "tests/fuzz/corpus/$name" "tests/fuzz/regressions/$name"
}

# Steps: run_step [--required] "description" command [args...] runs the command with errexit on, in a subshell,
# so that a failing step is recorded and the following steps still run; a failing --required step (one the rest
# cannot do without) ends the script after the summary. print_summary lists every step with its time.
CORGY_STEP_NAMES=()
CORGY_STEP_RESULTS=()
CORGY_STEP_SECONDS=()

run_step() {
  local required=false
  if [[ $1 == --required ]]; then
    required=true
    shift
  fi
  local name=$1
  shift
  banner "step $((${#CORGY_STEP_NAMES[@]} + 1)): $name"
  local start=$SECONDS status=0
  set +e
  (
    set -euo pipefail
    "$@"
  )
  status=$?
  set -e
  CORGY_STEP_NAMES+=("$name")
  CORGY_STEP_SECONDS+=($((SECONDS - start)))
  if [[ $status -eq 0 ]]; then
    CORGY_STEP_RESULTS+=(passed)
  else
    CORGY_STEP_RESULTS+=("FAILED (exit $status)")
    echo "step failed: $name (exit $status)" >&2
    if [[ $required == true ]]; then
      print_summary "stopped: the remaining steps need this one" || true
      exit "$status"
    fi
  fi
}

# Prints one line per step and returns non-zero when any step failed.
print_summary() {
  local title=$1 failed=0 i
  banner "summary: $title"
  for i in "${!CORGY_STEP_NAMES[@]}"; do
    printf '%-22s %5ss  %s\n' "${CORGY_STEP_RESULTS[$i]}" "${CORGY_STEP_SECONDS[$i]}" "${CORGY_STEP_NAMES[$i]}"
    [[ ${CORGY_STEP_RESULTS[$i]} == passed ]] || failed=1
  done
  printf 'total %ss on %s core(s): %s\n' "$SECONDS" "$CORGY_JOBS" "$([[ $failed -eq 0 ]] && echo passed || echo FAILED)"
  return $failed
}

# Node.js and npm (from Debian, unless an npm is on the PATH already), then `npm ci` into tools/node_modules.
install_reference_tools() {
  command -v npm >/dev/null || ensure_packages "${CORGY_REFERENCE_PACKAGES[@]}"
  npm ci --prefix "$CORGY_ROOT/tools" --no-audit --no-fund
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -euo pipefail
  ensure_packages "${CORGY_PACKAGES[@]}"
  if [[ ${1:-} == --reference-tools ]]; then install_reference_tools; fi
fi
