#version 450
// scale_channels: output = input * gates[plane], one fp32 gate per (image, channel) plane: the last step of a
// squeeze-and-excitation block. One thread per value.
#extension GL_GOOGLE_include_directive : require
#include "tensor_storage.glsl"

layout(local_size_x = 256) in;

// With fp16 precision, kernels/CMakeLists.txt also builds this as scale_channels_fp16 (tensor_storage.glsl).
TENSOR_INPUT(0, source, 0)
layout(binding = 1) readonly buffer Gates { float gates[]; };  // (N, C)
TENSOR_OUTPUT(2, result, 1)

// Mirrors corgy::vulkan::ScaleChannelsParams.
layout(push_constant) uniform Params {
  uint count;
  uint plane_size;
} p;

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    store_result(i, load_source(i) * gates[i / p.plane_size]);
  }
}
