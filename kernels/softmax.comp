#version 450
// softmax: over the channel axis, separately for every image and pixel; one thread per (image, pixel).
// Subtracting the largest value first keeps exp() from overflowing.
layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer Input { float input_data[]; };
layout(binding = 1) writeonly buffer Output { float output_data[]; };

// Mirrors corgy::vulkan::SoftmaxParams.
layout(push_constant) uniform Params {
  uint images;
  uint channels;
  uint plane;  // height * width
} p;

void main() {
  const uint total = p.images * p.plane;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    const uint first = (i / p.plane) * p.channels * p.plane + i % p.plane;
    float largest = input_data[first];
    for (uint c = 1; c < p.channels; ++c) largest = max(largest, input_data[first + c * p.plane]);
    float sum = 0.0;
    for (uint c = 0; c < p.channels; ++c) sum += exp(input_data[first + c * p.plane] - largest);
    for (uint c = 0; c < p.channels; ++c) {
      output_data[first + c * p.plane] = exp(input_data[first + c * p.plane] - largest) / sum;
    }
  }
}
