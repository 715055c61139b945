#include "corgy/detect/region.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "corgy/activation.h"
#include "corgy/error.h"

namespace corgy {

namespace {

void check_region_input(const RegionHead& head, const Variable& raw, int batch_index) {
  if (head.num <= 0 || head.classes <= 0 || head.anchors.size() != 2 * static_cast<std::size_t>(head.num)) {
    throw Error(
        fmt::format("region head: needs num > 0, classes > 0 and 2 * num anchor values; got num {}, "
                    "classes {}, {} anchor values",
                    head.num, head.classes, head.anchors.size()));
  }
  if (raw.shape().c != head.channels()) {
    throw Error(fmt::format("region head: expects (N, {}, H, W) = num {} x (5 + {} classes) channels, got {}",
                            head.channels(), head.num, head.classes, raw.shape().str()));
  }
  if (batch_index < 0 || batch_index >= raw.shape().n) {
    throw Error(fmt::format("region head: batch index {} is outside the batch of {}", batch_index, raw.shape().n));
  }
}

// Darknet's softmax (blas.c): subtract the largest score, exponentiate, normalise; `stride` apart in memory.
void softmax_scores(const float* scores, int count, std::size_t stride, std::vector<float>& out) {
  float largest = scores[0];
  for (int i = 1; i < count; ++i) largest = std::max(largest, scores[i * stride]);
  float sum = 0.0f;
  for (int i = 0; i < count; ++i) {
    out[i] = std::exp(scores[i * stride] - largest);
    sum += out[i];
  }
  for (float& value : out) value /= sum;
}

}  // namespace

std::vector<Detection> decode_region(const RegionHead& head, const Variable& raw, int batch_index, float threshold) {
  check_region_input(head, raw, batch_index);
  const Shape& s = raw.shape();
  const std::size_t plane = s.plane_count();
  const float* image = raw.data() + static_cast<std::size_t>(batch_index) * s.image_count();
  std::vector<Detection> detections;
  std::vector<float> class_probability(head.classes);
  for (std::size_t cell = 0; cell < plane; ++cell) {
    const int row = static_cast<int>(cell / s.w);
    const int col = static_cast<int>(cell % s.w);
    for (int n = 0; n < head.num; ++n) {
      const float* entry = image + static_cast<std::size_t>(n) * (5 + head.classes) * plane + cell;
      const float objectness = apply_activation(Activation::sigmoid(), entry[4 * plane]);
      if (objectness <= threshold) continue;
      Detection d;
      d.objectness = objectness;
      d.box.x = (static_cast<float>(col) + apply_activation(Activation::sigmoid(), entry[0])) / static_cast<float>(s.w);
      d.box.y =
          (static_cast<float>(row) + apply_activation(Activation::sigmoid(), entry[plane])) / static_cast<float>(s.h);
      d.box.w = std::exp(entry[2 * plane]) * head.anchors[2 * n] / static_cast<float>(s.w);
      d.box.h = std::exp(entry[3 * plane]) * head.anchors[2 * n + 1] / static_cast<float>(s.h);
      if (head.softmax) {
        softmax_scores(entry + 5 * plane, head.classes, plane, class_probability);
      } else {
        for (int j = 0; j < head.classes; ++j) class_probability[j] = entry[(5 + j) * plane];
      }
      d.probabilities.resize(head.classes);
      for (int j = 0; j < head.classes; ++j) {
        const float probability = objectness * class_probability[j];
        d.probabilities[j] = probability > threshold ? probability : 0.0f;
      }
      detections.push_back(std::move(d));
    }
  }
  return detections;
}

}  // namespace corgy
