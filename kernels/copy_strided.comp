#version 450
// copy_strided: a box of up to 6 axes copied between two row-major tensors (corgy::StridedCopyDesc, in its
// simplified form): element (i_0, ..., i_{rank-1}) of the box goes from source[input_offset + sum i_k * input_stride[k]]
// to result[output_offset + sum i_k * output_stride[k]]. Transpose, Slice, Split, Concat, Expand, Gather.
#extension GL_GOOGLE_include_directive : require
#include "tensor_storage.glsl"

layout(local_size_x = 256) in;

// With fp16 precision, kernels/CMakeLists.txt also builds this as copy_strided_fp16 (tensor_storage.glsl).
TENSOR_INPUT(0, source, 0)
TENSOR_OUTPUT(1, result, 1)

// Mirrors corgy::vulkan::CopyStridedParams. Axes past the rank have extent 1.
layout(push_constant) uniform Params {
  uint count;
  uint rank;
  int input_offset;
  int output_offset;
  uint extent[6];
  int input_stride[6];
  int output_stride[6];
} p;

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    int from = p.input_offset;
    int to = p.output_offset;
    uint rest = i;
    for (int k = int(p.rank) - 1; k >= 0; --k) {
      const int index = int(rest % p.extent[k]);
      rest /= p.extent[k];
      from += index * p.input_stride[k];
      to += index * p.output_stride[k];
    }
    store_result(uint(to), load_source(uint(from)));
  }
}
