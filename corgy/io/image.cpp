#include "corgy/io/image.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <memory>
#include <vector>

#include "corgy/error.h"
#include "corgy/io/jpeg_check.h"
#include "corgy/io/mapped_file.h"
#include "corgy/io/pnm_check.h"

// The implementations are compiled here, once, with internal linkage so they never clash with another copy of stb
// in the application. Debian's libstb-dev installs the headers under /usr/include/stb.
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

namespace corgy {

namespace {

void check_image(const char* what, const Variable& image) {
  const Shape& s = image.shape();
  if (image.empty() || s.n != 1) {
    throw Error(fmt::format("{}: expects an image (1, C, H, W), got {}", what, s.str()));
  }
}

}  // namespace

Variable load_image(const std::string& path, int channels, const LoadLimits& limits) {
  if (channels < 1 || channels > 4) throw Error(fmt::format("{}: cannot read an image as {} channels", path, channels));
  const MappedFile file(path, "image");
  return decode_image(file.bytes(), path, channels, limits);
}

Variable decode_image(std::span<const std::byte> bytes, const std::string& source, int channels,
                      const LoadLimits& limits) {
  if (channels < 1 || channels > 4) {
    throw Error(fmt::format("{}: cannot read an image as {} channels", source, channels));
  }
  if (bytes.size() > INT_MAX) {
    throw Error(
        fmt::format("{}: cannot read the image: {} bytes is more than stb_image reads (2 GiB)", source, bytes.size()));
  }
  const auto* data = reinterpret_cast<const stbi_uc*>(bytes.data());
  const int length = static_cast<int>(bytes.size());
  int width = 0;
  int height = 0;
  int file_channels = 0;
  // Before stb: its JPEG reader overflows on Huffman tables of too many codes, its PNM reader on long numbers.
  check_jpeg_huffman_tables(bytes, source);
  check_pnm_header_numbers(bytes, source);
  // The header's size, checked before stb allocates the pixels (and this function their floats).
  if (stbi_info_from_memory(data, length, &width, &height, &file_channels) == 0) {
    throw Error(fmt::format("{}: cannot read the image: {}", source, stbi_failure_reason()));
  }
  // Debian 12's stb_image reads a 16-bit PNM's samples in the wrong byte order, and when it converts them to another
  // number of channels it reads twice the bytes it wrote (a heap overflow that fuzz_image found).
  const bool pnm = length >= 2 && data[0] == 'P' && (data[1] == '5' || data[1] == '6');
  if (pnm && stbi_is_16_bit_from_memory(data, length) != 0) {
    throw Error(
        fmt::format("{}: cannot read the image: 16-bit PNM files (maxval above 255) are not supported; "
                    "convert it to 8 bits or to PNG",
                    source));
  }
  check_tensor_bytes(limits, source, fmt::format("the image ({} x {} pixels, {} channels)", width, height, channels),
                     float32_bytes({width, height, channels}));
  const std::unique_ptr<stbi_uc, void (*)(void*)> pixels(
      stbi_load_from_memory(data, length, &width, &height, &file_channels, channels), stbi_image_free);
  if (!pixels) throw Error(fmt::format("{}: cannot read the image: {}", source, stbi_failure_reason()));
  const auto count = static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * channels;
  return image_from_pixels({pixels.get(), count}, width, height, channels, source);
}

Variable image_from_pixels(std::span<const std::uint8_t> pixels, int width, int height, int channels,
                           const std::string& source) {
  if (width <= 0 || height <= 0 || channels < 1 || channels > 4) {
    throw Error(fmt::format("{}: an image of {} x {} pixels and {} channels (1 to 4) cannot be made", source, width,
                            height, channels));
  }
  const std::size_t plane = static_cast<std::size_t>(width) * static_cast<std::size_t>(height);
  if (pixels.size() != plane * static_cast<std::size_t>(channels)) {
    throw Error(fmt::format("{}: {} x {} pixels of {} channels are {} bytes, got {}", source, width, height, channels,
                            plane * static_cast<std::size_t>(channels), pixels.size()));
  }
  Variable image(Shape{1, channels, height, width});
  for (int c = 0; c < channels; ++c) {
    float* target = image.data() + c * plane;
    // Divided in double, as darknet's load_image_stb() does, for bit-identical inputs.
    for (std::size_t i = 0; i < plane; ++i) target[i] = static_cast<float>(pixels[i * channels + c] / 255.0);
  }
  return image;
}

void save_png(const std::string& path, const Variable& image) {
  check_image("save_png", image);
  const Shape& s = image.shape();
  if (s.c != 1 && s.c != 3 && s.c != 4) {
    throw Error(fmt::format("save_png: {}: expects 1, 3 or 4 channels, got {}", path, s.str()));
  }
  const std::size_t plane = s.plane_count();
  std::vector<unsigned char> pixels(plane * s.c);
  for (int c = 0; c < s.c; ++c) {
    const float* source = image.data() + c * plane;
    for (std::size_t i = 0; i < plane; ++i) {
      pixels[i * s.c + c] = static_cast<unsigned char>(std::clamp(source[i], 0.0f, 1.0f) * 255.0f + 0.5f);
    }
  }
  if (stbi_write_png(path.c_str(), s.w, s.h, s.c, pixels.data(), s.w * s.c) == 0) {
    throw Error(fmt::format("{}: cannot write the PNG", path));
  }
}

Variable resize_image(const Variable& image, int width, int height) {
  check_image("resize_image", image);
  if (width <= 0 || height <= 0) {
    throw Error(fmt::format("resize_image: target size {} x {} must be positive", width, height));
  }
  const Shape& s = image.shape();
  // Two passes as darknet's image.c does (horizontal into `part`, then vertical), for the same rounding.
  Variable part(Shape{1, s.c, s.h, width});
  Variable resized(Shape{1, s.c, height, width});
  // A one-row target takes the first row (darknet divides by zero there, and converting the NaN position it gets to
  // int is undefined); a one-column target takes the last column, as darknet's does.
  const float w_scale = width > 1 ? static_cast<float>(s.w - 1) / static_cast<float>(width - 1) : 0.0f;
  const float h_scale = height > 1 ? static_cast<float>(s.h - 1) / static_cast<float>(height - 1) : 0.0f;
  for (int c = 0; c < s.c; ++c) {
    for (int r = 0; r < s.h; ++r) {
      for (int x = 0; x < width; ++x) {
        if (x == width - 1 || s.w == 1) {
          part.at(0, c, r, x) = image.at(0, c, r, s.w - 1);
          continue;
        }
        const float sx = static_cast<float>(x) * w_scale;
        const int ix = static_cast<int>(sx);
        const float dx = sx - static_cast<float>(ix);
        part.at(0, c, r, x) = (1 - dx) * image.at(0, c, r, ix) + dx * image.at(0, c, r, ix + 1);
      }
    }
  }
  for (int c = 0; c < s.c; ++c) {
    for (int r = 0; r < height; ++r) {
      const float sy = static_cast<float>(r) * h_scale;
      const int iy = static_cast<int>(sy);
      const float dy = sy - static_cast<float>(iy);
      for (int x = 0; x < width; ++x) resized.at(0, c, r, x) = (1 - dy) * part.at(0, c, iy, x);
      if (r == height - 1 || s.h == 1) continue;
      for (int x = 0; x < width; ++x) resized.at(0, c, r, x) += dy * part.at(0, c, iy + 1, x);
    }
  }
  return resized;
}

Variable letterbox_image(const Variable& image, int width, int height) {
  check_image("letterbox_image", image);
  if (width <= 0 || height <= 0) {
    throw Error(fmt::format("letterbox_image: target size {} x {} must be positive", width, height));
  }
  const Shape& s = image.shape();
  int new_w = width;
  int new_h = height;
  if (static_cast<float>(width) / static_cast<float>(s.w) < static_cast<float>(height) / static_cast<float>(s.h)) {
    new_h = s.h * width / s.w;
  } else {
    new_w = s.w * height / s.h;
  }
  const Variable resized = resize_image(image, std::max(new_w, 1), std::max(new_h, 1));
  Variable boxed(Shape{1, s.c, height, width});
  boxed.fill(0.5f);
  const int dx = (width - resized.shape().w) / 2;
  const int dy = (height - resized.shape().h) / 2;
  for (int c = 0; c < s.c; ++c) {
    for (int y = 0; y < resized.shape().h; ++y) {
      for (int x = 0; x < resized.shape().w; ++x) boxed.at(0, c, y + dy, x + dx) = resized.at(0, c, y, x);
    }
  }
  return boxed;
}

}  // namespace corgy
