// Plan-time tuning of the Vulkan backend's convolutions, as cudnn.benchmark and MIOpen's find step do: the first
// time a forward meets a convolution shape (per precision and input storage), the plans that fit the layer and the
// device are described like any operation and taken out of the forward; when the whole forward is described (every
// layer's candidate pipelines compiling side by side), they are timed on the device with GPU timestamps, on the
// layer's own buffers, and the fastest takes its place in the forward before it runs; the fastest is kept for the
// backend's life and in the tuning cache file (tuning_cache.h), so that the next process plans the same shape without
// timing. The static tables (conv_plan.cpp, direct_conv.cpp, winograd_conv.cpp, patch_coopmat_conv.cpp) give the first
// candidate and are what runs when tuning is off (VulkanConvolutionOptions::tuning) or any part of the plan is forced.
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

  /// Records `conv` (and `pool`, or null; `residual`: a residual connection added to its output) into the forward
  /// with the plan chosen for its shape, and says where that plan came from: VulkanOptions::convolution when tuning
  /// is off, else the choice made before for this shape, the cache file's (when it is one of the candidates), or
  /// the fastest candidate. `record` describes the convolution as a plan says. A shape met for the first time has
  /// every candidate described at once (their pipelines start compiling beside the rest of the forward's) and runs
  /// the first candidate that describes until finish_forward has timed them; the profile notes the source.
  PlanSource record(const Conv2dDesc& conv, const Pool2dDesc* pool, bool residual, const Variable& input,
                    const Shape& output, const std::function<void(const VulkanConvolutionOptions&)>& record);

  /// A forward starts: what an abandoned one left untimed is forgotten (its shapes are tuned when next met).
  void begin_forward();

  /// Before the forward runs: times the candidates of every shape met for the first time in it, puts each such
  /// layer's fastest plan in place of the one it was described with, and writes what was measured to the cache
  /// file. Timing them together at the end, not layer by layer, lets every layer's pipelines compile side by side:
  /// a layer's timing waits only for its own, and the later layers' compile meanwhile.
  void finish_forward();

 private:
  // One candidate plan of a layer, described on that layer's buffers and taken out of the forward.
  struct DescribedPlan {
    VulkanConvolutionOptions options;
    std::vector<Dispatch> dispatches;
    std::vector<VkDeviceSize> scratch_needs;  // what its dispatches alone ask of the recorder's scratch buffers
    bool runs = true;                         // false: the description threw (a dispatch over the device's limits)
  };
  // A layer whose shape is being tuned in this forward: its dispatches [begin, end) in the forward are the
  // placeholder plan's until finish_forward puts the fastest plan there.
  struct PendingLayer {
    std::size_t shape = 0;  // index into pending_shapes_
    std::size_t begin = 0;
    std::size_t end = 0;
    std::size_t placeholder = 0;
    std::vector<DescribedPlan> plans;
  };
  struct PendingShape {
    ConvShapeKey shape;
    std::string key;  // the cache file's
  };

  void describe_pending(std::size_t shape, const std::vector<VulkanConvolutionOptions>& candidates,
                        const std::function<void(const VulkanConvolutionOptions&)>& record);
  // The index of the fastest of `plans` (those that run), with its time.
  std::size_t fastest(std::vector<DescribedPlan>& plans, const std::vector<VkDeviceSize>& base_needs, double& best_ms);
  void note_source(PlanSource source);
  TuningCache& cache();

  Runtime& runtime_;
  std::unique_ptr<DispatchTimer> timer_;
  std::unique_ptr<TuningCache> cache_;
  std::unordered_map<ConvShapeKey, std::pair<VulkanConvolutionOptions, PlanSource>, ConvShapeKeyHash> chosen_;
  std::vector<PendingShape> pending_shapes_;
  std::unordered_map<ConvShapeKey, std::size_t, ConvShapeKeyHash> pending_index_;
  std::vector<PendingLayer> pending_layers_;
};

}  // namespace corgy::vulkan
