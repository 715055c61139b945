#include "corgy/detect/draw.h"

#include <fmt/format.h>
#include <stb/stb_easy_font.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "corgy/error.h"

namespace corgy {

namespace {

void check_rgb(const char* what, const Variable& image) {
  const Shape& s = image.shape();
  if (image.empty() || s.n != 1 || s.c != 3) {
    throw Error(fmt::format("{}: expects an RGB image (1, 3, H, W), got {}", what, s.str()));
  }
}

// Fills the pixels [x0, x1) x [y0, y1), clipped to the image.
void fill_rect(Variable& image, int x0, int y0, int x1, int y1, Color color) {
  const Shape& s = image.shape();
  x0 = std::max(x0, 0);
  y0 = std::max(y0, 0);
  x1 = std::min(x1, s.w);
  y1 = std::min(y1, s.h);
  const float rgb[3] = {color.r, color.g, color.b};
  for (int c = 0; c < 3; ++c) {
    for (int y = y0; y < y1; ++y) {
      for (int x = x0; x < x1; ++x) image.at(0, c, y, x) = rgb[c];
    }
  }
}

}  // namespace

Color class_color(int class_id, int classes) {
  static constexpr float palette[6][3] = {{1, 0, 1}, {0, 0, 1}, {0, 1, 1}, {0, 1, 0}, {1, 1, 0}, {1, 0, 0}};
  classes = std::max(classes, 1);
  const int offset = static_cast<int>(static_cast<long long>(class_id) * 123457 % classes);
  const auto component = [&](int channel) {
    const float ratio = static_cast<float>(offset) / static_cast<float>(classes) * 5;
    const int i = static_cast<int>(std::floor(ratio));
    const int j = static_cast<int>(std::ceil(ratio));
    const float t = ratio - static_cast<float>(i);
    return (1 - t) * palette[i][channel] + t * palette[j][channel];
  };
  return {component(2), component(1), component(0)};
}

void draw_box(Variable& image, const Box& box, Color color, int thickness) {
  check_rgb("draw_box", image);
  const int left = static_cast<int>(std::lround(box.left()));
  const int right = static_cast<int>(std::lround(box.right()));
  const int top = static_cast<int>(std::lround(box.top()));
  const int bottom = static_cast<int>(std::lround(box.bottom()));
  fill_rect(image, left, top, right + 1, top + thickness, color);
  fill_rect(image, left, bottom - thickness + 1, right + 1, bottom + 1, color);
  fill_rect(image, left, top, left + thickness, bottom + 1, color);
  fill_rect(image, right - thickness + 1, top, right + 1, bottom + 1, color);
}

void draw_label(Variable& image, int x, int y, const std::string& text, Color text_color, Color background, int scale) {
  check_rgb("draw_label", image);
  std::string printable = text;
  for (char& c : printable) {
    if (c < 32 || c > 126) c = '?';
  }
  const int margin = scale;
  fill_rect(image, x, y, x + stb_easy_font_width(printable.data()) * scale + 2 * margin,
            y + stb_easy_font_height(printable.data()) * scale + 2 * margin, background);
  // stb_easy_font builds each glyph from axis-aligned quads of 4 vertices of 16 bytes (x, y, z, colour).
  std::vector<char> vertices(printable.size() * 300 + 64);
  const int quads =
      stb_easy_font_print(0, 0, printable.data(), nullptr, vertices.data(), static_cast<int>(vertices.size()));
  for (int q = 0; q < quads; ++q) {
    float corner[2][2];
    for (int v = 0; v < 2; ++v) std::memcpy(corner[v], vertices.data() + (q * 4 + 2 * v) * 16, 2 * sizeof(float));
    fill_rect(image, x + margin + static_cast<int>(corner[0][0]) * scale,
              y + margin + static_cast<int>(corner[0][1]) * scale, x + margin + static_cast<int>(corner[1][0]) * scale,
              y + margin + static_cast<int>(corner[1][1]) * scale, text_color);
  }
}

void draw_detections(Variable& image, const std::vector<LabeledBox>& boxes, const std::vector<std::string>& names,
                     int classes) {
  check_rgb("draw_detections", image);
  // Darknet's line width: 0.6% of the image height.
  const int thickness = std::max(1, static_cast<int>(static_cast<float>(image.shape().h) * 0.006f));
  const int scale = image.shape().h >= 400 ? 2 : 1;
  for (const LabeledBox& b : boxes) {
    const Color color = class_color(b.class_id, classes);
    draw_box(image, b.box, color, thickness);
  }
  for (const LabeledBox& b : boxes) {
    const std::string name = b.class_id >= 0 && b.class_id < static_cast<int>(names.size())
                                 ? names[b.class_id]
                                 : fmt::format("class {}", b.class_id);
    const int label_height = 12 * scale + 2 * scale;  // stb_easy_font lines are 12 units high
    const int x = std::max(0, static_cast<int>(std::lround(b.box.left())));
    const int y = std::max(0, static_cast<int>(std::lround(b.box.top())) - label_height);
    draw_label(image, x, y, fmt::format("{} {:.0f}%", name, b.probability * 100), {0, 0, 0},
               class_color(b.class_id, classes), scale);
  }
}

}  // namespace corgy
