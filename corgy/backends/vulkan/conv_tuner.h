// Plan-time tuning of the Vulkan backend's convolutions, as cudnn.benchmark and MIOpen's find step do: the first
// time a forward meets a convolution shape (per precision and input storage), the plans that fit the layer and the
// device are described like any operation, taken out of the forward and timed on the device with GPU timestamps,
// on the layer's own buffers; the fastest is kept for the backend's life and in the tuning cache file
// (tuning_cache.h), so that the next process plans the same shape without timing. The static tables
// (conv_plan.cpp, direct_conv.cpp, winograd_conv.cpp, patch_coopmat_conv.cpp) give the first candidate and are
// what runs when tuning is off (VulkanConvolutionOptions::tuning) or any part of the plan is forced.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "corgy/backend.h"
#include "corgy/backends/vulkan/dispatch_timer.h"
#include "corgy/backends/vulkan/tuning_cache.h"
#include "corgy/backends/vulkan/vulkan_backend.h"

namespace corgy::vulkan {

struct Runtime;

/// Where a convolution's plan came from; the profile says it after the plan (" [tuned]", " [tuning cache]").
enum class PlanSource { static_table, timed, cached };

/// The convolution plans worth timing for `conv` (with `pool` after it, null for none) on an input of `input` shape
/// into `output` (the pooled tensor when there is a pool), each a VulkanConvolutionOptions that forces it: the static
/// table's choice first, then the direct, patch cooperative-matrix and Winograd kernels where they run, then the GEMM
/// tile shapes with their splits of K in the order the table rates them; at most 8.
std::vector<VulkanConvolutionOptions> conv_candidates(const Runtime& runtime, const Conv2dDesc& conv,
                                                      const Pool2dDesc* pool, bool residual, const Shape& input,
                                                      const Shape& output);

/// Whether `a` and `b` force the same plan (algorithm, tile shapes, split of K, the residual's add fused or not).
bool same_plan(const VulkanConvolutionOptions& a, const VulkanConvolutionOptions& b);

/// The identity of this runtime's device for the tuning cache.
TuningIdentity tuning_identity(const Runtime& runtime);

/// What a convolution's plan is chosen for, as numbers: precision, input storage, geometry, input shape, the pool
/// after it, a residual added to it. Every forward looks its plan up by this (formatting the file's text key each time
/// cost 0.1 ms a forward on ResNet-50).
struct ConvShapeKey {
  std::array<int, 25> values{};
  bool operator==(const ConvShapeKey&) const = default;
};
struct ConvShapeKeyHash {
  std::size_t operator()(const ConvShapeKey& key) const;
};

class ConvTuner {
 public:
  explicit ConvTuner(Runtime& runtime);
  ~ConvTuner();
  ConvTuner(const ConvTuner&) = delete;
  ConvTuner& operator=(const ConvTuner&) = delete;

  /// Tuning is on (VulkanConvolutionOptions::tuning; automatic: on devices other than CPUs) and nothing of the
  /// plan is forced (algorithm, tile shapes, split of K, gemm_tiles).
  bool enabled() const;

  /// The plan to record `conv` (and `pool`, or null; `residual`: a residual connection added to its output) with,
  /// and where it came from: VulkanOptions::convolution
  /// when tuning is off, else the choice made before for this key, the cache file's (when it is one of the
  /// candidates), or the fastest candidate, timed now. `record` describes the convolution as a plan says (its
  /// dispatches are added to the forward, from where the tuner takes them).
  std::pair<VulkanConvolutionOptions, PlanSource> choose(
      const Conv2dDesc& conv, const Pool2dDesc* pool, bool residual, const Variable& input, const Shape& output,
      const std::function<void(const VulkanConvolutionOptions&)>& record);

  /// Writes the plans measured since the last save to the cache file (end of a forward).
  void save();

 private:
  std::size_t fastest(const std::vector<VulkanConvolutionOptions>& candidates,
                      const std::function<void(const VulkanConvolutionOptions&)>& record, double& best_ms);
  TuningCache& cache();

  Runtime& runtime_;
  std::unique_ptr<DispatchTimer> timer_;
  std::unique_ptr<TuningCache> cache_;
  std::unordered_map<ConvShapeKey, std::pair<VulkanConvolutionOptions, PlanSource>, ConvShapeKeyHash> chosen_;
};

}  // namespace corgy::vulkan
