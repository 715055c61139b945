#version 450
// reduce_axis: the input read as (outer, length, inner) reduced along its middle axis to (outer, inner)
// (corgy::Backend::reduce_axis): mean, sum, max or min. One thread per output value.
#extension GL_GOOGLE_include_directive : require
#include "tensor_storage.glsl"

layout(local_size_x = 256) in;

// With fp16 precision, kernels/CMakeLists.txt also builds this as reduce_axis_fp16 (tensor_storage.glsl).
TENSOR_INPUT(0, source, 0)
TENSOR_OUTPUT(1, result, 1)

const uint OP_MEAN = 0;
const uint OP_SUM = 1;
const uint OP_MAX = 2;
const uint OP_MIN = 3;

// Mirrors corgy::vulkan::ReduceAxisParams.
layout(push_constant) uniform Params {
  uint outer;
  uint axis_length;
  uint inner;
  uint op;
} p;

void main() {
  const uint total = p.outer * p.inner;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    const uint first = (i / p.inner) * p.axis_length * p.inner + i % p.inner;
    float acc = load_source(first);
    for (uint l = 1; l < p.axis_length; ++l) {
      const float v = load_source(first + l * p.inner);
      if (p.op == OP_MAX) {
        acc = max(acc, v);
      } else if (p.op == OP_MIN) {
        acc = min(acc, v);
      } else {
        acc += v;
      }
    }
    store_result(i, p.op == OP_MEAN ? acc / float(p.axis_length) : acc);
  }
}
