#version 450
// activation: output = activation(input), element-wise. Input and output may be the same buffer.
#extension GL_GOOGLE_include_directive : require
#include "activation_functions.glsl"
layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer Input { float input_data[]; };
layout(binding = 1) writeonly buffer Output { float output_data[]; };

// Mirrors corgy::vulkan::ActivationParams.
layout(push_constant) uniform Params {
  uint count;
  uint activation;
  float slope;
} p;

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    output_data[i] = activate(p.activation, p.slope, input_data[i]);
  }
}
