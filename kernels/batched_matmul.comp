#version 450
// batched_matmul: out[m] (rows x cols) = a[m] (rows x inner) x b[m] (inner x cols) for every batch index m, the
// batch broadcast as in broadcast_binary.comp with strides counted in whole matrices (corgy::Backend::
// batched_matmul: products of two activations, attention-like; MatMul by constant weights runs as gemm_tiled).
// One thread per output value.
#extension GL_GOOGLE_include_directive : require
#include "tensor_storage.glsl"

layout(local_size_x = 256) in;

// With fp16 precision, kernels/CMakeLists.txt also builds this as batched_matmul_fp16 (tensor_storage.glsl).
TENSOR_INPUT(0, left, 0)
TENSOR_INPUT(1, right, 2)
TENSOR_OUTPUT(2, result, 1)

// Mirrors corgy::vulkan::BatchedMatmulParams.
layout(push_constant) uniform Params {
  uint count;  // output values
  uint rows;
  uint inner;
  uint cols;
  uint rank;  // of the batch
  uint extent[6];
  uint a_stride[6];
  uint b_stride[6];
} p;

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    const uint col = i % p.cols;
    const uint row = (i / p.cols) % p.rows;
    uint rest = i / (p.cols * p.rows);
    uint ma = 0;
    uint mb = 0;
    for (int k = int(p.rank) - 1; k >= 0; --k) {
      const uint index = rest % p.extent[k];
      rest /= p.extent[k];
      ma += index * p.a_stride[k];
      mb += index * p.b_stride[k];
    }
    const uint a_first = ma * p.rows * p.inner + row * p.inner;
    const uint b_first = mb * p.inner * p.cols + col;
    float sum = 0.0;
    for (uint k = 0; k < p.inner; ++k) sum += load_left(a_first + k) * load_right(b_first + k * p.cols);
    store_result(i, sum);
  }
}
