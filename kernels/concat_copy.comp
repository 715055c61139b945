#version 450
// concat_copy: copies one input (N, C, H, W) into channels [channel_offset, channel_offset + C) of the output
// (N, out_channels, H, W). Channel concatenation is one such copy per input.
#extension GL_GOOGLE_include_directive : require
#include "tensor_storage.glsl"

layout(local_size_x = 256) in;

// With fp16 precision, kernels/CMakeLists.txt also builds this as concat_copy_fp16 (tensor_storage.glsl).
TENSOR_INPUT(0, source, 0)
TENSOR_OUTPUT(1, result, 1)

// Mirrors corgy::vulkan::ConcatCopyParams.
layout(push_constant) uniform Params {
  uint images;
  uint channels;
  uint plane;  // height * width
  uint out_channels;
  uint channel_offset;
} p;

void main() {
  const uint image_size = p.channels * p.plane;
  const uint total = p.images * image_size;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    const uint image = i / image_size;
    store_result((image * p.out_channels + p.channel_offset) * p.plane + i % image_size, load_source(i));
  }
}
