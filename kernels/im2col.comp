#version 450
// im2col: unfolds the patches a convolution reads into GEMM columns. For image n and group g, the block
// z = n * groups + g is a (rows x pixels) matrix, rows = channels_per_group * kernel_h * kernel_w (the order of the
// OIHW weights' inner dimensions) and pixels = out_height * out_width, so the convolution of that image and
// group is weights (out channels of g x rows) times this block. Padded cells are zeros. Rows are `pitch` floats
// apart (pixels rounded up to a multiple of 4, the extra columns zero) so that the GEMM reads whole vec4s.
layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer Input { float input_data[]; };
layout(binding = 1) writeonly buffer Columns { float columns[]; };

// Mirrors corgy::vulkan::Im2colParams.
layout(push_constant) uniform Params {
  uint images;
  uint groups;
  uint channels_per_group;
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
  uint pitch;
} p;

void main() {
  const uint pixels = p.out_height * p.out_width;
  const uint taps = p.kernel_h * p.kernel_w;
  const uint rows = p.channels_per_group * taps;
  const uint total = p.images * p.groups * rows * p.pitch;
  // A grid-stride loop: the dispatch may be smaller than the element count.
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    const uint pixel = i % p.pitch;
    const uint row = (i / p.pitch) % rows;
    const uint block = i / (p.pitch * rows);  // n * groups + g
    const uint kx = row % p.kernel_w;
    const uint ky = (row / p.kernel_w) % p.kernel_h;
    const uint channel = row / taps;
    const int y = int((pixel / p.out_width) * p.stride_h + ky * p.dilation_h) - int(p.pad_top);
    const int x = int((pixel % p.out_width) * p.stride_w + kx * p.dilation_w) - int(p.pad_left);
    float value = 0.0;
    if (pixel < pixels && y >= 0 && y < int(p.height) && x >= 0 && x < int(p.width)) {
      // block * channels_per_group + channel = n * in_channels + g * channels_per_group + channel
      value = input_data[((block * p.channels_per_group + channel) * p.height + uint(y)) * p.width + uint(x)];
    }
    columns[i] = value;
  }
}
