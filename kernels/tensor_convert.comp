#version 450
// tensor_convert: copies a tensor from fp16 to fp32 or back (built only as tensor_convert_fp16). With fp16
// precision, a kernel that reads only fp32 gets an fp16 intermediate through this copy (VulkanBackend).
#extension GL_GOOGLE_include_directive : require
#include "tensor_storage.glsl"

layout(local_size_x = 256) in;

TENSOR_INPUT(0, source, 0)
TENSOR_OUTPUT(1, result, 1)

// Mirrors corgy::vulkan::ConvertParams.
layout(push_constant) uniform Params { uint count; } p;

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    store_result(i, load_source(i));
  }
}
