// What every fuzz target shares: the CORGY_FUZZ_TARGET macro, the limits the targets load with, and scratch files.
//
// A target is one function over the input bytes. Built with -DCORGY_FUZZ_MAIN (tests/fuzz/CMakeLists.txt, clang
// and libFuzzer) the macro makes it LLVMFuzzerTestOneInput; built into tests/fuzz_replay_test (GCC, the normal test
// build, ASan/UBSan in CI) it registers the function under its name so that the test replays the committed corpus
// and regression inputs through the very same code.
//
// A target catches corgy::Error, the one exception the library may throw for bad input. Anything else (another
// exception, a crash, a sanitizer report, a hang, an allocation beyond libFuzzer's -rss_limit_mb) is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "corgy/io/load_limits.h"
#include "corgy/variable.h"

namespace corgy::fuzz {

using Input = std::span<const std::uint8_t>;
using Target = std::function<void(Input)>;

/// Registered targets by name (the replay test's view of them).
std::map<std::string, Target>& targets();
bool register_target(const std::string& name, Target target);

/// Limits small enough that no input can make a target allocate more than libFuzzer's memory limit allows, large
/// enough for every seed (the largest real tensor in the corpus is the face detector's 256x256x3x3 kernel, 2.3 MiB).
inline constexpr LoadLimits limits{.max_tensor_bytes = std::uint64_t{16} << 20,
                                   .max_model_bytes = std::uint64_t{64} << 20};

/// A folder of this process's own under the temporary directory, removed at exit.
const std::string& scratch_folder();
/// Writes `bytes` to scratch_folder()/name and returns its path.
std::string write_scratch_file(const std::string& name, std::span<const std::uint8_t> bytes);

/// Aborts (a finding) unless `actual` has `reference`'s shape and the same values to 1e-3 of the reference's largest
/// finite magnitude (the backends may order their sums differently), plus 1e-5 of `largest_intermediate`: the
/// largest value any layer of the forward computed, whose rounding reaches the output when a later layer cancels it
/// (fuzzed weights of 4e9 give sums of 7e8 that a ReLU cuts to 1.5). Elements that are not finite in either are
/// skipped. Used by the targets that run a model on the naive and the blas backend.
void check_backends_agree(const Variable& reference, const Variable& actual, float largest_intermediate = 0.0f);

inline std::string_view as_text(Input input) { return {reinterpret_cast<const char*>(input.data()), input.size()}; }
inline std::span<const std::byte> as_bytes(Input input) {
  return {reinterpret_cast<const std::byte*>(input.data()), input.size()};
}

}  // namespace corgy::fuzz

#if defined(CORGY_FUZZ_MAIN)
#define CORGY_FUZZ_TARGET(name)                                                       \
  static void fuzz_##name(corgy::fuzz::Input input);                                  \
  extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) { \
    fuzz_##name(corgy::fuzz::Input(data, size));                                      \
    return 0;                                                                         \
  }                                                                                   \
  static void fuzz_##name(corgy::fuzz::Input input)
#else
#define CORGY_FUZZ_TARGET(name)                                                                                   \
  static void fuzz_##name(corgy::fuzz::Input input);                                                              \
  [[maybe_unused]] static const bool fuzz_##name##_registered = corgy::fuzz::register_target(#name, fuzz_##name); \
  static void fuzz_##name(corgy::fuzz::Input input)
#endif
