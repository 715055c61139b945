#include "corgy/backends/vulkan/staged_patch.h"

#include "corgy/backends/vulkan/dispatch_math.h"
#include "corgy/backends/vulkan/square_window.h"

namespace corgy::vulkan {

std::uint64_t patch_extent(const Conv2dDesc& conv, std::uint64_t pixels) {
  return (pixels - 1) * static_cast<std::uint64_t>(conv.stride) +
         static_cast<std::uint64_t>(conv.kernel - 1) * static_cast<std::uint64_t>(conv.dilation) + 1;
}

PatchConvParams patch_conv_params(const Conv2dDesc& conv, const Pool2dDesc* fused_pool, const Shape& in,
                                  const Shape& out, bool has_bias) {
  require_square_window(conv, "the direct and patch convolutions");
  const bool pool = fused_pool != nullptr;
  PatchConvParams p{};
  p.in_channels = u32(conv.in_channels);
  p.height = u32(in.h);
  p.width = u32(in.w);
  p.out_channels = u32(conv.out_channels);
  p.out_height = u32(conv.output_size(in.h));
  p.out_width = u32(conv.output_size(in.w));
  p.cells_height = pool ? u32(out.h) : ceil_div(p.out_height, 2);
  p.cells_width = pool ? u32(out.w) : ceil_div(p.out_width, 2);
  p.cell_top = pool ? u32(fused_pool->pad_top) : 0;
  p.cell_left = pool ? u32(fused_pool->pad_left) : 0;
  p.padding = u32(conv.padding);
  p.has_bias = has_bias ? 1 : 0;
  p.activation = activation_kind(conv.activation);
  p.slope = conv.activation.slope;
  return p;
}

}  // namespace corgy::vulkan
