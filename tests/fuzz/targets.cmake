# The fuzz targets: tests/fuzz/fuzz_<name>.cpp each, with seeds in tests/fuzz/corpus/<name>/ and the inputs of past
# findings in tests/fuzz/regressions/<name>/. Used by tests/fuzz/CMakeLists.txt (libFuzzer executables, clang) and
# tests/CMakeLists.txt (fuzz_replay_test, which replays every committed input in the normal test build).
set(CORGY_FUZZ_TARGETS darknet_cfg darknet_weights darknet_forward tfjs_manifest npy idx raw_weights image onnx tuning_cache)
