#!/usr/bin/env bash
# The README's second quick-start command, and all that CI runs (.ci/run): installs missing Debian packages, then
# checks formatting, builds in Release with warnings as errors and runs every test, tests corgy-serve over HTTP, checks the installed CMake
# package from a separate project, installs the Python package and runs its tests, runs the tests again under AddressSanitizer + UBSan, runs every fuzz target
# briefly, and runs the thread-safety test under ThreadSanitizer.
# Usage: bash scripts/test.sh   (from any folder; build folders go to build/ in the repository)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$CORGY_ROOT"

CORGY_ASAN_DIR="$CORGY_ROOT/build/asan"

check_format() {
  local folders=(corgy tests examples benchmarks python/src serve) listing files
  listing=$(find "${folders[@]}" -type f \( -name '*.h' -o -name '*.cpp' \) | sort)  # fails on a missing folder
  mapfile -t files <<<"$listing"
  echo "clang-format --dry-run --Werror on ${#files[@]} files under ${folders[*]}"
  clang-format --dry-run --Werror "${files[@]}"
}

run_tests() {
  ctest --test-dir "$1" --output-on-failure --no-tests=error -j "$CORGY_JOBS"
}

# Installs the Release build into a temporary prefix and builds tests/consumer against it with find_package(corgy),
# as a user's project would; the consumer's programs check results they compute themselves.
check_installed_package() {
  local work
  work=$(mktemp -d /tmp/corgy-install.XXXXXX)
  trap "rm -rf -- '$work'" EXIT  # expanded now: the local is gone when the step's subshell exits
  cmake --install "$CORGY_RELEASE_DIR" --prefix "$work/prefix"
  # Private dependencies must not leak into the installed headers: users need neither OpenBLAS nor fmt nor nlohmann-json.
  if grep -rnE '#include [<"](cblas|openblas|fmt/|nlohmann/|omp\.h)' "$work/prefix/include"; then
    echo "installed headers include a private dependency (above)" >&2
    return 1
  fi
  cmake -S tests/consumer -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix"
  if ! grep -q "^corgy_DIR:PATH=$work/prefix/" "$work/consumer/CMakeCache.txt"; then
    echo "find_package(corgy) found another corgy: $(grep '^corgy_DIR' "$work/consumer/CMakeCache.txt")" >&2
    return 1
  fi
  cmake --build "$work/consumer" -j "$CORGY_JOBS"
  "$work/consumer/consumer_check"
  "$work/consumer/readme_example"
  "$work/consumer/api_example" naive 1
  "$work/consumer/api_example" blas 2 tests/fixtures/mnist/input.npy
  "$work/consumer/onnx_example" tests/fixtures/onnx/resnet18_opset17/model.onnx \
    tests/fixtures/onnx/resnet18_opset17/input.npy
}

build_sanitized() {
  # -Og: with sanitizers, GCC 12 at -O1/-O2 reports false -Wmaybe-uninitialized inside libstdc++'s <regex>, which
  # -Werror makes fatal; -Og does not, and runs the heavy tests (whole Tiny YOLO networks) 4x faster than -O0.
  # Benchmarks and examples add build time and no coverage that the tests do not already give; corgy-serve is built,
  # for its hostile-request tests under the sanitizers (serve_sanitized_tests). Each test program runs as 4 shards
  # rather than one process per case (CORGY_TEST_SHARDS, tests/CMakeLists.txt): the Release run above already
  # isolated every case, and here the start-up of 2,500 sanitized processes took longer than the tests.
  # -g1: line tables and functions, enough for the sanitizers' stack traces, without the local variables' debug
  # information (-g), which cost about a quarter of each file's compile time (the CI's 30 minutes).
  configure_and_build "$CORGY_ASAN_DIR" Debug "-DCMAKE_CXX_FLAGS_DEBUG=-Og -g1" -DCORGY_SANITIZE=ON -DCORGY_WERROR=ON -DCORGY_UNITY_BUILD=ON \
    -DCORGY_BUILD_BENCHMARKS=OFF -DCORGY_BUILD_EXAMPLES=OFF -DCORGY_BUILD_SERVE=ON -DCORGY_TEST_SHARDS=4
}

run_sanitized_tests() {
  # allocator_may_return_null: a test checks that a 2^62-byte Variable fails with corgy::Error, which needs the
  # allocator to return null as glibc's does instead of aborting.
  export ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  run_tests "$CORGY_ASAN_DIR"
}

# Each fuzz target (tests/fuzz) briefly, two at a time (two cores): the committed seeds and regression inputs, then
# new inputs for CORGY_FUZZ_SECONDS seconds (default 4, to keep CI within its 30 minutes), written to a temporary
# corpus. Long runs: scripts/fuzz.sh.
fuzz_briefly() {
  build_fuzz_targets
  local seconds=${CORGY_FUZZ_SECONDS:-4} work failed=0 i name
  work=$(mktemp -d /tmp/corgy-fuzz.XXXXXX)
  trap "rm -rf -- '$work'" EXIT
  mapfile -t targets < <(sed -n 's/^set(CORGY_FUZZ_TARGETS \(.*\))$/\1/p' tests/fuzz/targets.cmake | tr ' ' '\n')
  for ((i = 0; i < ${#targets[@]}; i += 2)); do
    local pids=() names=("${targets[@]:i:2}")
    for name in "${names[@]}"; do
      mkdir -p "$work/$name"
      run_fuzz_target "$name" "$seconds" "$work/$name" -seed=1 >"$work/$name.log" 2>&1 &
      pids+=($!)
    done
    for ((j = 0; j < ${#names[@]}; ++j)); do
      name=${names[j]}
      if wait "${pids[j]}"; then
        printf 'fuzz_%-16s %s\n' "$name" "$(grep -E '^Done [0-9]+ runs' "$work/$name.log" || echo '(no summary)')"
      else
        echo "fuzz_$name FOUND A BUG (input in build/fuzz/artifacts/; copy it to tests/fuzz/regressions/$name/):" >&2
        tail -n 60 "$work/$name.log" >&2
        failed=1
      fi
    done
  done
  return $failed
}

# The benchmark pipeline of docs/benchmarks.md (benchmarks/run.sh), as a smoke test on the release build: MNIST,
# quick repetitions, corgy alone (no peers, none of their packages), then the serve benchmark likewise (--serve), and
# benchmarks/ab_builds.sh. Its
# numbers go to a temporary folder, never to docs/; the step fails when a configuration or the report fails.
benchmark_smoke() {
  local work
  work=$(mktemp -d /tmp/corgy-bench-smoke.XXXXXX)
  trap "rm -rf -- '$work'" EXIT
  bash benchmarks/run.sh --quick --models mnist --no-peers --serve --build "$CORGY_RELEASE_DIR" --work "$work"
  grep -q "MNIST, batch 64" "$work/report/cpu-machine.md"
  # The A/B script of docs/architecture.md's measurements (the build against itself: one process each).
  bash benchmarks/ab_builds.sh --rounds 1 "$CORGY_RELEASE_DIR" "$CORGY_RELEASE_DIR" -- --mnist data/mnist \
    --input "$work/mnist.b64.npy" --backend blas --threads 1 --repeat 3 | grep -q '"ratio_b_over_a"'
  # The serve benchmark's pipeline (--serve: corgy-serve alone, half a second per client count; a few seconds).
  grep -q "| MNIST | 32 | \*\*" "$work/serve/report/serving.md"
}

# The Python package (python/): built as a wheel with pip against the Release build and installed into build/venv
# (setup.sh), then its pytest suite, which compares the binding with corgy-run of the same build. pytest runs from a
# folder outside python/, so that `import corgy` finds the installed package, not the source folder.
python_tests() {
  # A wheel holds the module and the corgy library it links, nothing of the build.
  local wheels
  wheels=$(mktemp -d /tmp/corgy-wheel.XXXXXX)
  trap "rm -rf -- '$wheels'" EXIT
  install_python_package "$wheels"
  "$CORGY_VENV_DIR/bin/python" -m zipfile -l "$wheels"/corgy-*.whl | tee "$wheels/list" | grep -E "corgy/(_corgy|libcorgy)"
  [[ $(grep -cE "corgy/(_corgy\.cpython.*\.so|libcorgy\.so\.0|__init__\.py|_corgy\.pyi) " "$wheels/list") -eq 4 ]]
  (cd "$CORGY_ROOT/build" && "$CORGY_VENV_DIR/bin/python" -m pytest -q -p no:cacheprovider "$CORGY_ROOT/python/tests" \
    --corgy-run "$CORGY_RELEASE_DIR/examples/corgy-run")
}

# corgy-serve (serve/, docs/serving.md) of the Release build over HTTP: serve/tests starts it on 127.0.0.1 with
# --http-port 0 over a temporary model repository of committed fixtures, and checks every endpoint, batching under
# concurrent clients, hostile requests and SIGTERM under load (about 10 s). Debian's Python, which has pytest, numpy
# and requests: the python3 first on PATH may be another.
serve_tests() {
  (cd "$CORGY_ROOT/build" && /usr/bin/python3 -m pytest -q -p no:cacheprovider "$CORGY_ROOT/serve/tests" \
    --corgy-serve "$CORGY_RELEASE_DIR/serve/corgy-serve" --corgy-run "$CORGY_RELEASE_DIR/examples/corgy-run")
}

# The same serve tests against the asan+ubsan build's corgy-serve: the hostile requests (truncated, oversized and
# malformed bodies, wrong shapes and types), concurrent clients and SIGTERM under load, with every memory error or
# undefined behaviour in the server fatal (the server exits non-zero and the tests fail), and its leaks checked at
# its exit. corgy-run (the reference for the outputs) is the release build's.
serve_sanitized_tests() {
  (export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
   cd "$CORGY_ROOT/build" && /usr/bin/python3 -m pytest -q -p no:cacheprovider "$CORGY_ROOT/serve/tests" \
     --corgy-serve "$CORGY_ASAN_DIR/serve/corgy-serve" --corgy-run "$CORGY_RELEASE_DIR/examples/corgy-run")
}

# tests/thread_safety_test under ThreadSanitizer: concurrent models on every backend, the refused concurrent use of
# one model, concurrent loaders. Only that test is built (the library and it), to keep CI short.
CORGY_TSAN_DIR="$CORGY_ROOT/build/tsan"
build_thread_sanitized() {
  configure_and_build "$CORGY_TSAN_DIR" Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" -DCORGY_SANITIZE_THREADS=ON \
    -DCORGY_WERROR=ON -DCORGY_UNITY_BUILD=ON -DCORGY_BUILD_BENCHMARKS=OFF -DCORGY_BUILD_EXAMPLES=OFF -- thread_safety_test
}

run_thread_sanitized_tests() {
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 "$CORGY_TSAN_DIR/tests/thread_safety_test"
}

run_step --required "Debian packages" ensure_packages "${CORGY_PACKAGES[@]}"
run_step "format: clang-format --dry-run --Werror" check_format
run_step "docs: C++ examples in README.md and docs/ match tests/consumer/" bash scripts/check-doc-examples.sh
run_step "release build (-Werror): $CORGY_RELEASE_DIR" build_release
run_step "release tests: ctest" run_tests "$CORGY_RELEASE_DIR"
run_step "serve: corgy-serve protocol, batching and shutdown tests" serve_tests
run_step "install + find_package(corgy) from tests/consumer" check_installed_package
run_step "python: pip wheel ./python, install the wheel into build/venv, pytest python/tests" python_tests
run_step "benchmark pipeline: benchmarks/run.sh --quick --models mnist --no-peers --serve" benchmark_smoke
run_step "asan+ubsan build (-Werror): $CORGY_ASAN_DIR" build_sanitized
run_step "asan+ubsan tests: ctest" run_sanitized_tests
run_step "asan+ubsan serve: the corgy-serve tests against the sanitized server" serve_sanitized_tests
run_step "tsan build: thread_safety_test in $CORGY_TSAN_DIR" build_thread_sanitized
run_step "tsan tests: thread_safety_test" run_thread_sanitized_tests
run_step "fuzz: every target of tests/fuzz briefly (clang, libFuzzer, asan+ubsan): $CORGY_FUZZ_DIR" fuzz_briefly
print_summary "scripts/test.sh"
