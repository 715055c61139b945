// Object detection with an ONNX YOLOv8 export (Ultralytics' layout: the box decoding in the graph, output
// (1, 4 + classes, anchors)), end to end: letterbox, run, decode, per-class NMS, boxes in pixels of the photo. Here,
// above corgy/io and corgy/detect, as models/darknet_detector.h is for darknet models.
#pragma once

#include <vector>

#include "corgy/detect/detection.h"
#include "corgy/io/onnx.h"
#include "corgy/variable.h"

namespace corgy {

/// What a YOLOv8 export fixes: its input size (from the graph input (N, 3, H, W)) and its class count (from the
/// first output (N, 4 + classes, anchors)).
struct Yolov8Layout {
  int width = 0;
  int height = 0;
  int classes = 0;
  int anchors = 0;
};

/// Reads the layout of `net`; throws corgy::Error naming the file and the dims when the input is not a fixed
/// (N, 3, H, W) or the first output is not (N, 4 + classes, anchors) with at least one class.
Yolov8Layout yolov8_layout(const OnnxModel& net);

/// decode_yolov8() of image `batch_index` of `output`, computed from a net_width x net_height input made from an
/// image_width x image_height picture fitted by options.fit; boxes mapped to pixels of the picture, per-class NMS,
/// the boxes above options.threshold, most probable first.
std::vector<LabeledBox> decode_yolov8_detections(const Variable& output, int batch_index, int image_width,
                                                 int image_height, int net_width, int net_height,
                                                 const DetectOptions& options);

/// Fits `image` (1, 3, H, W) with values in [0, 1] (as load_image gives it) to the input of `net`, runs it on its
/// backend and returns decode_yolov8_detections() for it, boxes in pixels of `image`.
std::vector<LabeledBox> detect_objects_yolov8(OnnxModel& net, const Variable& image, const DetectOptions& options);

}  // namespace corgy
