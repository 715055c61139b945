// Global pooling on Vulkan: the average or maximum of each whole plane by kernels/global_pool.comp, many threads per
// plane (pool2d.comp gives each output one thread, which walks a whole plane alone when the window is the plane).
#pragma once

#include "corgy/backend.h"
#include "corgy/backends/vulkan/dispatch_math.h"
#include "corgy/backends/vulkan/runtime.h"

namespace corgy::vulkan {

/// The window covers each whole plane of `input` with no padding: the output is (N, C, 1, 1).
bool is_global_pool(const Pool2dDesc& desc, const Shape& input);

/// Records output (N, C, 1, 1) = the average or maximum of each plane of input (N, C, H, W).
void record_global_pool(Runtime& runtime, PoolKind kind, const Variable& input, Variable& output);

}  // namespace corgy::vulkan
