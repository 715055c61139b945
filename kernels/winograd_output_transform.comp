#version 450
// winograd_output_transform: the output side of Winograd's F(2x2, 3x3) (corgy/backends/vulkan/winograd_conv.cpp).
// The 16 GEMMs left, for each output channel and tile, 16 values m (products[(t * out_channels + channel) *
// tiles_pitch + tile], t = 4 i + j); the tile's 2x2 output pixels are Y = A^T m A, to which this adds the bias and
// applies the activation. Pixels beyond the output (odd sizes) are not written. With POOL, a 2x2 stride-2 max
// pool whose windows are the tiles (no padding at the top or left) is applied too: the tile's largest pixel goes
// to pooled cell (ty, tx) when the pooled output has it. With RESIDUAL (never with POOL) a residual connection is
// added to each pixel before the activation (conv2d_add).
//
//  A^T = | 1  1  1  0 |
//        | 0  1 -1 -1 |
// Built also as winograd_output_transform_fp16 (TENSOR_FP16): the output may be fp16; the products are fp32.
#extension GL_GOOGLE_include_directive : require
#include "activation_functions.glsl"
#include "tensor_storage.glsl"

layout(local_size_x = 256) in;

layout(constant_id = 0) const bool POOL = false;
layout(constant_id = 1) const bool RESIDUAL = false;

layout(binding = 0) readonly buffer Products { float products[]; };
layout(binding = 1) readonly buffer Bias { float bias[]; };
TENSOR_OUTPUT(2, result, 11)
TENSOR_INPUT(3, residual, 12)

// Mirrors corgy::vulkan::WinogradOutputParams.
layout(push_constant) uniform Params {
  uint out_channels;
  uint out_height;  // the convolution's output
  uint out_width;
  uint tiles_h;
  uint tiles_w;
  uint tiles;  // images * tiles_h * tiles_w
  uint tiles_pitch;
  uint pool_height;  // POOL: the pooled output
  uint pool_width;
  uint has_bias;
  uint activation;
  float slope;
} p;

void main() {
  const uint total = p.out_channels * p.tiles;
  const uint plane_tiles = p.tiles_h * p.tiles_w;
  const uint matrix = p.out_channels * p.tiles_pitch;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    const uint tile = i % p.tiles;
    const uint channel = i / p.tiles;
    const uint base = channel * p.tiles_pitch + tile;
    float m[4][4];
    for (uint r = 0; r < 4; ++r) {
      for (uint c = 0; c < 4; ++c) m[r][c] = products[(4 * r + c) * matrix + base];
    }
    // A^T m (2 x 4), then (A^T m) A (2 x 2).
    float am[2][4];
    for (uint c = 0; c < 4; ++c) {
      am[0][c] = m[0][c] + m[1][c] + m[2][c];
      am[1][c] = m[1][c] - m[2][c] - m[3][c];
    }
    const float shift = p.has_bias != 0 ? bias[channel] : 0.0;
    // Before the activation, which the pool's maximum and the residual's add come ahead of.
    float y[2][2];
    for (uint r = 0; r < 2; ++r) {
      y[r][0] = am[r][0] + am[r][1] + am[r][2] + shift;
      y[r][1] = am[r][1] - am[r][2] - am[r][3] + shift;
    }
    const uint image = tile / plane_tiles;
    const uint in_plane = tile - image * plane_tiles;
    const uint ty = in_plane / p.tiles_w;
    const uint tx = in_plane - ty * p.tiles_w;
    if (POOL) {
      if (ty >= p.pool_height || tx >= p.pool_width) continue;
      // (2 ty, 2 tx) is always inside the convolution's output
      float largest = activate(p.activation, p.slope, y[0][0]);
      if (2 * tx + 1 < p.out_width) largest = max(largest, activate(p.activation, p.slope, y[0][1]));
      if (2 * ty + 1 < p.out_height) {
        largest = max(largest, activate(p.activation, p.slope, y[1][0]));
        if (2 * tx + 1 < p.out_width) largest = max(largest, activate(p.activation, p.slope, y[1][1]));
      }
      store_result(((image * p.out_channels + channel) * p.pool_height + ty) * p.pool_width + tx, largest);
      continue;
    }
    const uint plane = (image * p.out_channels + channel) * p.out_height * p.out_width;
    for (uint r = 0; r < 2; ++r) {
      const uint row = 2 * ty + r;
      if (row >= p.out_height) continue;
      for (uint c = 0; c < 2 && 2 * tx + c < p.out_width; ++c) {
        const uint index = plane + row * p.out_width + 2 * tx + c;
        const float added = RESIDUAL ? load_residual(index) : 0.0;
        store_result(index, activate(p.activation, p.slope, y[r][c] + added));
      }
    }
  }
}
