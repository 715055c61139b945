#include "corgy/io/image_preprocess.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "corgy/error.h"

namespace corgy {

namespace {

// One output cell of a half-pixel bilinear axis: the left (or top) source cell and the weight of the next one.
struct LinearTap {
  int source = 0;
  float next_weight = 0.0f;
};

// OpenCV's resize.cpp (resize, INTER_LINEAR): the source coordinate in float from a double scale, and at either edge
// one tap (weight 0 on a neighbour that does not exist), so edges repeat the border pixel.
std::vector<LinearTap> linear_taps(int in, int out) {
  const double scale = 1.0 / (static_cast<double>(out) / static_cast<double>(in));
  std::vector<LinearTap> taps(static_cast<std::size_t>(out));
  for (int x = 0; x < out; ++x) {
    const auto source = static_cast<float>((x + 0.5) * scale - 0.5);
    int cell = static_cast<int>(std::floor(source));
    float weight = source - static_cast<float>(cell);
    if (cell < 0) {
      cell = 0;
      weight = 0.0f;
    }
    if (cell >= in - 1) {
      cell = in - 1;
      weight = 0.0f;
    }
    taps[static_cast<std::size_t>(x)] = {cell, weight};
  }
  return taps;
}

// torchvision's center_crop offset: int(round((size - crop) / 2.0)), and Python's round takes halves to even, as
// std::nearbyint does in the default rounding mode.
int center_crop_offset(int size, int crop) { return static_cast<int>(std::nearbyint((size - crop) / 2.0)); }

void check_per_channel(const char* name, const std::vector<float>& values, int channels) {
  if (values.size() != 1 && values.size() != static_cast<std::size_t>(channels)) {
    throw Error(fmt::format("image preprocessing: {} takes 1 value or one per channel ({}), got {} ({})", name,
                            channels, values.size(), fmt::join(values, ", ")));
  }
}

}  // namespace

ImagePreprocess imagenet_preprocess() {
  ImagePreprocess options;
  options.resize_shorter = 256;
  options.crop_width = 224;
  options.crop_height = 224;
  options.scale = 1.0f / 255.0f;
  options.mean = {0.485f, 0.456f, 0.406f};
  options.std = {0.229f, 0.224f, 0.225f};
  return options;
}

void check_preprocess(const ImagePreprocess& options, int channels) {
  if (options.resize_shorter < 0 || options.resize_width < 0 || options.resize_height < 0 || options.crop_width < 0 ||
      options.crop_height < 0) {
    throw Error(fmt::format("image preprocessing: sizes must be positive (resize {} or {} x {}, crop {} x {})",
                            options.resize_shorter, options.resize_width, options.resize_height, options.crop_width,
                            options.crop_height));
  }
  if (options.resize_shorter > 0 && (options.resize_width > 0 || options.resize_height > 0)) {
    throw Error(fmt::format("image preprocessing: resize the shorter side to {} or to {} x {}, not both",
                            options.resize_shorter, options.resize_width, options.resize_height));
  }
  if ((options.resize_width > 0) != (options.resize_height > 0)) {
    throw Error(fmt::format("image preprocessing: an exact resize needs a width and a height, got {} x {}",
                            options.resize_width, options.resize_height));
  }
  if ((options.crop_width > 0) != (options.crop_height > 0)) {
    throw Error(fmt::format("image preprocessing: a crop needs a width and a height, got {} x {}", options.crop_width,
                            options.crop_height));
  }
  if (!std::isfinite(options.scale) || options.scale == 0.0f) {
    throw Error(fmt::format("image preprocessing: scale must be finite and not 0, got {}", options.scale));
  }
  check_per_channel("mean", options.mean, channels);
  check_per_channel("std", options.std, channels);
  for (float value : options.mean) {
    if (!std::isfinite(value)) throw Error(fmt::format("image preprocessing: mean {} is not finite", value));
  }
  for (float value : options.std) {
    if (!std::isfinite(value) || value == 0.0f) {
      throw Error(
          fmt::format("image preprocessing: std must be finite and not 0, got {}", fmt::join(options.std, ", ")));
    }
  }
  if (options.bgr && channels != 3) {
    throw Error(fmt::format("image preprocessing: BGR order needs 3 channels, the image has {}", channels));
  }
}

Variable resize_bilinear_half_pixel(const Variable& image, int width, int height) {
  const Shape& s = image.shape();
  if (image.empty() || s.n != 1) {
    throw Error(fmt::format("resize_bilinear_half_pixel: expects an image (1, C, H, W), got {}", s.str()));
  }
  if (width <= 0 || height <= 0) {
    throw Error(fmt::format("resize_bilinear_half_pixel: target size {} x {} must be positive", width, height));
  }
  const std::vector<LinearTap> columns = linear_taps(s.w, width);
  const std::vector<LinearTap> rows = linear_taps(s.h, height);
  // Horizontal pass into `part`, then vertical, each in float as OpenCV's HResizeLinear / VResizeLinear compute.
  Variable part(Shape{1, s.c, s.h, width});
  Variable resized(Shape{1, s.c, height, width});
  for (int c = 0; c < s.c; ++c) {
    for (int y = 0; y < s.h; ++y) {
      const float* source = image.data() + (static_cast<std::size_t>(c) * s.h + y) * s.w;
      float* target = &part.at(0, c, y, 0);
      for (int x = 0; x < width; ++x) {
        const LinearTap tap = columns[static_cast<std::size_t>(x)];
        const float next = tap.next_weight == 0.0f ? 0.0f : source[tap.source + 1] * tap.next_weight;
        target[x] = source[tap.source] * (1.0f - tap.next_weight) + next;
      }
    }
    for (int y = 0; y < height; ++y) {
      const LinearTap tap = rows[static_cast<std::size_t>(y)];
      const float* top = &part.at(0, c, tap.source, 0);
      const float* bottom = tap.next_weight == 0.0f ? top : top + width;
      float* target = &resized.at(0, c, y, 0);
      for (int x = 0; x < width; ++x) target[x] = top[x] * (1.0f - tap.next_weight) + bottom[x] * tap.next_weight;
    }
  }
  return resized;
}

PreprocessedImage preprocess_image(const Variable& image, const ImagePreprocess& options, const std::string& source) {
  const Shape& s = image.shape();
  if (image.empty() || s.n != 1) {
    throw Error(fmt::format("{}: preprocessing expects an image (1, C, H, W), got {}", source, s.str()));
  }
  try {
    check_preprocess(options, s.c);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", source, e.what()));
  }
  PreprocessGeometry geometry{.image_width = s.w, .image_height = s.h, .resized_width = s.w, .resized_height = s.h};
  if (options.resize_shorter > 0) {
    // torchvision's _compute_resized_output_size: the longer side truncated, as int() does.
    const int shorter = std::min(s.w, s.h);
    const int longer = std::max(s.w, s.h);
    const auto scaled = static_cast<int>(static_cast<long long>(options.resize_shorter) * longer / shorter);
    geometry.resized_width = s.w <= s.h ? options.resize_shorter : scaled;
    geometry.resized_height = s.w <= s.h ? scaled : options.resize_shorter;
  } else if (options.resize_width > 0) {
    geometry.resized_width = options.resize_width;
    geometry.resized_height = options.resize_height;
  }
  geometry.crop_width = options.crop_width > 0 ? options.crop_width : geometry.resized_width;
  geometry.crop_height = options.crop_height > 0 ? options.crop_height : geometry.resized_height;
  if (geometry.crop_width > geometry.resized_width || geometry.crop_height > geometry.resized_height) {
    throw Error(fmt::format("{}: cannot crop {} x {} out of the {} x {} image (resized from {} x {})", source,
                            geometry.crop_width, geometry.crop_height, geometry.resized_width, geometry.resized_height,
                            s.w, s.h));
  }
  geometry.crop_x = center_crop_offset(geometry.resized_width, geometry.crop_width);
  geometry.crop_y = center_crop_offset(geometry.resized_height, geometry.crop_height);

  // The 8-bit values (load_image's / 255 undone), so that scale, mean and std mean what they do in OpenCV.
  Variable pixels(s);
  for (std::size_t i = 0; i < image.count(); ++i) pixels.data()[i] = image.data()[i] * 255.0f;
  const bool resize = geometry.resized_width != s.w || geometry.resized_height != s.h;
  const Variable resized =
      resize ? resize_bilinear_half_pixel(pixels, geometry.resized_width, geometry.resized_height) : std::move(pixels);

  PreprocessedImage out{.tensor = Variable(Shape{1, s.c, geometry.crop_height, geometry.crop_width}),
                        .geometry = geometry};
  for (int c = 0; c < s.c; ++c) {
    const float mean = options.mean.size() == 1 ? options.mean[0] : options.mean[static_cast<std::size_t>(c)];
    const float std = options.std.size() == 1 ? options.std[0] : options.std[static_cast<std::size_t>(c)];
    const int target_channel = options.bgr ? s.c - 1 - c : c;
    for (int y = 0; y < geometry.crop_height; ++y) {
      const float* row =
          resized.data() +
          (static_cast<std::size_t>(c) * geometry.resized_height + geometry.crop_y + y) * geometry.resized_width +
          geometry.crop_x;
      float* target = &out.tensor.at(0, target_channel, y, 0);
      for (int x = 0; x < geometry.crop_width; ++x) target[x] = (row[x] * options.scale - mean) / std;
    }
  }
  return out;
}

}  // namespace corgy
