#version 450
// upsample_nearest: (N, C, H, W) -> (N, C, H * scale, W * scale), each output copies the input pixel it covers.
layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer Input { float input_data[]; };
layout(binding = 1) writeonly buffer Output { float output_data[]; };

// Mirrors corgy::vulkan::UpsampleParams.
layout(push_constant) uniform Params {
  uint planes;  // images * channels
  uint height;
  uint width;
  uint scale;
} p;

void main() {
  const uint out_width = p.width * p.scale;
  const uint out_height = p.height * p.scale;
  const uint total = p.planes * out_height * out_width;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    const uint x = i % out_width;
    const uint y = (i / out_width) % out_height;
    const uint plane = i / (out_width * out_height);
    output_data[i] = input_data[(plane * p.height + y / p.scale) * p.width + x / p.scale];
  }
}
