#version 450
// depthwise_conv2d: a convolution whose groups each read one input channel (in_channels == groups), with
// out_channels / groups filters per channel, computed directly: one thread per output element, bias and
// activation fused. Cheaper than im2col + a tiny GEMM per channel.
#extension GL_GOOGLE_include_directive : require
#include "activation_functions.glsl"
layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer Input { float input_data[]; };
layout(binding = 1) readonly buffer Weights { float weights[]; };  // (out_channels, 1, kernel, kernel)
layout(binding = 2) readonly buffer Bias { float bias[]; };
layout(binding = 3) writeonly buffer Output { float output_data[]; };

// Mirrors corgy::vulkan::DepthwiseParams.
layout(push_constant) uniform Params {
  uint images;
  uint in_channels;
  uint height;
  uint width;
  uint out_channels;
  uint out_height;
  uint out_width;
  uint kernel_size;
  uint stride;
  uint padding;
  uint dilation;
  uint has_bias;
  uint activation;
  float slope;
} p;

void main() {
  const uint total = p.images * p.out_channels * p.out_height * p.out_width;
  const uint filters_per_channel = p.out_channels / p.in_channels;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    const uint ox = i % p.out_width;
    const uint oy = (i / p.out_width) % p.out_height;
    const uint channel = (i / (p.out_width * p.out_height)) % p.out_channels;
    const uint image = i / (p.out_width * p.out_height * p.out_channels);
    const uint plane = (image * p.in_channels + channel / filters_per_channel) * p.height;
    float sum = p.has_bias != 0 ? bias[channel] : 0.0;
    for (uint ky = 0; ky < p.kernel_size; ++ky) {
      const int y = int(oy * p.stride + ky * p.dilation) - int(p.padding);
      if (y < 0 || y >= int(p.height)) continue;
      for (uint kx = 0; kx < p.kernel_size; ++kx) {
        const int x = int(ox * p.stride + kx * p.dilation) - int(p.padding);
        if (x < 0 || x >= int(p.width)) continue;
        sum += weights[(channel * p.kernel_size + ky) * p.kernel_size + kx] *
               input_data[(plane + uint(y)) * p.width + uint(x)];
      }
    }
    output_data[i] = activate(p.activation, p.slope, sum);
  }
}
