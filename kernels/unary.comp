#version 450
// unary: output = f(input) element-wise (corgy::Backend::unary, corgy::UnaryOp): sqrt, erf, exp, log, -x, |x|,
// 1 / x, floor, ceil, x * x, GELU exact and in its tanh form. One thread per value.
#extension GL_GOOGLE_include_directive : require
#include "activation_functions.glsl"
#include "tensor_storage.glsl"

layout(local_size_x = 256) in;

// With fp16 precision, kernels/CMakeLists.txt also builds this as unary_fp16 (tensor_storage.glsl).
TENSOR_INPUT(0, source, 0)
TENSOR_OUTPUT(1, result, 1)

const uint OP_SQRT = 0;
const uint OP_ERF = 1;
const uint OP_EXP = 2;
const uint OP_LOG = 3;
const uint OP_NEG = 4;
const uint OP_ABS = 5;
const uint OP_RECIPROCAL = 6;
const uint OP_FLOOR = 7;
const uint OP_CEIL = 8;
const uint OP_SQUARE = 9;
const uint OP_GELU = 10;
const uint OP_GELU_TANH = 11;

// Mirrors corgy::vulkan::UnaryParams.
layout(push_constant) uniform Params {
  uint count;
  uint op;
} p;

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    const float x = load_source(i);
    float r;
    if (p.op == OP_SQRT) {
      r = sqrt(x);
    } else if (p.op == OP_ERF) {
      r = erf_approx(x);
    } else if (p.op == OP_EXP) {
      r = exp(x);
    } else if (p.op == OP_LOG) {
      r = log(x);
    } else if (p.op == OP_NEG) {
      r = -x;
    } else if (p.op == OP_ABS) {
      r = abs(x);
    } else if (p.op == OP_RECIPROCAL) {
      r = 1.0 / x;
    } else if (p.op == OP_FLOOR) {
      r = floor(x);
    } else if (p.op == OP_CEIL) {
      r = ceil(x);
    } else if (p.op == OP_SQUARE) {
      r = x * x;
    } else if (p.op == OP_GELU) {
      r = gelu(x);
    } else {
      // tanh(u) = 1 - 2 / (exp(2u) + 1), with u clamped: exp overflows past |u| ~ 44, where tanh is +-1 in float.
      const float u = clamp(0.79788456 * (x + 0.044715 * x * x * x), -20.0, 20.0);
      r = 0.5 * x * (2.0 - 2.0 / (exp(2.0 * u) + 1.0));
    }
    store_result(i, r);
  }
}
