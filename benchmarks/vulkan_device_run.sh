#!/usr/bin/env bash
# Runs the Vulkan tests and vulkan_benchmark on a machine with a GPU, from a folder of prebuilt binaries:
#   <folder>/bin/  layer_harness_test vulkan_backend_test vulkan_model_test vulkan_benchmark
#   <folder>/lib/  libcorgy.so*
#   <folder>/debs/ optional .deb files unpacked into / first (the validation layer, where it is not installed)
#   <folder>/runtime-debs/ optional libraries unpacked under /tmp/rt only where the system lacks them (libgomp)
# Usage, from the project root: benchmarks/vulkan_device_run.sh <folder> [benchmark arguments...]
# Logs go to $OUT (or /tmp): one per test program, and vulkan_benchmark.txt. docs/vulkan.md shows how it was run.
set -uo pipefail
folder=$1
shift
logs=${OUT:-/tmp}
for deb in "$folder"/debs/*.deb; do [ -e "$deb" ] && dpkg -x "$deb" /; done
ldconfig
for deb in "$folder"/runtime-debs/*.deb; do
  library=$(basename "$deb" | cut -d_ -f1 | sed 's/[0-9]*$//')
  [ -e "$deb" ] && ! ldconfig -p | grep -q "$library" && dpkg -x "$deb" /tmp/rt
done
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/tmp/rt/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$PWD/$folder/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
vulkaninfo --summary 2>/dev/null | grep -E "deviceName|driverName|driverInfo|apiVersion|deviceType" | head -12
status=0
for test in vulkan_backend_test vulkan_model_test layer_harness_test; do
  echo "== $test"
  "$folder/bin/$test" --gtest_brief=1 >"$logs/$test.log" 2>&1 || status=1
  grep -vE '^(Running main|\[==========\] Running|\[----------\] Global)' "$logs/$test.log" | tail -20
done
"$folder/bin/vulkan_benchmark" "$@" 2>&1 | tee "$logs/vulkan_benchmark.txt"
exit $status
