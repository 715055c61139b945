#version 450
// instance_norm_apply: the second pass of an instance norm over large planes (instance_norm_statistics.comp is the
// first). Workgroup (chunk, plane) merges its plane's chunk statistics into the plane's mean and biased variance
// (Chan, Golub and LeVeque's pairwise update: no sum of squares minus a squared sum, so no cancellation where the
// mean is large), then normalises, scales, shifts and activates its chunk.
#extension GL_GOOGLE_include_directive : require
#include "activation_functions.glsl"
#include "tensor_storage.glsl"

layout(local_size_x = 256) in;

// With fp16 precision, kernels/CMakeLists.txt also builds this as instance_norm_apply_fp16 (tensor_storage.glsl).
TENSOR_INPUT(0, source, 0)
layout(binding = 1) readonly buffer Statistics { vec2 statistics[]; };
layout(binding = 2) readonly buffer Scale { float scale[]; };
layout(binding = 3) readonly buffer Shift { float shift[]; };
TENSOR_OUTPUT(4, result, 1)

// Mirrors corgy::vulkan::InstanceNormApplyParams.
layout(push_constant) uniform Params {
  uint planes;
  uint channels;
  uint plane;
  uint chunks;
  uint chunk_size;
  float epsilon;
  uint activation;
  float slope;
} p;

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint begin = gl_WorkGroupID.x * p.chunk_size;
  const uint end = min(p.plane, begin + p.chunk_size);
  for (uint plane_index = gl_WorkGroupID.y; plane_index < p.planes; plane_index += gl_NumWorkGroups.y) {
    // Every thread merges the same few chunks (read from the cache), so none waits for another.
    float count = 0.0;
    float mean = 0.0;
    float squares = 0.0;
    for (uint chunk = 0; chunk < p.chunks; ++chunk) {
      const uint first = chunk * p.chunk_size;
      const float chunk_count = float(min(p.plane, first + p.chunk_size) - first);
      const vec2 chunk_statistics = statistics[plane_index * p.chunks + chunk];
      const float total = count + chunk_count;
      const float delta = chunk_statistics.x - mean;
      mean += delta * (chunk_count / total);
      squares += chunk_statistics.y + delta * delta * (count * chunk_count / total);
      count = total;
    }
    const float variance = squares / float(p.plane);
    const uint channel = plane_index % p.channels;
    const float factor = scale[channel] * inversesqrt(variance + p.epsilon);
    const uint base = plane_index * p.plane;
    for (uint i = begin + t; i < end; i += 256) {
      store_result(base + i, activate(p.activation, p.slope, (load_source(base + i) - mean) * factor + shift[channel]));
    }
  }
}
