#include "corgy/detect/yolo.h"

#include <fmt/format.h>

#include <cmath>

#include "corgy/activation.h"
#include "corgy/error.h"

namespace corgy {

namespace {

void check_yolo_input(const YoloHead& head, const Variable& raw, int batch_index, int net_width, int net_height) {
  if (head.classes <= 0 || head.mask.empty() || head.anchors.size() % 2 != 0) {
    throw Error(
        fmt::format("yolo head: needs classes > 0, a non-empty mask and anchor pairs; got classes {}, "
                    "mask of {}, {} anchor values",
                    head.classes, head.mask.size(), head.anchors.size()));
  }
  for (int anchor : head.mask) {
    if (anchor < 0 || 2 * static_cast<std::size_t>(anchor) + 1 >= head.anchors.size()) {
      throw Error(
          fmt::format("yolo head: mask names anchor {}, but there are {} anchors", anchor, head.anchors.size() / 2));
    }
  }
  if (raw.shape().c != head.channels()) {
    throw Error(fmt::format("yolo head: expects (N, {}, H, W) = {} anchors x (5 + {} classes) channels, got {}",
                            head.channels(), head.mask.size(), head.classes, raw.shape().str()));
  }
  if (batch_index < 0 || batch_index >= raw.shape().n) {
    throw Error(fmt::format("yolo head: batch index {} is outside the batch of {}", batch_index, raw.shape().n));
  }
  if (net_width <= 0 || net_height <= 0) {
    throw Error(fmt::format("yolo head: network input size {} x {} must be positive", net_width, net_height));
  }
}

}  // namespace

std::vector<Detection> decode_yolo(const YoloHead& head, const Variable& raw, int batch_index, int net_width,
                                   int net_height, float threshold) {
  check_yolo_input(head, raw, batch_index, net_width, net_height);
  const Shape& s = raw.shape();
  const std::size_t plane = s.plane_count();
  const float* image = raw.data() + static_cast<std::size_t>(batch_index) * s.image_count();
  const auto logistic = [](float x) { return apply_activation(Activation::sigmoid(), x); };
  // AlexeyAB's scale_x_y stretches the logistic so that centres can reach the cell borders.
  const auto offset = [&](float x) { return logistic(x) * head.scale_x_y - (head.scale_x_y - 1.0f) / 2.0f; };
  std::vector<Detection> detections;
  for (std::size_t cell = 0; cell < plane; ++cell) {
    const int row = static_cast<int>(cell / s.w);
    const int col = static_cast<int>(cell % s.w);
    for (std::size_t n = 0; n < head.mask.size(); ++n) {
      const float* entry = image + n * (5 + head.classes) * plane + cell;
      const float objectness = logistic(entry[4 * plane]);
      if (objectness <= threshold) continue;
      const int anchor = head.mask[n];
      Detection d;
      d.objectness = objectness;
      d.box.x = (static_cast<float>(col) + offset(entry[0])) / static_cast<float>(s.w);
      d.box.y = (static_cast<float>(row) + offset(entry[plane])) / static_cast<float>(s.h);
      d.box.w = std::exp(entry[2 * plane]) * head.anchors[2 * anchor] / static_cast<float>(net_width);
      d.box.h = std::exp(entry[3 * plane]) * head.anchors[2 * anchor + 1] / static_cast<float>(net_height);
      d.probabilities.resize(head.classes);
      for (int j = 0; j < head.classes; ++j) {
        const float probability = objectness * logistic(entry[(5 + j) * plane]);
        d.probabilities[j] = probability > threshold ? probability : 0.0f;
      }
      detections.push_back(std::move(d));
    }
  }
  return detections;
}

}  // namespace corgy
