#include "corgy/models/tiny_face_detector.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "corgy/detect/nms.h"
#include "corgy/error.h"
#include "corgy/layers/conv2d.h"
#include "corgy/layers/maxpool2d.h"

namespace corgy {

namespace {

// Channels of conv0 and of the five separable convolutions' outputs (TinyFaceDetector's filterSizes).
constexpr std::array<int, 6> widths = {16, 32, 64, 128, 256, 512};
constexpr int anchor_count = static_cast<int>(tiny_face_anchors.size() / 2);
constexpr int box_entries = 5;  // x, y, w, h, score
static_assert(anchor_count * box_entries == tiny_face_output_channels);

// Layer indices in build_tiny_face_detector(): conv0, pool, then (depthwise, pointwise, pool) per separable conv.
constexpr int conv0_layer = 0;
constexpr int depthwise_layer(int k) { return 2 + 3 * (k - 1); }
constexpr int conv8_layer = depthwise_layer(6);

// face-api's leaky(): relu(x - 0.1x) + 0.1x with 0.1 as float32, i.e. leaky ReLU with slope 0.1f.
const Activation leaky = Activation::leaky_relu(0.1f);

void check_input_size(int input_size) {
  if (input_size <= 0 || input_size % 32 != 0) {
    throw Error(
        fmt::format("tiny face detector: the input size must be a positive multiple of 32, got {}", input_size));
  }
}

// Where output pixel i of `size` samples a source axis of `side` cells under tf.image.resizeBilinear with
// align_corners and half_pixel_centers off (tfjs-backend-cpu ResizeBilinear.ts): position i * side / size, between
// cells floor and ceil (clamped to the axis), in double as JavaScript computes it.
struct Tap {
  int low = 0;
  int high = 0;
  double fraction = 0.0;
};

std::vector<Tap> resize_taps(int side, int size) {
  std::vector<Tap> taps(size);
  const double ratio = static_cast<double>(side) / size;
  for (int i = 0; i < size; ++i) {
    const double position = ratio * i;
    taps[i].low = static_cast<int>(std::floor(position));
    taps[i].high = std::min(side - 1, static_cast<int>(std::ceil(position)));
    taps[i].fraction = position - taps[i].low;
  }
  return taps;
}

// Row y of one channel of the image padded with zeros to side x side, values x 255.
void padded_row(const float* plane, int height, int width, int y, std::vector<double>& row) {
  std::fill(row.begin(), row.end(), 0.0);
  if (y >= height) return;
  const float* source = plane + static_cast<std::size_t>(y) * width;
  for (int x = 0; x < width; ++x) row[x] = static_cast<double>(source[x]) * 255.0;
}

// face-api's resizeBilinear of one channel of the padded square to size x size.
void resize_padded_channel(const float* plane, int height, int width, int side, int size, float* out) {
  const std::vector<Tap> taps = resize_taps(side, size);
  std::vector<double> top_row(side);
  std::vector<double> bottom_row(side);
  for (int r = 0; r < size; ++r) {
    const Tap& v = taps[r];
    padded_row(plane, height, width, v.low, top_row);
    padded_row(plane, height, width, v.high, bottom_row);
    for (int c = 0; c < size; ++c) {
      const Tap& h = taps[c];
      const double top = top_row[h.low] + (top_row[h.high] - top_row[h.low]) * h.fraction;
      const double bottom = bottom_row[h.low] + (bottom_row[h.high] - bottom_row[h.low]) * h.fraction;
      out[static_cast<std::size_t>(r) * size + c] = static_cast<float>(top + (bottom - top) * v.fraction);
    }
  }
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

void check_raw(const Variable& raw, int batch_index) {
  const Shape& s = raw.shape();
  if (raw.empty() || s.c != tiny_face_output_channels || s.h != s.w) {
    throw Error(fmt::format("decode_faces: expects the detector's output (N, {}, G, G), got {}",
                            tiny_face_output_channels, s.str()));
  }
  if (batch_index < 0 || batch_index >= s.n) {
    throw Error(fmt::format("decode_faces: batch index {} is outside the batch of {}", batch_index, s.n));
  }
}

}  // namespace

Sequential build_tiny_face_detector() {
  Sequential model;
  const PoolOptions halve{.kernel = 2, .stride = 2, .same = true};
  model.add(Conv2d({.in_channels = 3, .out_channels = widths[0], .kernel = 3, .padding = 0, .activation = leaky}));
  model.add(MaxPool2d(halve));
  for (int k = 1; k < static_cast<int>(widths.size()); ++k) {
    const int in = widths[k - 1];
    model.add(Conv2d({.in_channels = in, .out_channels = in, .kernel = 3, .padding = 1, .groups = in, .bias = false}));
    model.add(Conv2d({.in_channels = in, .out_channels = widths[k], .kernel = 1, .activation = leaky}));
    const bool last = k + 1 == static_cast<int>(widths.size());
    model.add(MaxPool2d(last ? PoolOptions{.kernel = 2, .stride = 1, .same = true} : halve));
  }
  model.add(Conv2d({.in_channels = widths.back(), .out_channels = tiny_face_output_channels, .kernel = 1}));
  return model;
}

void load_tiny_face_detector_weights(Sequential& model, const TfjsWeights& weights) {
  load_tfjs_conv(model.layer_as<Conv2d>(conv0_layer), weights, "conv0/filters", "conv0/bias");
  for (int k = 1; k < static_cast<int>(widths.size()); ++k) {
    const std::string prefix = fmt::format("conv{}/", k);
    load_tfjs_conv(model.layer_as<Conv2d>(depthwise_layer(k)), weights, prefix + "depthwise_filter", "");
    load_tfjs_conv(model.layer_as<Conv2d>(depthwise_layer(k) + 1), weights, prefix + "pointwise_filter",
                   prefix + "bias");
  }
  load_tfjs_conv(model.layer_as<Conv2d>(conv8_layer), weights, "conv8/filters", "conv8/bias");
  model.weights_changed();
}

Sequential load_tiny_face_detector(const std::string& manifest_path) {
  Sequential model = build_tiny_face_detector();
  load_tiny_face_detector_weights(model, TfjsWeights::load(manifest_path));
  return model;
}

Variable tiny_face_input(const Variable& image, int input_size) {
  check_input_size(input_size);
  const Shape& s = image.shape();
  if (image.empty() || s.n != 1 || (s.c != 3 && s.c != 4)) {
    throw Error(fmt::format("tiny_face_input: expects an RGB or RGBA image (1, 3 or 4, H, W), got {}", s.str()));
  }
  const int side = std::max(s.h, s.w);
  const std::size_t plane = static_cast<std::size_t>(input_size) * input_size;
  Variable input(Shape{1, 3, input_size, input_size});
  for (int c = 0; c < 3; ++c) {
    float* out = input.data() + c * plane;
    resize_padded_channel(image.data() + c * s.plane_count(), s.h, s.w, side, input_size, out);
    // normalize() then div(255), each rounded to float32 as TensorFlow.js does.
    for (std::size_t i = 0; i < plane; ++i) out[i] = (out[i] - tiny_face_mean_rgb[c]) / 255.0f;
  }
  return input;
}

std::vector<LabeledBox> decode_faces(const Variable& raw, int batch_index, int image_width, int image_height,
                                     const FaceDetectorOptions& options) {
  check_raw(raw, batch_index);
  check_input_size(options.input_size);
  if (image_width <= 0 || image_height <= 0) {
    throw Error(fmt::format("decode_faces: the image size must be positive, got {} x {}", image_width, image_height));
  }
  const int grid = raw.shape().w;
  const std::size_t plane = raw.shape().plane_count();
  const float* planes = raw.data() + static_cast<std::size_t>(batch_index) * raw.shape().image_count();
  // The image covers round(width * size / side) x round(height * size / side) of the padded square
  // (computeReshapedDimensions); these factors turn square-relative coordinates into image-relative ones.
  const double scale = static_cast<double>(options.input_size) / std::max(image_width, image_height);
  const float to_image_x = static_cast<float>(options.input_size / std::round(image_width * scale));
  const float to_image_y = static_cast<float>(options.input_size / std::round(image_height * scale));
  const float cells = static_cast<float>(grid);
  std::vector<Detection> candidates;
  for (std::size_t cell = 0; cell < plane; ++cell) {
    const float row = static_cast<float>(cell / grid);
    const float col = static_cast<float>(cell % grid);
    for (int a = 0; a < anchor_count; ++a) {
      const float* entry = planes + static_cast<std::size_t>(a) * box_entries * plane + cell;
      const float score = sigmoid(entry[4 * plane]);
      if (score <= options.score_threshold) continue;
      Detection d;
      d.box.x = (col + sigmoid(entry[0])) / cells * to_image_x * static_cast<float>(image_width);
      d.box.y = (row + sigmoid(entry[plane])) / cells * to_image_y * static_cast<float>(image_height);
      d.box.w =
          std::exp(entry[2 * plane]) * tiny_face_anchors[2 * a] / cells * to_image_x * static_cast<float>(image_width);
      d.box.h = std::exp(entry[3 * plane]) * tiny_face_anchors[2 * a + 1] / cells * to_image_y *
                static_cast<float>(image_height);
      d.objectness = score;
      d.probabilities = {score};
      candidates.push_back(std::move(d));
    }
  }
  nms_per_class(candidates, options.iou_threshold);
  return labeled_boxes(candidates, options.score_threshold);
}

std::vector<LabeledBox> detect_faces(Sequential& model, const Variable& image, const FaceDetectorOptions& options) {
  const Variable input = tiny_face_input(image, options.input_size);
  return decode_faces(model.forward(input), 0, image.shape().w, image.shape().h, options);
}

}  // namespace corgy
