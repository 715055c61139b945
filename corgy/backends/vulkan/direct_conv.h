// Convolutions with few taps per output computed directly (conv2d_direct.comp): one group, K = in channels *
// kernel * kernel of at most 160, and a stride and dilation small enough that one input channel's patch under a
// workgroup's 32 x 16 pixels fits its 16 KiB of shared memory. The automatic plan takes it for K up to 32, the
// first layer of an RGB network, where an implicit GEMM is gather-bound.
#pragma once

#include "corgy/backend.h"
#include "corgy/backends/vulkan/runtime.h"

namespace corgy::vulkan {

/// Whether conv2d_direct.comp can compute `conv`: one group, K of at most 160, an input patch that fits.
bool direct_conv_fits(const Conv2dDesc& conv);

/// Whether `conv` runs conv2d_direct.comp with `options`: when forced (corgy::Error if it does not fit), or when
/// automatic, K is at most 32 and no GEMM tile shape is forced.
bool direct_conv_chosen(const Conv2dDesc& conv, const VulkanConvolutionOptions& options);

/// Records `conv` (and `fused_pool`, a pool_fusable() one, when given: output is then the pooled tensor).
void record_direct_conv(Runtime& runtime, const Conv2dDesc& conv, const Pool2dDesc* fused_pool, const Variable& input,
                        const Variable& weights, const Variable* bias, Variable& output);

}  // namespace corgy::vulkan
