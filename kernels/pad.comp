#version 450
// pad: every plane grown by a border of a constant, the mirrored input (reflect) or its edge (corgy::PadDesc).
// One thread per output value.
#extension GL_GOOGLE_include_directive : require
#include "tensor_storage.glsl"

layout(local_size_x = 256) in;

// With fp16 precision, kernels/CMakeLists.txt also builds this as pad_fp16 (tensor_storage.glsl).
TENSOR_INPUT(0, source, 0)
TENSOR_OUTPUT(1, result, 1)

const uint PAD_CONSTANT = 0;
const uint PAD_REFLECT = 1;
const uint PAD_EDGE = 2;

// Mirrors corgy::vulkan::PadParams.
layout(push_constant) uniform Params {
  uint count;  // output values
  uint height;
  uint width;
  uint out_height;
  uint out_width;
  uint pad_top;
  uint pad_left;
  uint mode;
  float value;
} p;

// The input index that padded index i reads, or -1 for a constant cell (corgy::NaiveBackend::pad's rule).
int source_index(int i, int before, int size) {
  const int j = i - before;
  if (j >= 0 && j < size) return j;
  if (p.mode == PAD_REFLECT) return j < 0 ? -j : 2 * (size - 1) - j;
  if (p.mode == PAD_EDGE) return j < 0 ? 0 : size - 1;
  return -1;
}

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    const uint x = i % p.out_width;
    const uint y = (i / p.out_width) % p.out_height;
    const uint plane = i / (p.out_width * p.out_height);
    const int iy = source_index(int(y), int(p.pad_top), int(p.height));
    const int ix = source_index(int(x), int(p.pad_left), int(p.width));
    store_result(i, iy < 0 || ix < 0 ? p.value : load_source((plane * p.height + uint(iy)) * p.width + uint(ix)));
  }
}
