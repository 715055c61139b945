#version 450
// upsample_nearest: (N, C, H, W) -> (N, C, H * scale, W * scale), each output copies the input pixel it covers.
#extension GL_GOOGLE_include_directive : require
#include "tensor_storage.glsl"

layout(local_size_x = 256) in;

// With fp16 precision, kernels/CMakeLists.txt also builds this as upsample_nearest_fp16 (tensor_storage.glsl).
TENSOR_INPUT(0, source, 0)
TENSOR_OUTPUT(1, result, 1)

// Mirrors corgy::vulkan::UpsampleParams.
layout(push_constant) uniform Params {
  uint planes;  // images * channels
  uint height;
  uint width;
  uint scale;
} p;

void main() {
  const uint out_width = p.width * p.scale;
  const uint out_height = p.height * p.scale;
  const uint total = p.planes * out_height * out_width;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    const uint x = i % out_width;
    const uint y = (i / out_width) % out_height;
    const uint plane = i / (out_width * out_height);
    store_result(i, load_source((plane * p.height + y / p.scale) * p.width + x / p.scale));
  }
}
