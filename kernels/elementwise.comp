#version 450
// elementwise: output = a op b (add, subtract, multiply, divide), b of a's shape or one value per plane
// (corgy::Backend::elementwise). One thread per output value.
layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer A { float a[]; };
layout(binding = 1) readonly buffer B { float b[]; };
layout(binding = 2) writeonly buffer Output { float output_data[]; };

const uint OP_ADD = 0;
const uint OP_SUBTRACT = 1;
const uint OP_MULTIPLY = 2;
const uint OP_DIVIDE = 3;

// Mirrors corgy::vulkan::ElementwiseParams.
layout(push_constant) uniform Params {
  uint count;
  uint op;
  uint b_plane;  // 1 when b holds one value per plane of a, else 0
  uint plane;    // height * width of a
} p;

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    const float left = a[i];
    const float right = p.b_plane != 0 ? b[i / p.plane] : b[i];
    float result;
    if (p.op == OP_ADD) {
      result = left + right;
    } else if (p.op == OP_SUBTRACT) {
      result = left - right;
    } else if (p.op == OP_MULTIPLY) {
      result = left * right;
    } else {
      result = left / right;
    }
    output_data[i] = result;
  }
}
