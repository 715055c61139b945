#!/usr/bin/env bash
# Checks that the examples in README.md and docs/*.md are the programs that scripts/test.sh runs (C++: tests/consumer/;
# Python: python/examples/, run by python/tests/test_examples.py).
# A code block is checked when the line before its opening fence is `<!-- example: PATH -->`: the block must equal
# the file PATH (relative to the repository root) line for line.
# Usage: bash scripts/check-doc-examples.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

failed=0
checked=0
for doc in README.md docs/*.md; do  # C++ (tests/consumer) and Python (python/examples) examples
  [[ -f $doc ]] || continue
  while IFS= read -r path; do
    checked=$((checked + 1))
    if [[ ! -f $path ]]; then
      echo "$doc: the example marker names $path, which does not exist" >&2
      failed=1
      continue
    fi
    block=$(awk -v marker="<!-- example: $path -->" '
      $0 == marker { state = 1; next }
      state == 1 && /^```/ { state = 2; next }
      state == 2 && /^```/ { exit }
      state == 2 { print }' "$doc")
    if diff -u --label "$path" --label "$doc (the block after <!-- example: $path -->)" "$path" - <<<"$block"; then
      echo "$doc: example matches $path"
    else
      failed=1
    fi
  done < <(sed -n 's/^<!-- example: \(.*\) -->$/\1/p' "$doc")
done
if [[ $checked -eq 0 ]]; then
  echo "no <!-- example: PATH --> markers found in README.md or docs/*.md" >&2
  failed=1
fi
exit $failed
