#version 450
// softmax_axis: softmax (or log-softmax) of the input read as (outer, length, inner) along its middle axis
// (corgy::Backend::softmax_axis); one thread per (outer, inner) line. Subtracting the largest value first keeps
// exp() from overflowing.
#extension GL_GOOGLE_include_directive : require
#include "tensor_storage.glsl"

layout(local_size_x = 256) in;

// With fp16 precision, kernels/CMakeLists.txt also builds this as softmax_axis_fp16 (tensor_storage.glsl).
TENSOR_INPUT(0, source, 0)
TENSOR_OUTPUT(1, result, 1)

// Mirrors corgy::vulkan::SoftmaxAxisParams.
layout(push_constant) uniform Params {
  uint outer;
  uint axis_length;
  uint inner;
  uint log_softmax;  // 1: log(softmax)
} p;

void main() {
  const uint total = p.outer * p.inner;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    const uint first = (i / p.inner) * p.axis_length * p.inner + i % p.inner;
    float largest = load_source(first);
    for (uint l = 1; l < p.axis_length; ++l) largest = max(largest, load_source(first + l * p.inner));
    float sum = 0.0;
    for (uint l = 0; l < p.axis_length; ++l) sum += exp(load_source(first + l * p.inner) - largest);
    const float log_sum = log(sum);
    for (uint l = 0; l < p.axis_length; ++l) {
      const float shifted = load_source(first + l * p.inner) - largest;
      store_result(first + l * p.inner, p.log_softmax != 0 ? shifted - log_sum : exp(shifted) / sum);
    }
  }
}
