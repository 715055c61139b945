#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (clang, ASan + UBSan, in build/fuzz) and runs one of them, or all in
# turn, for a while: the long runs that look for new findings. scripts/test.sh runs each briefly instead.
#
# Usage: bash scripts/fuzz.sh NAME|all SECONDS [libFuzzer options...]
#   e.g. nice -n 19 bash scripts/fuzz.sh darknet_cfg 1800
#        bash scripts/fuzz.sh npy 60 -runs=1000000   (stops at whichever comes first)
# Targets: the names in tests/fuzz/targets.cmake. The growing corpus is kept in build/fuzz/corpus/NAME (merged from
# the committed seeds in tests/fuzz/corpus/NAME and tests/fuzz/regressions/NAME); a finding is written to
# build/fuzz/artifacts/ and the script exits non-zero. To keep a finding as a regression test, copy the artifact to
# tests/fuzz/regressions/NAME/ (tests/fuzz_replay_test replays it), then fix the bug it shows.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$CORGY_ROOT"

if [[ $# -lt 2 ]]; then
  sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 2
fi
name=$1
seconds=$2
shift 2

mapfile -t targets < <(sed -n 's/^set(CORGY_FUZZ_TARGETS \(.*\))$/\1/p' tests/fuzz/targets.cmake | tr ' ' '\n')
if [[ $name == all ]]; then
  selected=("${targets[@]}")
elif printf '%s\n' "${targets[@]}" | grep -qx -- "$name"; then
  selected=("$name")
else
  echo "unknown fuzz target '$name'; targets: ${targets[*]} (or all)" >&2
  exit 2
fi

build_fuzz_targets "${selected[@]/#/fuzz_}"
mkdir -p "$CORGY_FUZZ_DIR/artifacts"
status=0
for target in "${selected[@]}"; do
  corpus="$CORGY_FUZZ_DIR/corpus/$target"
  mkdir -p "$corpus"
  banner "fuzz_$target for ${seconds}s (corpus $corpus)"
  run_fuzz_target "$target" "$seconds" "$corpus" "$@" || status=1
done
exit $status
