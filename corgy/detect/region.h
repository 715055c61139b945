// Decoding of darknet's [region] layer (YOLOv2): boxes relative to anchors given in grid cells.
#pragma once

#include <vector>

#include "corgy/detect/detection.h"
#include "corgy/variable.h"

namespace corgy {

/// The parameters of a [region] layer that matter at inference.
struct RegionHead {
  int classes = 20;
  /// Anchors (boxes predicted per grid cell).
  int num = 5;
  /// 2 * num values: width and height of each anchor, in grid cells.
  std::vector<float> anchors;
  /// Softmax over the class scores (darknet's softmax=1); otherwise the scores are used as they are.
  bool softmax = true;

  /// Channels of the raw input: num * (4 box + 1 objectness + classes).
  int channels() const { return num * (5 + classes); }
};

/// Decodes the raw input of a [region] layer for image `batch_index` of the batch. `raw` is (N, num * (5 + classes),
/// H, W): for each anchor n, the planes x, y, w, h, objectness, class scores, as the last convolution wrote them.
/// As darknet: logistic on x, y and objectness, softmax over the class scores; box centre = (cell + x) / grid size,
/// box size = anchor * exp(w or h) / grid size, so coordinates are relative to the network input (0..1).
/// Candidates whose objectness does not exceed `threshold` are left out; class probabilities (objectness x class
/// probability) that do not exceed it are zero. Order: cell by cell (row-major), then anchor.
/// Throws corgy::Error when the channels do not match the head or batch_index is out of range.
std::vector<Detection> decode_region(const RegionHead& head, const Variable& raw, int batch_index, float threshold);

}  // namespace corgy
