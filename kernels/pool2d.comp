#version 450
// pool2d: max or average pooling over a window with (possibly asymmetric) padding, one thread per output.
// Max ignores padded cells; average divides by the whole window when count_include_pad is set, else by the
// cells inside the image (corgy::Pool2dDesc).
#extension GL_GOOGLE_include_directive : require
#include "tensor_storage.glsl"

layout(local_size_x = 256) in;

// With fp16 precision, kernels/CMakeLists.txt also builds this as pool2d_fp16 (tensor_storage.glsl).
TENSOR_INPUT(0, source, 0)
TENSOR_OUTPUT(1, result, 1)

const uint POOL_MAX = 0;
const uint POOL_AVERAGE = 1;

// Mirrors corgy::vulkan::Pool2dParams.
layout(push_constant) uniform Params {
  uint planes;  // images * channels
  uint height;
  uint width;
  uint out_height;
  uint out_width;
  uint kernel_h;
  uint kernel_w;
  uint stride_h;
  uint stride_w;
  uint pad_top;
  uint pad_left;
  uint kind;
  uint count_include_pad;
} p;

void main() {
  const uint total = p.planes * p.out_height * p.out_width;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    const uint ox = i % p.out_width;
    const uint oy = (i / p.out_width) % p.out_height;
    const uint plane = i / (p.out_width * p.out_height);
    float largest = uintBitsToFloat(0xff800000u);  // -infinity
    float sum = 0.0;
    uint cells = 0;
    for (uint ky = 0; ky < p.kernel_h; ++ky) {
      const int y = int(oy * p.stride_h + ky) - int(p.pad_top);
      if (y < 0 || y >= int(p.height)) continue;
      for (uint kx = 0; kx < p.kernel_w; ++kx) {
        const int x = int(ox * p.stride_w + kx) - int(p.pad_left);
        if (x < 0 || x >= int(p.width)) continue;
        const float value = load_source((plane * p.height + uint(y)) * p.width + uint(x));
        largest = max(largest, value);
        sum += value;
        ++cells;
      }
    }
    const uint divisor = p.count_include_pad != 0 ? p.kernel_h * p.kernel_w : cells;
    store_result(i, p.kind == POOL_MAX ? largest : sum / float(divisor));
  }
}
