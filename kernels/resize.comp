#version 450
// resize: every plane resized by nearest, bilinear or bicubic interpolation (corgy::ResizeDesc). Each thread computes
// one output value: the input coordinate along each axis (ONNX Resize's coordinate_transformation_mode, in float32 as
// the CPU backends compute it: `precise`, so that nearest picks the same pixel), the taps and weights along each
// axis, and the weighted sum of the taps' pixels.
layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer Input { float input_data[]; };
layout(binding = 1) writeonly buffer Output { float output_data[]; };

// corgy::ResizeMode, corgy::ResizeCoordinates and corgy::NearestRounding.
const uint MODE_NEAREST = 0;
const uint MODE_LINEAR = 1;
const uint MODE_CUBIC = 2;
const uint HALF_PIXEL = 0;
const uint PYTORCH_HALF_PIXEL = 1;
const uint ALIGN_CORNERS = 2;
const uint ASYMMETRIC = 3;
const uint TF_HALF_PIXEL_FOR_NN = 4;
const uint ROUND_PREFER_FLOOR = 0;
const uint ROUND_PREFER_CEIL = 1;
const uint FLOOR = 2;
const uint CEIL = 3;

// Mirrors corgy::vulkan::ResizeParams.
layout(push_constant) uniform Params {
  uint count;  // output values
  uint height;
  uint width;
  uint out_height;
  uint out_width;
  uint mode;
  uint coordinates;
  uint rounding;
  uint exclude_outside;
  float scale_h;
  float scale_w;
  float cubic_a;
} p;

// The input cells one output cell reads along an axis, with their weights.
struct Taps {
  int count;
  ivec4 index;
  vec4 weight;
};

float source_coordinate(uint x, float scale, uint size, uint out_size) {
  precise float fx = float(x);
  precise float s = 0.0;
  if (p.coordinates == HALF_PIXEL || (p.coordinates == PYTORCH_HALF_PIXEL && out_size > 1)) {
    s = (fx + 0.5) / scale - 0.5;
  } else if (p.coordinates == ALIGN_CORNERS && out_size > 1) {
    s = fx * float(size - 1) / float(out_size - 1);
  } else if (p.coordinates == ASYMMETRIC) {
    s = fx / scale;
  } else if (p.coordinates == TF_HALF_PIXEL_FOR_NN) {
    s = (fx + 0.5) / scale;
  }
  return s;
}

float cubic_weight(float d) {
  const float a = p.cubic_a;
  d = abs(d);
  if (d <= 1.0) return ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0;
  if (d < 2.0) return ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a;
  return 0.0;
}

Taps taps_of(uint x, float scale, uint size, uint out_size) {
  const float s = source_coordinate(x, scale, size, out_size);
  const int last = int(size) - 1;
  Taps t;
  t.index = ivec4(0);
  t.weight = vec4(0.0);
  if (p.mode == MODE_NEAREST) {
    const float below = floor(s);
    const bool tie = s == below + 0.5;
    float rounded = below;
    if (p.rounding == ROUND_PREFER_FLOOR) {
      rounded = tie ? below : round(s);
    } else if (p.rounding == ROUND_PREFER_CEIL) {
      rounded = tie ? ceil(s) : round(s);
    } else if (p.rounding == CEIL) {
      rounded = ceil(s);
    }
    t.count = 1;
    t.index.x = int(clamp(rounded, 0.0, float(last)));
    t.weight.x = 1.0;
  } else if (p.mode == MODE_LINEAR) {
    const float c = clamp(s, 0.0, float(last));
    const int first = int(floor(c));
    const float fraction = c - float(first);
    t.count = 2;
    t.index.xy = ivec2(first, min(first + 1, last));
    t.weight.xy = vec2(1.0 - fraction, fraction);
  } else {
    const float below = floor(s);
    const float fraction = s - below;
    const int first = int(below) - 1;
    float total = 0.0;
    t.count = 4;
    for (int k = 0; k < 4; ++k) {
      const int i = first + k;
      const bool outside = i < 0 || i > last;
      t.index[k] = clamp(i, 0, last);
      t.weight[k] = p.exclude_outside != 0 && outside ? 0.0 : cubic_weight(fraction + 1.0 - float(k));
      total += t.weight[k];
    }
    if (p.exclude_outside != 0) t.weight /= total;
  }
  return t;
}

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    const uint x = i % p.out_width;
    const uint y = (i / p.out_width) % p.out_height;
    const uint plane = i / (p.out_width * p.out_height);
    const Taps rows = taps_of(y, p.scale_h, p.height, p.out_height);
    const Taps cols = taps_of(x, p.scale_w, p.width, p.out_width);
    const uint base = plane * p.height * p.width;
    float sum = 0.0;
    for (int r = 0; r < rows.count; ++r) {
      float row_sum = 0.0;
      for (int c = 0; c < cols.count; ++c) {
        row_sum += cols.weight[c] * input_data[base + uint(rows.index[r]) * p.width + uint(cols.index[c])];
      }
      sum += rows.weight[r] * row_sum;
    }
    output_data[i] = sum;
  }
}
