#version 450
// prelu: output = input where input > 0, else input * slope[c] (corgy::Backend::prelu). One thread per value.
layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer Input { float input_data[]; };
layout(binding = 1) readonly buffer Slope { float slope[]; };
layout(binding = 2) writeonly buffer Output { float output_data[]; };

// Mirrors corgy::vulkan::PreluParams.
layout(push_constant) uniform Params {
  uint count;
  uint channels;
  uint plane;  // height * width
} p;

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    const float value = input_data[i];
    output_data[i] = value > 0.0 ? value : value * slope[(i / p.plane) % p.channels];
  }
}
