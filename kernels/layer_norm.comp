#version 450
// layer_norm: the input read as (outer, length, inner), each line of `length` values along the middle axis normalised
// by its mean and biased variance, then scaled and shifted per position along the line (corgy::Backend::layer_norm:
// ConvNeXt's LayerNorm over the last axis or over the channels).
// A workgroup normalises LINES neighbouring lines (neighbours along the inner axis, so that each step along the lines
// reads LINES consecutive values); each line's 256 / LINES threads add up every (256 / LINES)-th value of it and
// shared memory adds their parts up, first for the mean, then for the variance around it. One thread per line, as
// before, left a 14x14x384 ConvNeXt layer 196 threads of 1,152 dependent loads each (0.20 ms on an H100).
#extension GL_GOOGLE_include_directive : require
#include "tensor_storage.glsl"

layout(local_size_x = 256) in;

// With fp16 precision, kernels/CMakeLists.txt also builds this as layer_norm_fp16 (tensor_storage.glsl).
TENSOR_INPUT(0, source, 0)
layout(binding = 1) readonly buffer Scale { float scale[]; };
layout(binding = 2) readonly buffer Shift { float shift[]; };
TENSOR_OUTPUT(3, result, 1)

// Lines per workgroup, a power of two from 1 to 32 (corgy::vulkan::LayerNormConstant::lines).
layout(constant_id = 3) const uint LINES = 1;
const uint PARTS = gl_WorkGroupSize.x / LINES;  // threads per line

// Mirrors corgy::vulkan::LayerNormParams.
layout(push_constant) uniform Params {
  uint outer;
  uint axis_length;
  uint inner;
  float epsilon;
} p;

shared float partial[gl_WorkGroupSize.x];

// The sum of `value` over the PARTS threads of this thread's line, returned to all of them.
float line_sum(float value) {
  const uint local = gl_LocalInvocationID.x;
  partial[local] = value;
  barrier();
  for (uint stride = PARTS / 2; stride > 0; stride /= 2) {
    if (local / LINES < stride) partial[local] += partial[local + stride * LINES];
    barrier();
  }
  const float total = partial[local % LINES];
  barrier();  // every thread has read its total before the next call writes `partial`
  return total;
}

void main() {
  const uint lane = gl_LocalInvocationID.x % LINES;
  const uint part = gl_LocalInvocationID.x / LINES;
  const uint inner_groups = (p.inner + LINES - 1) / LINES;
  const uint groups = p.outer * inner_groups;
  // Uniform in the workgroup (line_sum's barriers need it): groups beyond the grid in further rounds.
  for (uint group = gl_WorkGroupID.x; group < groups; group += gl_NumWorkGroups.x) {
    const uint inner = (group % inner_groups) * LINES + lane;
    const bool inside = inner < p.inner;  // the last group's lines past the tensor only take part in the sums
    const uint first = (group / inner_groups) * p.axis_length * p.inner + inner;
    float sum = 0.0;
    if (inside) {
      for (uint l = part; l < p.axis_length; l += PARTS) sum += load_source(first + l * p.inner);
    }
    const float mean = line_sum(sum) / float(p.axis_length);
    float squares = 0.0;
    if (inside) {
      for (uint l = part; l < p.axis_length; l += PARTS) {
        const float d = load_source(first + l * p.inner) - mean;
        squares += d * d;
      }
    }
    const float inverse = inversesqrt(line_sum(squares) / float(p.axis_length) + p.epsilon);
    if (inside) {
      for (uint l = part; l < p.axis_length; l += PARTS) {
        const float x = load_source(first + l * p.inner);
        store_result(first + l * p.inner, (x - mean) * inverse * scale[l] + shift[l]);
      }
    }
  }
}
