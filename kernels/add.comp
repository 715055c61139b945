#version 450
// add: output = activation(a + b), element-wise (residual connections, darknet's shortcut).
#extension GL_GOOGLE_include_directive : require
#include "activation_functions.glsl"
layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer InputA { float a[]; };
layout(binding = 1) readonly buffer InputB { float b[]; };
layout(binding = 2) writeonly buffer Output { float output_data[]; };

// Mirrors corgy::vulkan::AddParams.
layout(push_constant) uniform Params {
  uint count;
  uint activation;
  float slope;
} p;

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    output_data[i] = activate(p.activation, p.slope, a[i] + b[i]);
  }
}
