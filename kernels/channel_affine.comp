#version 450
// channel_affine: output = activation(input * scale[c] + shift[c]) per channel c (inference batch norm, folded).
#extension GL_GOOGLE_include_directive : require
#include "activation_functions.glsl"
layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer Input { float input_data[]; };
layout(binding = 1) readonly buffer Scale { float scale[]; };
layout(binding = 2) readonly buffer Shift { float shift[]; };
layout(binding = 3) writeonly buffer Output { float output_data[]; };

// Mirrors corgy::vulkan::ChannelAffineParams.
layout(push_constant) uniform Params {
  uint count;
  uint channels;
  uint plane;  // height * width
  uint activation;
  float slope;
} p;

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    const uint channel = (i / p.plane) % p.channels;
    output_data[i] = activate(p.activation, p.slope, input_data[i] * scale[channel] + shift[channel]);
  }
}
