#include "corgy/io/raw_weights.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <fstream>

#include "corgy/error.h"
#include "corgy/io/mapped_file.h"

namespace corgy {

namespace {

static_assert(std::endian::native == std::endian::little, "raw weight files are little-endian float32");

/// The file's floats when it holds exactly `count` of them; otherwise a corgy::Error naming the file, the layer,
/// what it should hold (`contents`, e.g. "weights OHWI (32, 5, 5, 1)") and both sizes in bytes.
std::span<const float> exact_floats(const MappedFile& file, std::size_t count, const Layer& layer,
                                    const std::string& contents) {
  const std::size_t expected = count * sizeof(float);
  const std::size_t actual = file.size();
  if (actual != expected) {
    const std::string difference = actual < expected ? fmt::format("{} bytes short: truncated?", expected - actual)
                                                     : fmt::format("{} bytes too many", actual - expected);
    throw Error(fmt::format("{}: the {} of {} must be {} bytes ({} float32 values), the file has {} bytes ({})",
                            file.path(), contents, layer.describe(), expected, count, actual, difference));
  }
  // mmap returns a page-aligned address, so the floats are aligned.
  return {reinterpret_cast<const float*>(file.bytes().data()), count};
}

/// target[o][i][y][x] = source[o][y][x][i] for `outputs` blocks of (inputs, height, width).
void ohwi_to_oihw(std::span<const float> source, int outputs, int inputs, int height, int width, float* target) {
  const std::size_t plane = static_cast<std::size_t>(height) * width;
  const std::size_t block = plane * inputs;
  for (std::size_t o = 0; o < static_cast<std::size_t>(outputs); ++o) {
    const float* from = source.data() + o * block;
    float* to = target + o * block;
    for (std::size_t p = 0; p < plane; ++p) {
      for (std::size_t i = 0; i < static_cast<std::size_t>(inputs); ++i) to[i * plane + p] = from[p * inputs + i];
    }
  }
}

std::string dims(std::initializer_list<int> values) { return fmt::format("({})", fmt::join(values, ", ")); }

}  // namespace

std::string layout_name(ConvWeightLayout layout) { return layout == ConvWeightLayout::oihw ? "OIHW" : "OHWI"; }

std::string layout_name(LinearWeightLayout layout) {
  return layout == LinearWeightLayout::out_by_in ? "[out][in]" : "OHWI (a conv over the whole input)";
}

void load_raw_weights(Conv2d& conv, const std::string& path, ConvWeightLayout layout) {
  const Conv2dDesc& d = conv.desc();
  const int inputs = d.in_channels / d.groups;
  const Conv2dWindow w = d.window();
  const std::string shape = layout == ConvWeightLayout::oihw ? dims({d.out_channels, inputs, w.kernel_h, w.kernel_w})
                                                             : dims({d.out_channels, w.kernel_h, w.kernel_w, inputs});
  const MappedFile file(path, "raw weights");
  const std::span<const float> values =
      exact_floats(file, conv.weights().count(), conv, fmt::format("weights {} {}", layout_name(layout), shape));
  if (layout == ConvWeightLayout::oihw) {
    std::copy(values.begin(), values.end(), conv.weights().data());
  } else {
    ohwi_to_oihw(values, d.out_channels, inputs, w.kernel_h, w.kernel_w, conv.weights().data());
  }
}

void load_raw_weights(Linear& linear, const std::string& path, LinearWeightLayout layout, const Shape& input) {
  const LinearOptions& o = linear.options();
  if (layout == LinearWeightLayout::out_by_in) {
    const MappedFile file(path, "raw weights");
    const std::span<const float> values =
        exact_floats(file, linear.weights().count(), linear,
                     fmt::format("weights [out][in] {}", dims({o.out_features, o.in_features})));
    std::copy(values.begin(), values.end(), linear.weights().data());
    return;
  }
  if (input.c <= 0 || input.h <= 0 || input.w <= 0 || input.image_count() != static_cast<std::size_t>(o.in_features)) {
    throw Error(fmt::format("{}: {} weights need the input's shape (1, C, H, W) with C*H*W = {}, got {}", path,
                            linear.describe(), o.in_features, input.str()));
  }
  const MappedFile file(path, "raw weights");
  const std::span<const float> values = exact_floats(
      file, linear.weights().count(), linear,
      fmt::format("weights OHWI {} (a conv over the whole input)", dims({o.out_features, input.h, input.w, input.c})));
  ohwi_to_oihw(values, o.out_features, input.c, input.h, input.w, linear.weights().data());
}

void load_raw_bias(Conv2d& conv, const std::string& path) {
  const MappedFile file(path, "raw bias");
  const int outputs = conv.desc().out_channels;
  conv.set_bias(exact_floats(file, static_cast<std::size_t>(outputs), conv, fmt::format("bias ({})", outputs)));
}

void load_raw_bias(Linear& linear, const std::string& path) {
  const MappedFile file(path, "raw bias");
  const int outputs = linear.options().out_features;
  linear.set_bias(exact_floats(file, static_cast<std::size_t>(outputs), linear, fmt::format("bias ({})", outputs)));
}

void save_raw(const std::string& path, std::span<const float> values) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size_bytes()));
  file.close();
  if (!file) throw Error(fmt::format("{}: cannot write the raw weights", path));
}

}  // namespace corgy
