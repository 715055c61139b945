#version 450
// broadcast_binary: output = a op b with NumPy broadcasting (corgy::Backend::broadcast_binary). The output is
// row-major over extent[0 .. rank); an output index reads a and b at the sums of its coordinates times their strides
// (0 along the axes an operand is broadcast over). One thread per output value.
#extension GL_GOOGLE_include_directive : require
#include "tensor_storage.glsl"

layout(local_size_x = 256) in;

// With fp16 precision, kernels/CMakeLists.txt also builds this as broadcast_binary_fp16 (tensor_storage.glsl).
TENSOR_INPUT(0, left, 0)
TENSOR_INPUT(1, right, 2)
TENSOR_OUTPUT(2, result, 1)

const uint OP_ADD = 0;
const uint OP_SUBTRACT = 1;
const uint OP_MULTIPLY = 2;
const uint OP_DIVIDE = 3;
const uint OP_POWER = 4;
const uint OP_MINIMUM = 5;
const uint OP_MAXIMUM = 6;

// Mirrors corgy::vulkan::BroadcastBinaryParams.
layout(push_constant) uniform Params {
  uint count;
  uint op;
  uint rank;
  uint extent[6];
  uint a_stride[6];
  uint b_stride[6];
} p;

// pow() as C's powf computes it where GLSL leaves it undefined: negative bases with integer exponents, zero bases.
float power(float x, float y) {
  if (y == 0.0) return 1.0;
  if (x == 0.0) return y > 0.0 ? 0.0 : 1.0 / 0.0;
  if (x > 0.0) return pow(x, y);
  if (floor(y) != y) return 0.0 / 0.0;
  const float magnitude = pow(-x, y);
  return mod(y, 2.0) == 1.0 ? -magnitude : magnitude;
}

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    uint rest = i;
    uint ia = 0;
    uint ib = 0;
    for (int k = int(p.rank) - 1; k >= 0; --k) {
      const uint index = rest % p.extent[k];
      rest /= p.extent[k];
      ia += index * p.a_stride[k];
      ib += index * p.b_stride[k];
    }
    const float x = load_left(ia);
    const float y = load_right(ib);
    float r;
    if (p.op == OP_ADD) {
      r = x + y;
    } else if (p.op == OP_SUBTRACT) {
      r = x - y;
    } else if (p.op == OP_MULTIPLY) {
      r = x * y;
    } else if (p.op == OP_DIVIDE) {
      r = x / y;
    } else if (p.op == OP_POWER) {
      r = power(x, y);
    } else if (p.op == OP_MINIMUM) {
      r = min(x, y);
    } else {
      r = max(x, y);
    }
    store_result(i, r);
  }
}
