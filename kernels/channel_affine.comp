#version 450
// channel_affine: output = activation(input * scale[c] + shift[c]) per channel c (inference batch norm, folded).
#extension GL_GOOGLE_include_directive : require
#include "activation_functions.glsl"
#include "tensor_storage.glsl"
layout(local_size_x = 256) in;

// With fp16 precision, kernels/CMakeLists.txt also builds this as channel_affine_fp16 (tensor_storage.glsl):
// DenseNet's pre-activation batch norms then read and write fp16 instead of converting each input to fp32.
TENSOR_INPUT(0, source, 0)
layout(binding = 1) readonly buffer Scale { float scale[]; };
layout(binding = 2) readonly buffer Shift { float shift[]; };
TENSOR_OUTPUT(3, result, 1)

// Mirrors corgy::vulkan::ChannelAffineParams.
layout(push_constant) uniform Params {
  uint count;
  uint channels;
  uint plane;  // height * width
  uint activation;
  float slope;
} p;

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    const uint channel = (i / p.plane) % p.channels;
    store_result(i, activate(p.activation, p.slope, load_source(i) * scale[channel] + shift[channel]));
  }
}
