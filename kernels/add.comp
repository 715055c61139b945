#version 450
// add: output = activation(a + b), element-wise (residual connections, darknet's shortcut).
#extension GL_GOOGLE_include_directive : require
#include "activation_functions.glsl"
#include "tensor_storage.glsl"
layout(local_size_x = 256) in;

// With fp16 precision, kernels/CMakeLists.txt also builds this as add_fp16 (tensor_storage.glsl): a residual
// connection between fp16 intermediates then costs no conversions to fp32.
TENSOR_INPUT(0, a, 0)
TENSOR_INPUT(1, b, 2)
TENSOR_OUTPUT(2, result, 1)

// Mirrors corgy::vulkan::AddParams.
layout(push_constant) uniform Params {
  uint count;
  uint activation;
  float slope;
} p;

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    store_result(i, activate(p.activation, p.slope, load_a(i) + load_b(i)));
  }
}
