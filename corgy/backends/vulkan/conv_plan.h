// How a convolution runs on Vulkan: the algorithm, the tile shape and the split of K, chosen once per layer and
// input shape from a short table of tile shapes rated on a GPU (docs/benchmarks.md), or forced by
// VulkanOptions::convolution.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "corgy/backend.h"
#include "corgy/backends/vulkan/vulkan_backend.h"
#include "corgy/backends/vulkan/vulkan_loader.h"

namespace corgy::vulkan {

/// A convolution as the implicit GEMM sees it: C (m x n) = A (m x k) x B (k x n) for each of `groups` groups.
struct ConvProblem {
  std::uint32_t m = 0;  // output channels per group
  std::uint32_t n = 0;  // columns: every output pixel of every image (4 per pooled pixel when a pool is fused)
  std::uint32_t k = 0;  // input channels per group * kernel * kernel
  std::uint32_t groups = 1;
};

/// What the device can do, as far as the choice is concerned.
struct ConvDevice {
  const VkPhysicalDeviceLimits* limits = nullptr;
  bool cooperative_matrix = false;  // fp16 precision on a device with tensor cores through VK_NV_cooperative_matrix
};

struct ConvPlan {
  VulkanConvAlgorithm algorithm = VulkanConvAlgorithm::implicit_gemm;
  VulkanGemmTiles tiles{};             // implicit_gemm
  VulkanCoopmatTiles coopmat_tiles{};  // cooperative_matrix
  std::uint32_t splits = 1;            // parts of K, each a multiple of the tile's K step
  std::uint32_t k_per_split = 0;

  std::uint32_t tile_m() const;
  std::uint32_t tile_n() const;
  std::uint32_t tile_k() const;
  /// "64x128x16/4x8", "coopmat 128x128x32 (2x4 warps)", with " split 4" when K is split.
  std::string describe() const;
};

/// The plan for `problem`: the forced parts of `options` as given (checked against the kernels' rules and the
/// device's limits; corgy::Error when they do not fit), the rest chosen.
ConvPlan plan_convolution(const ConvProblem& problem, const VulkanConvolutionOptions& options,
                          const ConvDevice& device);

/// Every plan plan_convolution considers for `problem` (each tile shape that fits the device, or the forced one,
/// with the split of K that is forced or that the estimate favours), the one with the highest estimated speed
/// first: plan_convolution's choice, then the ones the table rates next (the tuner's GEMM candidates).
std::vector<ConvPlan> ranked_convolution_plans(const ConvProblem& problem, const VulkanConvolutionOptions& options,
                                               const ConvDevice& device);

/// Throws corgy::Error saying which rule a conv2d_coopmat.comp tile breaks.
void check_coopmat_tiles(const VulkanCoopmatTiles& tiles, const VkPhysicalDeviceLimits& limits);

/// The tile shapes plan_convolution picks from, with their speed relative to the fastest of their kind.
struct RatedConvTiles {
  VulkanGemmTiles tiles;
  double speed;
};
struct RatedCoopmatTiles {
  VulkanCoopmatTiles tiles;
  double speed;
};
std::span<const RatedConvTiles> implicit_gemm_tile_choices();
std::span<const RatedCoopmatTiles> coopmat_tile_choices();

}  // namespace corgy::vulkan
