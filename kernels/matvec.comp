#version 450
// matvec: output (N, M) = activation(x (N, K) x weights (M, K)^T + bias), a matrix-vector product per image for
// small N: a squeeze-and-excitation block's two products, a classifier at batch 1. Each workgroup computes 8 rows of
// one image, 32 threads per row reading the row's weights side by side (coalesced) and adding their partial sums up
// in shared memory, so a 1280 x 960 product runs on 160 workgroups at once instead of as a tiled GEMM with one
// useful row.
#extension GL_GOOGLE_include_directive : require
#include "activation_functions.glsl"
#include "tensor_storage.glsl"

const uint LANES = 32;  // threads per output row
layout(local_size_x = 256) in;

// With fp16 precision, kernels/CMakeLists.txt also builds this as matvec_fp16 (tensor_storage.glsl).
TENSOR_INPUT(0, source, 0)
layout(binding = 1) readonly buffer Weights { float weights[]; };  // (M, K)
layout(binding = 2) readonly buffer Bias { float bias[]; };        // (M), when has_bias
TENSOR_OUTPUT(3, result, 1)

// Mirrors corgy::vulkan::MatvecParams.
layout(push_constant) uniform Params {
  uint images;
  uint rows;
  uint columns;
  uint has_bias;
  uint activation;
  float slope;
} p;

shared float partial[gl_WorkGroupSize.x];

void main() {
  const uint local = gl_LocalInvocationID.x;
  const uint lane = local % LANES;
  const uint rows_per_group = gl_WorkGroupSize.x / LANES;
  // Loops uniform in the workgroup (the barriers need it) over rows and images beyond the grid.
  for (uint image = gl_WorkGroupID.y; image < p.images; image += gl_NumWorkGroups.y) {
    for (uint first = gl_WorkGroupID.x * rows_per_group; first < p.rows; first += gl_NumWorkGroups.x * rows_per_group) {
      const uint row = first + local / LANES;
      float sum = 0.0;
      if (row < p.rows) {
        const uint weight_base = row * p.columns;
        const uint input_base = image * p.columns;
        for (uint k = lane; k < p.columns; k += LANES) sum += weights[weight_base + k] * load_source(input_base + k);
      }
      partial[local] = sum;
      barrier();
      for (uint half_width = LANES / 2; half_width > 0; half_width /= 2) {
        if (lane < half_width) partial[local] += partial[local + half_width];
        barrier();
      }
      if (lane == 0 && row < p.rows) {
        const float value = partial[local] + (p.has_bias != 0 ? bias[row] : 0.0);
        store_result(image * p.rows + row, activate(p.activation, p.slope, value));
      }
      barrier();  // partial is rewritten by the next rows
    }
  }
}
