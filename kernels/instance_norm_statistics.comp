#version 450
// instance_norm_statistics: the first of the two passes of an instance norm over large planes (the second is
// instance_norm_apply.comp). Workgroup (chunk, plane) takes elements [chunk * chunk_size, + chunk_size) of its
// plane and writes their mean and their sum of squared deviations from it (a pass for each: the second reads the
// chunk again from the cache), which the second pass merges per plane. With one workgroup per plane
// (instance_norm.comp) a 512 x 512 image of 32 channels kept 32 workgroups busy and the GPU idle.
#extension GL_GOOGLE_include_directive : require
#include "tensor_storage.glsl"

layout(local_size_x = 256) in;

// With fp16 precision, kernels/CMakeLists.txt also builds this as instance_norm_statistics_fp16 (tensor_storage.glsl).
TENSOR_INPUT(0, source, 0)
layout(binding = 1) writeonly buffer Statistics { vec2 statistics[]; };  // (mean, squares) per plane and chunk

// Mirrors corgy::vulkan::InstanceNormStatisticsParams.
layout(push_constant) uniform Params {
  uint planes;      // images * channels
  uint plane;       // height * width
  uint chunks;      // per plane, none empty
  uint chunk_size;  // elements per chunk (the last may hold fewer)
} p;

#include "workgroup_sum.glsl"

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint chunk = gl_WorkGroupID.x;
  const uint begin = chunk * p.chunk_size;
  const uint end = min(p.plane, begin + p.chunk_size);
  // Grid-stride over planes: the dispatch's y is capped at the device's workgroup-count limit.
  for (uint plane_index = gl_WorkGroupID.y; plane_index < p.planes; plane_index += gl_NumWorkGroups.y) {
    const uint base = plane_index * p.plane;
    float sum = 0.0;
    for (uint i = begin + t; i < end; i += 256) sum += load_source(base + i);
    const float mean = workgroup_sum(sum) / float(end - begin);
    float squares = 0.0;
    for (uint i = begin + t; i < end; i += 256) {
      const float deviation = load_source(base + i) - mean;
      squares += deviation * deviation;
    }
    squares = workgroup_sum(squares);
    if (t == 0) statistics[plane_index * p.chunks + chunk] = vec2(mean, squares);
  }
}
