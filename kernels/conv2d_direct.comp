#version 450
// conv2d_direct: a convolution with few taps per output (K = in channels * kernel * kernel of at most 160, one
// group; the backend picks it for K up to 32: the first layer of an RGB network), computed directly. The implicit GEMM spends its time there gathering
// B tiles of K rows for few multiply-adds; here each thread reads its input taps once and multiplies them by
// CHANNELS output channels' weights, which the workgroup keeps in shared memory.
//
// A thread computes four consecutive GEMM columns of conv_columns.glsl (four output pixels, or the four cells of
// a fused 2x2 stride-2 max pool window) for output channels z * CHANNELS .. + CHANNELS - 1 (workgroup z), and
// writes them with bias and activation applied (and the window's maximum with POOL).
#extension GL_EXT_control_flow_attributes : require
#extension GL_GOOGLE_include_directive : require
#include "activation_functions.glsl"
#include "conv_columns.glsl"
#include "tensor_storage.glsl"

// Mirrors corgy::vulkan::DirectConvConstant.
layout(constant_id = 0) const uint CHANNELS = 16;  // output channels per thread
layout(constant_id = 1) const uint TAPS_K = 27;    // K: in channels * kernel * kernel
layout(constant_id = 2) const uint KERNEL_SIZE = 3;
layout(constant_id = 3) const bool POOL = false;
layout(local_size_x_id = 4) in;

TENSOR_INPUT(0, source, 10)
layout(binding = 1) readonly buffer Weights { float weights[]; };
layout(binding = 2) readonly buffer Bias { float bias[]; };
TENSOR_OUTPUT(3, result, 11)

// Mirrors corgy::vulkan::DirectConvParams.
layout(push_constant) uniform Params {
  uint N;  // GEMM columns (conv_columns.glsl)
  uint in_channels;
  uint height;
  uint width;
  uint out_channels;
  uint out_height;
  uint out_width;
  uint pool_height;
  uint pool_width;
  uint pool_pad_top;
  uint pool_pad_left;
  uint stride;
  uint padding;
  uint dilation;
  uint has_bias;
  uint activation;
  float slope;
} p;

const uint TAPS = KERNEL_SIZE * KERNEL_SIZE;
const uint IN_CHANNELS = TAPS_K / TAPS;

// The block's weights, tap-major: w_tile[k * CHANNELS + c] is output channel first_channel + c of tap k.
shared float w_tile[TAPS_K * CHANNELS];

void main() {
  const uint first_channel = gl_WorkGroupID.z * CHANNELS;
  for (uint i = gl_LocalInvocationIndex; i < TAPS_K * CHANNELS; i += gl_WorkGroupSize.x) {
    const uint k = i / CHANNELS;
    const uint c = i - k * CHANNELS;
    const uint channel = first_channel + c;
    w_tile[i] = channel < p.out_channels ? weights[channel * TAPS_K + k] : 0.0;
  }
  barrier();

  const uint thread = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x +
                      gl_LocalInvocationIndex;
  const uint n0 = thread * 4;
  if (n0 >= p.N) return;
  const ConvGeometry g = ConvGeometry(p.out_height, p.out_width, POOL, p.pool_height, p.pool_width,
                                      p.pool_pad_top, p.pool_pad_left);
  const uint plane = p.height * p.width;
  // Each column's first input row and column and its image's offset; a column past N or on the pool's padding
  // gets a row far outside the input, so that it reads nothing.
  int top[4];
  int left[4];
  uint image_offset[4];
  bool used[4];
  [[unroll]] for (uint e = 0; e < 4; ++e) {
    uint image = 0;
    int y = -1;
    int x = 0;
    if (n0 + e < p.N) conv_column(g, n0 + e, image, y, x);
    used[e] = y >= 0;
    top[e] = used[e] ? y * int(p.stride) - int(p.padding) : -(1 << 30);
    left[e] = x * int(p.stride) - int(p.padding);
    image_offset[e] = image * p.in_channels * plane;
  }

  // sums[c][e]: output channel first_channel + c, column n0 + e.
  vec4 sums[CHANNELS];
  [[unroll]] for (uint c = 0; c < CHANNELS; ++c) sums[c] = vec4(0.0);
  // Unrolled along the taps of one input channel; the loop over channels is left to the driver.
  for (uint channel = 0; channel < IN_CHANNELS; ++channel) {
    [[unroll]] for (uint ky = 0; ky < KERNEL_SIZE; ++ky) {
      [[unroll]] for (uint kx = 0; kx < KERNEL_SIZE; ++kx) {
        vec4 taps = vec4(0.0);
        [[unroll]] for (uint e = 0; e < 4; ++e) {
          const int y = top[e] + int(ky * p.dilation);
          const int x = left[e] + int(kx * p.dilation);
          if (uint(y) < p.height && uint(x) < p.width) {
            taps[e] = load_source(image_offset[e] + channel * plane + uint(y) * p.width + uint(x));
          }
        }
        const uint k = (channel * KERNEL_SIZE + ky) * KERNEL_SIZE + kx;
        [[unroll]] for (uint c = 0; c < CHANNELS; ++c) sums[c] += w_tile[k * CHANNELS + c] * taps;
      }
    }
  }

  [[unroll]] for (uint c = 0; c < CHANNELS; ++c) {
    const uint channel = first_channel + c;
    if (channel >= p.out_channels) break;
    const float shift = p.has_bias != 0 ? bias[channel] : 0.0;
    if (POOL) {
      float value = uintBitsToFloat(0xff800000u);  // -infinity
      [[unroll]] for (uint e = 0; e < 4; ++e) {
        if (used[e]) value = max(value, activate(p.activation, p.slope, sums[c][e] + shift));
      }
      store_result(conv_output_index(g, p.out_channels, channel, n0), value);
    } else {
      [[unroll]] for (uint e = 0; e < 4; ++e) {
        if (n0 + e < p.N) {
          store_result(conv_output_index(g, p.out_channels, channel, n0 + e),
                       activate(p.activation, p.slope, sums[c][e] + shift));
        }
      }
    }
  }
}
