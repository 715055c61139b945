#include "corgy/segment/class_mask.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "corgy/error.h"
#include "corgy/io/image.h"

namespace corgy {

ClassMask argmax_class_mask(const Variable& scores, int n, const std::string& source) {
  const Shape& s = scores.shape();
  if (scores.empty() || s.c < 2 || s.c > mask_void_class || n < 0 || n >= s.n) {
    throw Error(
        fmt::format("{}: a class mask needs scores (N, K, H, W) with 2 <= K <= {} classes and image {} of N, got {}",
                    source, mask_void_class, n, s.str()));
  }
  ClassMask mask{.width = s.w, .height = s.h, .classes = std::vector<std::uint8_t>(s.plane_count())};
  const std::size_t plane = s.plane_count();
  const float* image = scores.data() + static_cast<std::size_t>(n) * s.c * plane;
  for (std::size_t i = 0; i < plane; ++i) {
    int best = 0;
    for (int k = 1; k < s.c; ++k) {
      if (image[k * plane + i] > image[static_cast<std::size_t>(best) * plane + i]) best = k;
    }
    mask.classes[i] = static_cast<std::uint8_t>(best);
  }
  return mask;
}

namespace {

void check_mask(const ClassMask& mask, const std::string& source) {
  if (mask.width <= 0 || mask.height <= 0 ||
      mask.classes.size() != static_cast<std::size_t>(mask.width) * static_cast<std::size_t>(mask.height)) {
    throw Error(fmt::format("{}: a class mask of {} x {} needs {} classes, got {}", source, mask.width, mask.height,
                            static_cast<std::size_t>(std::max(mask.width, 0)) * std::max(mask.height, 0),
                            mask.classes.size()));
  }
}

}  // namespace

ClassMask class_mask_on_image(const ClassMask& mask, const PreprocessGeometry& g) {
  check_mask(mask, "class_mask_on_image");
  if (g.image_width <= 0 || g.image_height <= 0 || g.resized_width <= 0 || g.resized_height <= 0 || g.crop_width <= 0 ||
      g.crop_height <= 0) {
    throw Error(fmt::format(
        "class_mask_on_image: the geometry's sizes must be positive, got image {} x {}, resized {} x {}, crop {} x {}",
        g.image_width, g.image_height, g.resized_width, g.resized_height, g.crop_width, g.crop_height));
  }
  // One axis: the image pixel's centre in the resized image, then in the crop, then the mask cell it falls in;
  // -1 outside the crop. In double, in this order (tests compute the same).
  const auto cells = [](int image_size, int resized_size, int crop_offset, int crop_size, int mask_size) {
    std::vector<int> cell(static_cast<std::size_t>(image_size));
    for (int x = 0; x < image_size; ++x) {
      const double in_crop = (x + 0.5) * resized_size / image_size - crop_offset;
      if (in_crop < 0.0 || in_crop >= crop_size) {
        cell[static_cast<std::size_t>(x)] = -1;
        continue;
      }
      const auto index = static_cast<int>(std::floor(in_crop * mask_size / crop_size));
      cell[static_cast<std::size_t>(x)] = std::min(index, mask_size - 1);
    }
    return cell;
  };
  const std::vector<int> columns = cells(g.image_width, g.resized_width, g.crop_x, g.crop_width, mask.width);
  const std::vector<int> rows = cells(g.image_height, g.resized_height, g.crop_y, g.crop_height, mask.height);
  ClassMask out{.width = g.image_width,
                .height = g.image_height,
                .classes = std::vector<std::uint8_t>(static_cast<std::size_t>(g.image_width) * g.image_height)};
  for (int y = 0; y < g.image_height; ++y) {
    const int row = rows[static_cast<std::size_t>(y)];
    for (int x = 0; x < g.image_width; ++x) {
      const int column = columns[static_cast<std::size_t>(x)];
      out.classes[static_cast<std::size_t>(y) * g.image_width + x] =
          row < 0 || column < 0 ? static_cast<std::uint8_t>(mask_void_class)
                                : mask.classes[static_cast<std::size_t>(row) * mask.width + column];
    }
  }
  return out;
}

std::array<std::uint8_t, 3> voc_color(int index) {
  // The PASCAL VOC development kit's labelcolormap: bit j of the index goes to bit 7 - j / 3 of R, G or B.
  std::array<int, 3> rgb{};
  for (int bit = 0; bit < 8; ++bit) {
    for (int channel = 0; channel < 3; ++channel) {
      rgb[static_cast<std::size_t>(channel)] |= ((index >> (3 * bit + channel)) & 1) << (7 - bit);
    }
  }
  return {static_cast<std::uint8_t>(rgb[0]), static_cast<std::uint8_t>(rgb[1]), static_cast<std::uint8_t>(rgb[2])};
}

std::vector<std::uint8_t> class_mask_rgb(const ClassMask& mask, const std::string& source) {
  check_mask(mask, source);
  std::vector<std::uint8_t> rgb(mask.classes.size() * 3);
  for (std::size_t i = 0; i < mask.classes.size(); ++i) {
    const std::array<std::uint8_t, 3> color = voc_color(mask.classes[i]);
    std::copy(color.begin(), color.end(), rgb.begin() + static_cast<std::ptrdiff_t>(3 * i));
  }
  return rgb;
}

void save_class_mask_png(const std::string& path, const ClassMask& mask) {
  // save_png writes round(value * 255), which gives back each 8-bit colour exactly.
  save_png(path, image_from_pixels(class_mask_rgb(mask, path), mask.width, mask.height, 3, path));
}

}  // namespace corgy
