// Decoding of the anchor-free detector output of YOLOv8 (and YOLO11, which keeps its layout) as Ultralytics exports
// it: the head's box decoding already in the graph, no objectness.
#pragma once

#include <vector>

#include "corgy/detect/detection.h"
#include "corgy/variable.h"

namespace corgy {

/// Decodes image `batch_index` of a YOLOv8 output: (N, 4 + classes, 1, A) as corgy holds the ONNX (N, 4 + classes, A)
/// (any (N, 4 + classes, H, W) is read as A = H x W anchors). For each anchor, rows 0..3 are the box centre x, y and
/// its width, height in pixels of the net_width x net_height network input, rows 4.. the class scores (sigmoids
/// already applied in the graph). As Ultralytics' non_max_suppression (multi_label off): each anchor keeps only its
/// best class, and is a candidate when that score exceeds `threshold`; its probabilities are zero but for that class.
/// Boxes come out relative to the network input (0..1), as decode_yolo's, for map_boxes_to_image and nms_per_class.
/// Order: anchor by anchor. Throws corgy::Error when the output has fewer than 5 rows, batch_index is out of range or
/// the input size is not positive.
std::vector<Detection> decode_yolov8(const Variable& output, int batch_index, int net_width, int net_height,
                                     float threshold);

}  // namespace corgy
