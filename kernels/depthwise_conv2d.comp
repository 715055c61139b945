#version 450
// depthwise_conv2d: a convolution whose groups each read one input channel (in_channels == groups), with
// out_channels / groups filters per channel, computed directly with bias and activation fused. Each thread computes
// ROWS output rows of one column: its filter in registers, each input row it needs loaded once for all the output
// rows that read it. The window (KERNEL, STRIDE, DILATION) and ROWS are specialization constants, so the tap loops
// unroll; consecutive threads take consecutive columns (coalesced loads and stores), at any plane size.
#extension GL_GOOGLE_include_directive : require
#include "activation_functions.glsl"
#include "tensor_storage.glsl"

layout(local_size_x = 256) in;

// With fp16 precision, kernels/CMakeLists.txt also builds this as depthwise_conv2d_fp16 (tensor_storage.glsl).
TENSOR_INPUT(0, source, 0)
layout(binding = 1) readonly buffer Weights { float weights[]; };  // (out_channels, 1, KERNEL, KERNEL)
layout(binding = 2) readonly buffer Bias { float bias[]; };
TENSOR_OUTPUT(3, result, 1)

// Mirrors corgy::vulkan::DepthwiseConstant.
layout(constant_id = 2) const uint KERNEL = 3;
layout(constant_id = 3) const uint STRIDE = 1;
layout(constant_id = 4) const uint DILATION = 1;
layout(constant_id = 5) const uint ROWS = 4;

// Mirrors corgy::vulkan::DepthwiseParams.
layout(push_constant) uniform Params {
  uint images;
  uint in_channels;
  uint height;
  uint width;
  uint out_channels;
  uint out_height;
  uint out_width;
  uint padding;
  uint has_bias;
  uint activation;
  float slope;
} p;

// Input rows one thread reads: those of its ROWS output rows' windows.
const uint SPAN = (ROWS - 1) * STRIDE + (KERNEL - 1) * DILATION + 1;

void main() {
  const uint row_blocks = (p.out_height + ROWS - 1) / ROWS;
  const uint total = p.images * p.out_channels * row_blocks * p.out_width;
  const uint filters_per_channel = p.out_channels / p.in_channels;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    const uint ox = i % p.out_width;
    const uint rest = i / p.out_width;
    const uint first_row = (rest % row_blocks) * ROWS;
    const uint out_plane = rest / row_blocks;  // image * out_channels + channel
    const uint channel = out_plane % p.out_channels;
    const uint in_plane = (out_plane / p.out_channels) * p.in_channels + channel / filters_per_channel;

    float filter_taps[KERNEL * KERNEL];
    for (uint t = 0; t < KERNEL * KERNEL; ++t) filter_taps[t] = weights[channel * KERNEL * KERNEL + t];
    float sums[ROWS];
    for (uint r = 0; r < ROWS; ++r) sums[r] = p.has_bias != 0 ? bias[channel] : 0.0;

    const int x0 = int(ox * STRIDE) - int(p.padding);
    const int y0 = int(first_row * STRIDE) - int(p.padding);
    for (uint j = 0; j < SPAN; ++j) {
      const int y = y0 + int(j);
      if (y < 0 || y >= int(p.height)) continue;
      const uint row_start = (in_plane * p.height + uint(y)) * p.width;
      float row[KERNEL];
      for (uint kx = 0; kx < KERNEL; ++kx) {
        const int x = x0 + int(kx * DILATION);
        row[kx] = x >= 0 && x < int(p.width) ? load_source(row_start + uint(x)) : 0.0;
      }
      // Output row r reads input row j through filter row (j - r * STRIDE) / DILATION, where that is a whole row
      // of the filter: known when the loops are unrolled.
      for (uint r = 0; r < ROWS; ++r) {
        const int offset = int(j) - int(r * STRIDE);
        if (offset < 0 || offset % int(DILATION) != 0 || offset / int(DILATION) >= int(KERNEL)) continue;
        const uint ky = uint(offset) / DILATION;
        for (uint kx = 0; kx < KERNEL; ++kx) sums[r] += filter_taps[ky * KERNEL + kx] * row[kx];
      }
    }
    const uint plane_start = out_plane * p.out_height * p.out_width;
    for (uint r = 0; r < ROWS; ++r) {
      const uint oy = first_row + r;
      if (oy < p.out_height) store_result(plane_start + oy * p.out_width + ox, activate(p.activation, p.slope, sums[r]));
    }
  }
}
