#!/usr/bin/env bash
# On a GPU machine, from the repository root, after `source <gpu-runtime folder>/env.sh` (scripts/gpu-runtime.sh):
# unpacks the Python 3.11 of benchmarks/python_device_prepare.sh's FOLDER under /tmp/corgy-python (nothing of the
# machine's own Python is touched), runs the Python package's tests on every backend there (Vulkan on the GPU) and
# the binding benchmark on the Vulkan backend. Logs go to $OUT (or /tmp).
# Usage: benchmarks/python_device_run.sh FOLDER [python_binding.py options...]
set -uo pipefail
folder=$(cd "$1" && pwd)
shift
logs=${OUT:-/tmp}
prefix=/tmp/corgy-python
mkdir -p "$prefix"
for deb in "$folder"/debs/*.deb; do dpkg -x "$deb" "$prefix"; done
export LD_LIBRARY_PATH=$folder/site/corgy:$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$folder/site
python=$prefix/usr/bin/python3.11
"$python" -c "import corgy; print('corgy', corgy.__version__, corgy.backends()); [print(d) for d in corgy.vulkan_devices()]"
status=0
(cd /tmp && "$python" -m pytest -q -p no:cacheprovider "$OLDPWD/python/tests" --corgy-run "$folder/bin/corgy-run") \
  2>&1 | tee "$logs/pytest.log" | tail -15 || status=1
grep -q " passed" "$logs/pytest.log" && ! grep -qE "[0-9]+ (failed|error)" "$logs/pytest.log" || status=1
mkdir -p "$prefix/build/benchmarks"
cp "$folder/bin/model_benchmark" "$prefix/build/benchmarks/"
"$python" benchmarks/python_binding.py --build "$prefix/build" "$@" 2>&1 | tee "$logs/python_binding.txt"
exit $status
