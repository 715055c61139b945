// The guard of the Vulkan convolution kernels that read a convolution's scalar window (Conv2dDesc's kernel, stride,
// padding, dilation): every shader but im2col.comp bakes one kernel size, stride and pad into both axes.
#pragma once

#include <fmt/format.h>

#include <string_view>

#include "corgy/backend.h"
#include "corgy/error.h"

namespace corgy::vulkan {

/// Throws corgy::Error when `d` has a general window (VulkanBackend::conv2d sends those to im2col + GEMM, so this
/// only fires on a dispatch bug).
inline void require_square_window(const Conv2dDesc& d, std::string_view kernel) {
  if (d.is_square()) return;
  const Conv2dWindow& w = *d.general;
  throw Error(
      fmt::format("Vulkan: {} takes square windows with equal pads; this convolution's is {}x{}, stride ({}, "
                  "{}), dilation ({}, {}), pads ({}, {}, {}, {})",
                  kernel, w.kernel_h, w.kernel_w, w.stride_h, w.stride_w, w.dilation_h, w.dilation_w, w.pad_top,
                  w.pad_left, w.pad_bottom, w.pad_right));
}

}  // namespace corgy::vulkan
