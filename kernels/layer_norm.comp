#version 450
// layer_norm: the input read as (outer, length, inner), each line of `length` values along the middle axis normalised
// by its mean and biased variance, then scaled and shifted per position along the line (corgy::Backend::layer_norm:
// ConvNeXt's LayerNorm over the last axis or over the channels). One thread per (outer, inner) line.
#extension GL_GOOGLE_include_directive : require
#include "tensor_storage.glsl"

layout(local_size_x = 256) in;

// With fp16 precision, kernels/CMakeLists.txt also builds this as layer_norm_fp16 (tensor_storage.glsl).
TENSOR_INPUT(0, source, 0)
layout(binding = 1) readonly buffer Scale { float scale[]; };
layout(binding = 2) readonly buffer Shift { float shift[]; };
TENSOR_OUTPUT(3, result, 1)

// Mirrors corgy::vulkan::LayerNormParams.
layout(push_constant) uniform Params {
  uint outer;
  uint axis_length;
  uint inner;
  float epsilon;
} p;

void main() {
  const uint total = p.outer * p.inner;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    const uint first = (i / p.inner) * p.axis_length * p.inner + i % p.inner;
    float sum = 0.0;
    for (uint l = 0; l < p.axis_length; ++l) sum += load_source(first + l * p.inner);
    const float mean = sum / float(p.axis_length);
    float squares = 0.0;
    for (uint l = 0; l < p.axis_length; ++l) {
      const float d = load_source(first + l * p.inner) - mean;
      squares += d * d;
    }
    const float inverse = inversesqrt(squares / float(p.axis_length) + p.epsilon);
    for (uint l = 0; l < p.axis_length; ++l) {
      const float x = load_source(first + l * p.inner);
      store_result(first + l * p.inner, (x - mean) * inverse * scale[l] + shift[l]);
    }
  }
}
