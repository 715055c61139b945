#version 450
// conv2d_split_k_reduce: finishes a split-K convolution (conv2d_implicit_gemm.comp or conv2d_coopmat.comp with
// SPLIT_K): adds the partial sums of the K splits, [split][group][M][N] in a scratch buffer, then applies bias,
// activation and the fused max pool, if any, and writes the (N, C, H, W) output. One thread per output value.
// With RESIDUAL (never with POOL) a residual connection is added before the activation (conv2d_add).
#extension GL_GOOGLE_include_directive : require
#include "activation_functions.glsl"
#include "conv_columns.glsl"
#include "tensor_storage.glsl"

layout(constant_id = 0) const bool POOL = false;
layout(constant_id = 2) const bool RESIDUAL = false;
layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer Partials { float partials[]; };
layout(binding = 1) readonly buffer Bias { float bias[]; };
TENSOR_OUTPUT(2, result, 1)
TENSOR_INPUT(3, residual, 3)

// Mirrors corgy::vulkan::SplitKReduceParams.
layout(push_constant) uniform Params {
  uint M;  // output channels per group
  uint N;  // GEMM columns
  uint groups;
  uint splits;
  uint out_channels;
  uint out_height;
  uint out_width;
  uint pool_height;
  uint pool_width;
  uint pool_pad_top;
  uint pool_pad_left;
  uint has_bias;
  uint activation;
  float slope;
} p;

void main() {
  const ConvGeometry g = ConvGeometry(p.out_height, p.out_width, POOL, p.pool_height, p.pool_width,
                                      p.pool_pad_top, p.pool_pad_left);
  const uint cells = POOL ? 4 : 1;
  const uint columns = p.N / cells;  // outputs per channel
  const uint total = p.groups * p.M * columns;
  const uint split_stride = p.groups * p.M * p.N;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    const uint column = i % columns;
    const uint row = i / columns;  // group * M + m = the output channel
    const uint n = column * cells;
    const uint index = conv_output_index(g, p.out_channels, row, n);
    const float shift = (p.has_bias != 0 ? bias[row] : 0.0) + (RESIDUAL ? load_residual(index) : 0.0);
    float value = uintBitsToFloat(0xff800000u);  // -infinity, for the maximum over a pooling window
    for (uint e = 0; e < cells; ++e) {
      if (POOL) {
        uint image;
        int y, x;
        conv_column(g, n + e, image, y, x);
        if (y < 0) continue;
      }
      float sum = 0.0;
      for (uint s = 0; s < p.splits; ++s) sum += partials[s * split_stride + row * p.N + n + e];
      const float activated = activate(p.activation, p.slope, sum + shift);
      value = POOL ? max(value, activated) : activated;
    }
    store_result(index, value);
  }
}
