// Non-maximum suppression per class, and the final list of labelled boxes.
#pragma once

#include <vector>

#include "corgy/detect/detection.h"

namespace corgy {

/// Darknet's per-class NMS (do_nms_sort): for each class, the candidates are taken in order of that class's
/// probability, and a candidate whose box overlaps a more probable one with IoU > iou_threshold gets probability
/// zero for that class. Boxes and other classes are left as they are. All detections must have the same number of
/// classes (throws corgy::Error otherwise).
void nms_per_class(std::vector<Detection>& detections, float iou_threshold = 0.45f);

/// Every (box, class) whose probability exceeds `threshold`, most probable first.
std::vector<LabeledBox> labeled_boxes(const std::vector<Detection>& detections, float threshold);

}  // namespace corgy
