// Decoding of darknet's [yolo] layer (YOLOv3): boxes relative to anchors given in pixels, several heads per model.
#pragma once

#include <vector>

#include "corgy/detect/detection.h"
#include "corgy/variable.h"

namespace corgy {

/// The parameters of a [yolo] layer that matter at inference.
struct YoloHead {
  int classes = 80;
  /// All anchors of the cfg, 2 per anchor: width and height in pixels of the network input.
  std::vector<float> anchors;
  /// The anchors this head predicts, as indices into the anchor list (darknet's mask).
  std::vector<int> mask;
  /// Stretch of the centre offsets (AlexeyAB's scale_x_y; 1 in the original YOLOv3).
  float scale_x_y = 1.0f;

  /// Channels of the raw input: mask.size() * (4 box + 1 objectness + classes).
  int channels() const { return static_cast<int>(mask.size()) * (5 + classes); }
};

/// Decodes the raw input of a [yolo] layer for image `batch_index` of the batch. `raw` is (N, mask.size() *
/// (5 + classes), H, W): for each anchor, the planes x, y, w, h, objectness, class scores. As darknet: logistic on
/// x, y, objectness and every class score (no softmax); box centre = (cell + x) / grid size, box size =
/// anchor * exp(w or h) / network input size, so coordinates are relative to the network input (0..1).
/// Candidates whose objectness does not exceed `threshold` are left out; class probabilities (objectness x class
/// probability) that do not exceed it are zero. Order: cell by cell (row-major), then anchor.
/// Throws corgy::Error when the channels do not match the head or batch_index is out of range.
std::vector<Detection> decode_yolo(const YoloHead& head, const Variable& raw, int batch_index, int net_width,
                                   int net_height, float threshold);

}  // namespace corgy
