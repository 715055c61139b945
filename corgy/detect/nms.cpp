#include "corgy/detect/nms.h"

#include <fmt/format.h>

#include <algorithm>

#include "corgy/error.h"

namespace corgy {

void nms_per_class(std::vector<Detection>& detections, float iou_threshold) {
  if (detections.empty()) return;
  const std::size_t classes = detections[0].probabilities.size();
  for (const Detection& d : detections) {
    if (d.probabilities.size() != classes) {
      throw Error(fmt::format("nms: detections have {} and {} class probabilities", classes, d.probabilities.size()));
    }
  }
  std::vector<std::size_t> order;
  for (std::size_t k = 0; k < classes; ++k) {
    order.clear();
    for (std::size_t i = 0; i < detections.size(); ++i) {
      if (detections[i].probabilities[k] > 0) order.push_back(i);
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return detections[a].probabilities[k] > detections[b].probabilities[k];
    });
    for (std::size_t i = 0; i < order.size(); ++i) {
      const Detection& kept = detections[order[i]];
      if (kept.probabilities[k] == 0) continue;  // suppressed by a more probable box
      for (std::size_t j = i + 1; j < order.size(); ++j) {
        Detection& other = detections[order[j]];
        if (box_iou(kept.box, other.box) > iou_threshold) other.probabilities[k] = 0;
      }
    }
  }
}

std::vector<LabeledBox> labeled_boxes(const std::vector<Detection>& detections, float threshold) {
  std::vector<LabeledBox> boxes;
  for (const Detection& d : detections) {
    for (std::size_t k = 0; k < d.probabilities.size(); ++k) {
      if (d.probabilities[k] > threshold) boxes.push_back({d.box, static_cast<int>(k), d.probabilities[k]});
    }
  }
  std::stable_sort(boxes.begin(), boxes.end(),
                   [](const LabeledBox& a, const LabeledBox& b) { return a.probability > b.probability; });
  return boxes;
}

}  // namespace corgy
