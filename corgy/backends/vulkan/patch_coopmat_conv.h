// Convolutions on tensor cores over an input patch staged in shared memory
// (conv2d_patch_coopmat.comp): an implicit GEMM whose B fragments are loaded from the patch instead of gathered
// from global memory: for the first layers of a network, where the gather of conv2d_coopmat.comp costs more than
// its arithmetic, and for large images of up to a few hundred channels (VGG-16's 112x112 and 56x56 layers, where
// the tuner picks it). fp16 precision on devices with cooperative matrices only.
#pragma once

#include "corgy/backend.h"
#include "corgy/backends/vulkan/runtime.h"

namespace corgy::vulkan {

/// Whether conv2d_patch_coopmat.comp can compute `conv` on `runtime`: fp16 precision on a device with cooperative
/// matrices, one group, and a patch (the input under 8 x 32 output pixels, 16 channels) that fits the device's shared
/// memory with the epilogue's scratch. Input channels go through the patch 16 at a time, any number of them.
bool patch_coopmat_fits(const Runtime& runtime, const Conv2dDesc& conv);

/// Whether `conv` runs conv2d_patch_coopmat.comp with `options`: when forced (corgy::Error if it does not fit), or
/// when automatic with no tile shape forced, where it fits and has at most 16 input channels
/// (patch_coopmat_conv.cpp says why); the backend asks the direct kernel first (direct_conv_chosen).
bool patch_coopmat_chosen(const Runtime& runtime, const Conv2dDesc& conv, const VulkanConvolutionOptions& options);

/// Records `conv` (and `fused_pool`, a pool_fusable() one, when given: output is then the pooled tensor).
void record_patch_coopmat_conv(Runtime& runtime, const Conv2dDesc& conv, const Pool2dDesc* fused_pool,
                               const Variable& input, const Variable& weights, const Variable* bias, Variable& output);

}  // namespace corgy::vulkan
