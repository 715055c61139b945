#version 450
// global_pool: the average or the maximum of each whole plane, (N, C, H, W) -> (N, C, 1, 1) (a global pool, the
// squeeze of a squeeze-and-excitation block). threads_per_plane threads (a power of two, up to the workgroup) read
// one plane together, each a strided share of it, and add their partial results up in shared memory: a 112 x 112
// plane is read by 256 threads at once instead of walked by one (pool2d.comp's thread per output).
#extension GL_GOOGLE_include_directive : require
#include "tensor_storage.glsl"

layout(local_size_x = 256) in;

// With fp16 precision, kernels/CMakeLists.txt also builds this as global_pool_fp16 (tensor_storage.glsl).
TENSOR_INPUT(0, source, 0)
TENSOR_OUTPUT(1, result, 1)

const uint POOL_MAX = 0;
const uint POOL_AVERAGE = 1;

// Mirrors corgy::vulkan::GlobalPoolParams.
layout(push_constant) uniform Params {
  uint planes;  // images * channels
  uint plane_size;
  uint threads_per_plane;
  uint kind;
} p;

shared float partial[gl_WorkGroupSize.x];

float combine(float a, float b) { return p.kind == POOL_MAX ? max(a, b) : a + b; }

void main() {
  const uint local = gl_LocalInvocationID.x;
  const uint lane = local % p.threads_per_plane;
  const uint planes_per_group = gl_WorkGroupSize.x / p.threads_per_plane;
  // A loop over groups of planes, uniform in the workgroup (the barriers need it), for more planes than workgroups.
  for (uint first = gl_WorkGroupID.x * planes_per_group; first < p.planes;
       first += gl_NumWorkGroups.x * planes_per_group) {
    const uint plane = first + local / p.threads_per_plane;
    float value = p.kind == POOL_MAX ? uintBitsToFloat(0xff800000u) : 0.0;  // -infinity for max
    if (plane < p.planes) {
      const uint base = plane * p.plane_size;
      for (uint i = lane; i < p.plane_size; i += p.threads_per_plane) value = combine(value, load_source(base + i));
    }
    partial[local] = value;
    barrier();
    for (uint half_width = p.threads_per_plane / 2; half_width > 0; half_width /= 2) {
      if (lane < half_width) partial[local] = combine(partial[local], partial[local + half_width]);
      barrier();
    }
    if (lane == 0 && plane < p.planes) {
      store_result(plane, p.kind == POOL_MAX ? partial[local] : partial[local] / float(p.plane_size));
    }
    barrier();  // partial is rewritten by the next group of planes
  }
}
