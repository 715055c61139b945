// LoadLimits: how much memory a file may make a loader allocate. Files come from the internet; a header that
// claims a terabyte must get a clear corgy::Error, before anything is allocated, not take the machine down.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace corgy {

/// Limits every loader checks against the sizes a file declares, before it allocates anything:
///
///   corgy::load_npy("big.npy", {.max_tensor_bytes = std::uint64_t{8} << 30});   // allow one 8 GiB array
///   corgy::load_darknet(cfg, weights, {.limits = {.max_model_bytes = std::uint64_t{16} << 30}});
///
/// Sizes are counted as corgy stores them: float32, 4 bytes per value (a uint8 image pixel or a quantized
/// TensorFlow.js weight counts 4 bytes too, since it becomes a float). A size over a limit throws corgy::Error
/// naming the file, what it holds, the size and the limit.
struct LoadLimits {
  /// The largest single tensor a file may declare: an .npy array, an IDX image set, a decoded image, one weight
  /// tensor, and for a darknet cfg the network input and each layer's output at the cfg's input size (batch 1).
  /// Default 1 GiB: VGG-16's largest weight (25088 x 4096) takes 392 MiB.
  std::uint64_t max_tensor_bytes = std::uint64_t{1} << 30;
  /// The largest total of the weights one model file may declare (all tensors of a TensorFlow.js manifest, all
  /// weights of a darknet cfg), and the largest text of a manifest. Default 4 GiB.
  std::uint64_t max_model_bytes = std::uint64_t{4} << 30;
};

/// Bytes of `count` float32 values whose dimensions are `dims`, saturating at UINT64_MAX instead of overflowing,
/// so that any product too large to represent is also over every limit. Negative dimensions count as 0.
std::uint64_t float32_bytes(std::span<const std::int64_t> dims);
std::uint64_t float32_bytes(std::initializer_list<std::int64_t> dims);

/// Throws corgy::Error "<source>: <what>: <bytes> bytes (...), more than LoadLimits::max_tensor_bytes (<limit>)"
/// when `bytes` is over the tensor limit. For loaders, before they allocate. An empty `source` leaves out
/// "<source>: " (for callers that add the file and line themselves).
void check_tensor_bytes(const LoadLimits& limits, std::string_view source, std::string_view what, std::uint64_t bytes);

/// Adds up the weights a loader is about to create for one model and throws corgy::Error (as check_tensor_bytes
/// does, naming LoadLimits::max_model_bytes and the running total) when a tensor or the total is over its limit.
class ModelBytes {
 public:
  ModelBytes(const LoadLimits& limits, std::string source) : limits_(limits), source_(std::move(source)) {}
  /// Checks `bytes` for the tensor `what`, then the total with it.
  void add(std::string_view what, std::uint64_t bytes);
  std::uint64_t total() const { return total_; }

 private:
  LoadLimits limits_;
  std::string source_;
  std::uint64_t total_ = 0;
};

}  // namespace corgy
