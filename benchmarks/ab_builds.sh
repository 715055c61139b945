#!/usr/bin/env bash
# Is a change faster? Two builds of corgy, timed on one model in alternating fresh processes (A, B, A, B, ...), so
# that the load of other sessions on a shared machine falls on both alike; prints each build's per-process medians,
# the median of each, their ratio B / A and the load average, then one JSON line. A single run of each build, minutes
# apart, is not a comparison here: on the 2-core VMs, the same binary's process medians differ by up to 25% from one
# minute to the next (docs/architecture.md, "What two threads still lose").
#
#   benchmarks/ab_builds.sh [--rounds N] BUILD_A BUILD_B -- MODEL_BENCHMARK_ARGS...
#
# BUILD_A, BUILD_B  Release build folders (each benchmarks/model_benchmark finds its own libcorgy through its
#                   RUNPATH: configure the second into another folder, e.g. `cmake -S . -B build/base` at the old
#                   commit, or copy a build folder before rebuilding)
# --rounds N        processes per build (default 5)
# The arguments after -- go to model_benchmark as they are, e.g.
#   benchmarks/ab_builds.sh build/base build/release -- --onnx resnet50.onnx --input x.npy --backend blas --threads 2
set -euo pipefail

rounds=5
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --) break ;;
    *) echo "usage: benchmarks/ab_builds.sh [--rounds N] BUILD_A BUILD_B -- MODEL_BENCHMARK_ARGS..." >&2; exit 2 ;;
  esac
done
if [[ $# -lt 3 || $3 != -- ]]; then
  echo "usage: benchmarks/ab_builds.sh [--rounds N] BUILD_A BUILD_B -- MODEL_BENCHMARK_ARGS..." >&2
  exit 2
fi
builds=("$1" "$2")
shift 3
for build in "${builds[@]}"; do
  [[ -x $build/benchmarks/model_benchmark ]] || { echo "no $build/benchmarks/model_benchmark" >&2; exit 2; }
done

# model_benchmark prints one JSON object on stdout; its median_ms is what a process measured.
median_of_process() {
  "$1/benchmarks/model_benchmark" "${@:2}" | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["median_ms"])'
}

a=() b=()
for ((round = 0; round < rounds; ++round)); do
  a+=("$(median_of_process "${builds[0]}" "$@")")
  b+=("$(median_of_process "${builds[1]}" "$@")")
done

/usr/bin/python3 - "${builds[0]}" "${builds[1]}" "${a[*]}" "${b[*]}" <<'EOF'
import json, statistics, sys
build_a, build_b = sys.argv[1:3]
a = [float(v) for v in sys.argv[3].split()]
b = [float(v) for v in sys.argv[4].split()]
load = open("/proc/loadavg").read().split()[:3]
ratio = statistics.median(b) / statistics.median(a)
print(f"A {build_a}: {' '.join(f'{v:.3f}' for v in sorted(a))} ms, median {statistics.median(a):.3f}")
print(f"B {build_b}: {' '.join(f'{v:.3f}' for v in sorted(b))} ms, median {statistics.median(b):.3f}")
print(f"B / A = {ratio:.3f} (load average {' '.join(load)})")
print(json.dumps({"a": build_a, "b": build_b, "a_ms": a, "b_ms": b, "ratio_b_over_a": round(ratio, 4),
                  "load_average": [float(v) for v in load]}))
EOF
