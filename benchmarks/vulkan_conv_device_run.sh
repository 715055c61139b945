#!/usr/bin/env bash
# On the device tool's GPU machine, in one call: checks the Vulkan backend's every convolution path against the
# naive backend (the Vulkan test programs, fp32 and fp16, the face detector in fp16), then times every plan of
# every Tiny YOLO layer and the models with their per-dispatch profile (vulkan_conv_benchmark). Prebuilt:
#   <folder>/bin/   vulkan_backend_test vulkan_model_test vulkan_convolution_test layer_harness_test
#                   fusion_test face_detector_test vulkan_conv_benchmark
#   <folder>/lib/   libcorgy.so*
#   <folder>/debs/  optional: vulkan-validationlayers (unpacked into /), for the tests' validation layer, unless
#                   the runtime folder of scripts/gpu-runtime.sh brought it
# Usage, from the project root after `source .gl/env.sh` (scripts/gpu-runtime.sh, docs/vulkan.md#on-a-gpu-machine):
#   benchmarks/vulkan_conv_device_run.sh <folder> <source dir compiled into the tests> [benchmark arguments...]
# The tests find their fixtures under the source folder they were built from; it is linked to this checkout.
# Logs go to $OUT (or /tmp); the benchmark's summary is printed last.
set -uo pipefail
folder=$1
built_from=$2
shift 2
logs=${OUT:-/tmp}
for deb in "$folder"/debs/*.deb; do [ -e "$deb" ] && dpkg -x "$deb" /; done
ldconfig
export LD_LIBRARY_PATH=$PWD/$folder/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ ! -e "$built_from" ]; then mkdir -p "$(dirname "$built_from")" && ln -s "$PWD" "$built_from"; fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader
vulkaninfo --summary 2>/dev/null | grep -E "deviceName|driverInfo|apiVersion" | head -6
status=0
# The programs that also test CPU backends run their Vulkan cases only.
for test in vulkan_convolution_test vulkan_backend_test vulkan_model_test layer_harness_test fusion_test \
  face_detector_test; do
  [ -x "$folder/bin/$test" ] || continue
  filter='*'
  case $test in layer_harness_test | fusion_test | face_detector_test) filter='*vulkan*' ;; esac
  start=$(date +%s)
  "$folder/bin/$test" --gtest_brief=1 --gtest_filter="$filter" >"$logs/$test.log" 2>&1 || status=1
  echo "== $test: $(grep -E '^\[  (PASSED|FAILED)' "$logs/$test.log" | tr '\n' ' ') ($(($(date +%s) - start)) s)"
  grep -E "FAILED|Failure|error" "$logs/$test.log" | head -8
done
"$folder/bin/vulkan_conv_benchmark" "$@" >"$logs/vulkan_conv_benchmark.txt" 2>&1 || status=1
# The per-layer tables, then the summary (the call's reply shows the end of the output).
grep -vE '^(variant done|profile|  )' "$logs/vulkan_conv_benchmark.txt" | grep -v '^$' | head -5
sed -n '/===== summary/,$p' "$logs/vulkan_conv_benchmark.txt"
exit $status
