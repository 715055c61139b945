// What the two convolution kernels that stage an input patch in shared memory share (conv2d_direct.comp and
// conv2d_patch_coopmat.comp): the patch's extent and their push constants.
#pragma once

#include <cstdint>

#include "corgy/backend.h"
#include "corgy/backends/vulkan/kernel_params.h"

namespace corgy::vulkan {

/// Input rows (or columns) under `pixels` consecutive output rows (or columns) of `conv`.
std::uint64_t patch_extent(const Conv2dDesc& conv, std::uint64_t pixels);

/// The push constants of `conv` from an input of shape `in` into `out` (the pooled output when `fused_pool` is
/// given), all but channel_blocks, which depends on the kernel.
PatchConvParams patch_conv_params(const Conv2dDesc& conv, const Pool2dDesc* fused_pool, const Shape& in,
                                  const Shape& out, bool has_bias);

}  // namespace corgy::vulkan
