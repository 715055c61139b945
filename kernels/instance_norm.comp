#version 450
// instance_norm: each plane (image, channel) normalised by its own mean and biased variance, then scaled and
// shifted per channel and activated (corgy::Backend::instance_norm). One workgroup per plane: its threads sum
// the plane in shared memory twice (the mean, then the squared deviations from it), then write the plane.
#extension GL_GOOGLE_include_directive : require
#include "activation_functions.glsl"

layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer Input { float input_data[]; };
layout(binding = 1) readonly buffer Scale { float scale[]; };
layout(binding = 2) readonly buffer Shift { float shift[]; };
layout(binding = 3) writeonly buffer Output { float output_data[]; };

// Mirrors corgy::vulkan::InstanceNormParams.
layout(push_constant) uniform Params {
  uint planes;  // images * channels
  uint channels;
  uint plane;   // height * width
  float epsilon;
  uint activation;
  float slope;
} p;

#include "workgroup_sum.glsl"

void main() {
  const uint t = gl_LocalInvocationID.x;
  // Grid-stride over planes: the dispatch is capped at the device's workgroup-count limit.
  for (uint plane_index = gl_WorkGroupID.x; plane_index < p.planes; plane_index += gl_NumWorkGroups.x) {
    const uint base = plane_index * p.plane;
    float sum = 0.0;
    for (uint i = t; i < p.plane; i += 256) sum += input_data[base + i];
    const float mean = workgroup_sum(sum) / float(p.plane);
    float squares = 0.0;
    for (uint i = t; i < p.plane; i += 256) {
      const float deviation = input_data[base + i] - mean;
      squares += deviation * deviation;
    }
    const float variance = workgroup_sum(squares) / float(p.plane);
    const uint channel = plane_index % p.channels;
    const float factor = scale[channel] * inversesqrt(variance + p.epsilon);
    for (uint i = t; i < p.plane; i += 256) {
      output_data[base + i] = activate(p.activation, p.slope, (input_data[base + i] - mean) * factor + shift[channel]);
    }
  }
}
