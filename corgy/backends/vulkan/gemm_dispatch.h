// Dispatching gemm_tiled.comp: the tile shapes it is built with, the choice among them, and the dispatch.
#pragma once

#include <cstdint>
#include <span>

#include "corgy/backends/vulkan/runtime.h"

namespace corgy::vulkan {

/// The shapes the automatic choice picks from, each with its speed once the GPU is busy relative to the
/// fastest (measured on an H200, docs/benchmarks.md); smaller tiles give small problems more workgroups.
struct RatedTiles {
  VulkanGemmTiles tiles;
  double speed;
};
std::span<const RatedTiles> gemm_tile_choices();

/// One batched GEMM: C = activation(op(A) x op(B) + bias); see gemm_tiled.comp for the batch strides.
struct GemmCall {
  BufferUse a, b, c, bias;
  bool a_transposed = false;
  bool b_transposed = false;
  GemmParams params{};
  std::uint32_t images = 1;
};

/// The tile shape for an M x N problem with `batch` matrices: the one that wastes least on ragged edges while
/// giving a large GPU enough workgroups, among those that fit the device.
VulkanGemmTiles choose_gemm_tiles(std::uint32_t m, std::uint32_t n, std::uint32_t batch,
                                  const VkPhysicalDeviceLimits& limits);

/// Throws corgy::Error saying which rule a forced shape breaks.
void check_gemm_tiles(const VulkanGemmTiles& tiles, const VkPhysicalDeviceLimits& limits);

/// Records gemm_tiled.comp for `call`, with VulkanOptions::gemm_tiles or the chosen tile shape; returns the shape.
VulkanGemmTiles record_gemm(Runtime& runtime, const GemmCall& call);

}  // namespace corgy::vulkan
