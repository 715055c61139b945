// Helpers shared by the tests: random tensors, random layer weights, and the comparison every parity test uses.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <string_view>

#include "corgy/backends/cpu/cpu_features.h"
#include "corgy/backends/naive/naive_backend.h"
#include "corgy/corgy.h"

namespace corgy::testing {

#ifndef CORGY_TESTS_SANITIZED
#define CORGY_TESTS_SANITIZED 0
#endif

/// Whether the tests that sweep many cases through the Vulkan backend (the layer harness, the convolution and tuning
/// sweeps, the fusion tests, whole networks) turn the validation layer on. Off in the sanitized build (CORGY_SANITIZE
/// defines CORGY_TESTS_SANITIZED): it makes the same Vulkan calls as the Release build, whose run checks every one of
/// them with the layer, and under AddressSanitizer the layer's own allocations were 40% of those tests' time. The
/// tests of the validation plumbing itself (vulkan_backend_test, vulkan_fault_test, ...) keep it on in every build.
inline constexpr bool kSweepValidation = !CORGY_TESTS_SANITIZED;

/// Uniform values in [-scale, scale].
Variable random_variable(Shape shape, std::mt19937& rng, float scale = 1.0f);
void fill_random(Variable& tensor, std::mt19937& rng, float scale);

/// Gives every Conv2d, ConvTranspose2d, Linear, BatchNorm, ChannelAffine, PReLU, InstanceNorm and
/// ConditionalInstanceNorm (gamma, beta and style mix) of `model` random parameters (weights scaled by 1/sqrt(fan-in)
/// so that activations stay of order one through several layers).
void randomize_parameters(Sequential& model, std::mt19937& rng);

/// max |actual - expected| / max(max |expected|, 1e-6): the error relative to the output's magnitude.
double max_relative_error(const Variable& actual, const Variable& expected);

/// Passes when shapes match and max_relative_error <= tolerance; otherwise says where the worst element is.
::testing::AssertionResult outputs_match(const Variable& actual, const Variable& expected, double tolerance = 1e-4);

/// The instruction sets this CPU runs, narrowest first: the kernel tests run each set's kernels.
std::vector<CpuIsa> isas_of_this_cpu();

/// Every backend built in, naive included.
std::vector<std::string> all_backends();

/// Path of a file under tests/fixtures.
std::string fixture_path(const std::string& relative);

/// The message of the corgy::Error that `body` throws, or "(no error)" when it throws none.
std::string error_of(const std::function<void()>& body);

/// Whether `text` contains `part` (an error message its expected words).
bool contains(std::string_view text, std::string_view part);

/// A folder of its own for the running test (under the temporary folder, named after the test and the process),
/// made empty at construction and removed with everything in it at destruction.
class TempFolder {
 public:
  TempFolder();
  ~TempFolder();
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// The bytes of `file` (empty when it cannot be read), and writing `text` as the whole of `file`.
std::string read_text(const std::filesystem::path& file);
void write_text(const std::filesystem::path& file, const std::string& text);

}  // namespace corgy::testing
