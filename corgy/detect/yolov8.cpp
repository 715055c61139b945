#include "corgy/detect/yolov8.h"

#include <fmt/format.h>

#include "corgy/error.h"

namespace corgy {

std::vector<Detection> decode_yolov8(const Variable& output, int batch_index, int net_width, int net_height,
                                     float threshold) {
  const Shape& s = output.shape();
  if (output.empty() || s.c < 5) {
    throw Error(
        fmt::format("decode_yolov8: expects (N, 4 + classes, 1, anchors) with at least one class, got {}", s.str()));
  }
  if (batch_index < 0 || batch_index >= s.n) {
    throw Error(fmt::format("decode_yolov8: image {} of a batch of {}", batch_index, s.n));
  }
  if (net_width <= 0 || net_height <= 0) {
    throw Error(fmt::format("decode_yolov8: network input {} x {} must be positive", net_width, net_height));
  }
  const std::size_t anchors = static_cast<std::size_t>(s.h) * static_cast<std::size_t>(s.w);
  const int classes = s.c - 4;
  // Row r of the image's (4 + classes, anchors) block: the value of every anchor for one box coordinate or class.
  const float* image = output.data() + static_cast<std::size_t>(batch_index) * static_cast<std::size_t>(s.c) * anchors;
  const auto row = [&](int r) { return image + static_cast<std::size_t>(r) * anchors; };
  std::vector<Detection> found;
  for (std::size_t a = 0; a < anchors; ++a) {
    int best = 0;
    for (int k = 1; k < classes; ++k) {
      if (row(4 + k)[a] > row(4 + best)[a]) best = k;
    }
    const float score = row(4 + best)[a];
    if (!(score > threshold)) continue;
    Detection d;
    d.box = {row(0)[a] / static_cast<float>(net_width), row(1)[a] / static_cast<float>(net_height),
             row(2)[a] / static_cast<float>(net_width), row(3)[a] / static_cast<float>(net_height)};
    d.objectness = score;  // no objectness in this head: the best class score stands for it
    d.probabilities.assign(static_cast<std::size_t>(classes), 0.0f);
    d.probabilities[static_cast<std::size_t>(best)] = score;
    found.push_back(std::move(d));
  }
  return found;
}

}  // namespace corgy
