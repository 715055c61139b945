#!/usr/bin/env bash
# How the blas tuning cache behaves on cores that are never quiet: a busy loop pinned to the last CPU for the whole
# run, and PROCESSES processes in turn running one model from one fresh tuning file. Prints each process's median and
# first-forward ms (the first forward holds the tuning) and how many of the file's choices have each "agreed" and
# "measured" count after it (docs/architecture.md, "How the blas backend computes a convolution").
#
#   benchmarks/tuning_under_load.sh [--processes N] BUILD -- MODEL_BENCHMARK_ARGS...
#
# BUILD      a Release build folder (its benchmarks/model_benchmark)
# The arguments after -- go to model_benchmark as they are, e.g.
#   benchmarks/tuning_under_load.sh build/release -- --onnx resnet50.onnx --input x.npy --backend blas --threads 2
set -euo pipefail

processes=8
if [[ ${1:-} == --processes ]]; then
  processes=$2
  shift 2
fi
if [[ $# -lt 2 || $2 != -- ]]; then
  echo "usage: benchmarks/tuning_under_load.sh [--processes N] BUILD -- MODEL_BENCHMARK_ARGS..." >&2
  exit 2
fi
build=$1
shift 2
work=$(mktemp -d /tmp/corgy-tuning-under-load.XXXXXX)
busy_cpu=$(($(nproc) - 1))
# Bounded: the loop stops by itself after ten minutes should this script be killed before it stops the loop.
taskset -c "$busy_cpu" bash -c 'end=$((SECONDS + 600)); while ((SECONDS < end)); do :; done' &
busy=$!
trap 'kill $busy 2>/dev/null; rm -rf -- "$work"' EXIT
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs); busy loop on CPU $busy_cpu; load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((i = 1; i <= processes; ++i)); do
  "$build/benchmarks/model_benchmark" "$@" --tuning-cache "$work/tuning.jsonl" >"$work/run.json" 2>/dev/null
  /usr/bin/python3 - "$i" "$work/run.json" "$work/tuning.jsonl" <<'EOF'
import collections
import json
import sys

run = json.load(open(sys.argv[2]))
lines = [json.loads(line) for line in open(sys.argv[3]).readlines()[1:]]
choices = [line for line in lines if "key" in line]
agreed = sorted(collections.Counter(c["agreed"] for c in choices).items())
measured = sorted(collections.Counter(c.get("measured", c["agreed"]) for c in choices).items())
print(f"process {sys.argv[1]}: median {run['median_ms']:.1f} ms, first forward {run['first_ms']:.0f} ms; "
      f"{len(choices)} choices, agreed {agreed}, measured {measured}")
EOF
done
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
