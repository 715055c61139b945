#version 450
// conv_transpose2d: the transposed convolution (corgy::ConvTranspose2dDesc) as a gather. Input pixel (iy, ix) reaches
// output (iy * stride - pad + k * dilation) through tap k, so output pixel (oy, ox) sums, for every tap (ky, kx)
// where oy + pad_top - ky * dilation_h is a non-negative multiple of stride_h (likewise for x) that lands on an input
// pixel, that pixel of each input channel of its group times the weight. One thread per output value.
layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer Input { float input_data[]; };
layout(binding = 1) readonly buffer Weights { float weights[]; };  // (in_channels, out_channels / groups, kH, kW)
layout(binding = 2) readonly buffer Bias { float bias[]; };        // out_channels values, read when has_bias
layout(binding = 3) writeonly buffer Output { float output_data[]; };

// Mirrors corgy::vulkan::ConvTransposeParams.
layout(push_constant) uniform Params {
  uint count;  // output values
  uint in_channels;
  uint out_channels;
  uint groups;
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
  uint dilation_h;
  uint dilation_w;
  uint has_bias;
} p;

// The input index that reaches output index `o` through tap `k`, or -1 when none does.
int source_index(uint o, uint k, uint pad, uint stride, uint dilation, uint size) {
  const int t = int(o + pad) - int(k * dilation);
  if (t < 0 || t % int(stride) != 0) return -1;
  const int i = t / int(stride);
  return i < int(size) ? i : -1;
}

void main() {
  const uint in_per_group = p.in_channels / p.groups;
  const uint out_per_group = p.out_channels / p.groups;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    const uint ox = i % p.out_width;
    const uint oy = (i / p.out_width) % p.out_height;
    const uint oc = (i / (p.out_width * p.out_height)) % p.out_channels;
    const uint n = i / (p.out_width * p.out_height * p.out_channels);
    const uint group = oc / out_per_group;
    const uint j = oc % out_per_group;
    float sum = p.has_bias != 0 ? bias[oc] : 0.0;
    for (uint ky = 0; ky < p.kernel_h; ++ky) {
      const int iy = source_index(oy, ky, p.pad_top, p.stride_h, p.dilation_h, p.height);
      if (iy < 0) continue;
      for (uint kx = 0; kx < p.kernel_w; ++kx) {
        const int ix = source_index(ox, kx, p.pad_left, p.stride_w, p.dilation_w, p.width);
        if (ix < 0) continue;
        for (uint c = 0; c < in_per_group; ++c) {
          const uint ic = group * in_per_group + c;
          sum += input_data[((n * p.in_channels + ic) * p.height + uint(iy)) * p.width + uint(ix)] *
                 weights[((ic * out_per_group + j) * p.kernel_h + ky) * p.kernel_w + kx];
        }
      }
    }
    output_data[i] = sum;
  }
}
