#version 450
// concat_copy: copies one input (N, C, H, W) into channels [channel_offset, channel_offset + C) of the output
// (N, out_channels, H, W). Channel concatenation is one such copy per input.
layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer Input { float input_data[]; };
layout(binding = 1) writeonly buffer Output { float output_data[]; };

// Mirrors corgy::vulkan::ConcatCopyParams.
layout(push_constant) uniform Params {
  uint images;
  uint channels;
  uint plane;  // height * width
  uint out_channels;
  uint channel_offset;
} p;

void main() {
  const uint image_size = p.channels * p.plane;
  const uint total = p.images * image_size;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    const uint image = i / image_size;
    output_data[(image * p.out_channels + p.channel_offset) * p.plane + i % image_size] = input_data[i];
  }
}
