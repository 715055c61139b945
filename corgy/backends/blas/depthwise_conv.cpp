#include "corgy/backends/blas/depthwise_conv.h"

#include <algorithm>
#include <cstddef>

#include "corgy/backends/blas/fused_activation.h"
#include "corgy/backends/blas/im2col.h"

namespace corgy::blas {

namespace {

/// output += weight * input shifted by one kernel tap, over the output pixels where the tap reads real input.
void accumulate_tap(const float* input, const Shape& in_shape, const Conv2dDesc& desc, float weight, int y_offset,
                    int x_offset, const Shape& out_shape, float* output) {
  const ValidRange rows = valid_outputs(y_offset, desc.stride, in_shape.h, out_shape.h);
  const ValidRange cols = valid_outputs(x_offset, desc.stride, in_shape.w, out_shape.w);
  for (int oy = rows.begin; oy < rows.end; ++oy) {
    const float* source = input + static_cast<std::size_t>(oy * desc.stride + y_offset) * in_shape.w;
    float* target = output + static_cast<std::size_t>(oy) * out_shape.w;
    for (int ox = cols.begin; ox < cols.end; ++ox) target[ox] += weight * source[ox * desc.stride + x_offset];
  }
}

}  // namespace

void depthwise_conv2d_plane(const Conv2dDesc& desc, const Shape& in_shape, const float* input, const float* weights,
                            const float* bias, const Shape& out_shape, float* output, std::size_t plane) {
  const int taps = desc.kernel * desc.kernel;
  const std::size_t out_plane_size = out_shape.plane_count();
  // Input and output planes pair up one to one, so the same (image, channel) index addresses both.
  const int channel = static_cast<int>(plane % out_shape.c);
  const float* source = input + plane * in_shape.plane_count();
  float* target = output + plane * out_plane_size;
  std::fill(target, target + out_plane_size, 0.0f);
  for (int tap = 0; tap < taps; ++tap) {
    const int y_offset = tap / desc.kernel * desc.dilation - desc.padding;
    const int x_offset = tap % desc.kernel * desc.dilation - desc.padding;
    accumulate_tap(source, in_shape, desc, weights[channel * taps + tap], y_offset, x_offset, out_shape, target);
  }
  const float channel_bias = bias ? bias[channel] : 0.0f;
  with_activation(desc.activation,
                  [&](const auto& activate) { add_bias_and_activate(target, out_plane_size, channel_bias, activate); });
}

}  // namespace corgy::blas
