#version 450
// gather_channels: output (N, C_out, H, W) channel k copies input (N, C_in, H, W) channel
// first + (k / inner) * outer_stride + (k % inner) * inner_stride (corgy::ChannelGatherDesc): channel slices and
// ShuffleNet's channel shuffle.
#extension GL_GOOGLE_include_directive : require
#include "tensor_storage.glsl"

layout(local_size_x = 256) in;

// With fp16 precision, kernels/CMakeLists.txt also builds this as gather_channels_fp16 (tensor_storage.glsl).
TENSOR_INPUT(0, source, 0)
TENSOR_OUTPUT(1, result, 1)

// Mirrors corgy::vulkan::GatherChannelsParams.
layout(push_constant) uniform Params {
  uint images;
  uint channels;  // of the output
  uint in_channels;
  uint plane;  // height * width
  uint first;
  uint inner;
  uint inner_stride;
  uint outer_stride;
} p;

void main() {
  const uint total = p.images * p.channels * p.plane;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    const uint plane_index = i / p.plane;
    const uint image = plane_index / p.channels;
    const uint k = plane_index % p.channels;
    const uint source_channel = p.first + (k / p.inner) * p.outer_stride + (k % p.inner) * p.inner_stride;
    store_result(i, load_source((image * p.in_channels + source_channel) * p.plane + i % p.plane));
  }
}
