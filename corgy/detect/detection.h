// Boxes and detections shared by the YOLO decoders, NMS and drawing.
#pragma once

#include <vector>

namespace corgy {

/// An axis-aligned box by its centre and size, as darknet stores it. The decoders give coordinates relative to
/// the network input (0..1); map_boxes_to_image() turns them into pixels of the original image.
struct Box {
  float x = 0.0f;
  float y = 0.0f;
  float w = 0.0f;
  float h = 0.0f;

  float left() const { return x - w / 2; }
  float right() const { return x + w / 2; }
  float top() const { return y - h / 2; }
  float bottom() const { return y + h / 2; }
};

/// Intersection over union, 0 when the boxes do not overlap (darknet's box_iou).
float box_iou(const Box& a, const Box& b);

/// One candidate box of a YOLO head: its objectness and, for every class, objectness x class probability, set
/// to zero where it does not exceed the decoding threshold (darknet's `detection`).
struct Detection {
  Box box;
  float objectness = 0.0f;
  std::vector<float> probabilities;
};

/// One detected object: a box with one class and its probability (what darknet prints as "dog: 87%").
struct LabeledBox {
  Box box;
  int class_id = 0;
  float probability = 0.0f;
};

/// How an image was fitted to the network input: darknet's letterbox (scaled to fit, aspect ratio kept, the rest
/// filled with grey) or a plain resize to the input size (aspect ratio not kept).
enum class ImageFit { letterbox, resize };

/// What a detector reports; shared by the darknet detector (models/darknet_detector.h) and the ONNX YOLOv8 one
/// (models/yolov8_detector.h).
struct DetectOptions {
  /// A (box, class) is reported when its class probability exceeds this: objectness x class probability in darknet
  /// (detect's -thresh), the class score in YOLOv8 (Ultralytics' conf).
  float threshold = 0.5f;
  /// Per-class NMS: a box overlapping a more probable one of its class with IoU above this is dropped.
  float nms = 0.45f;
  /// How the image is fitted to the network input; YOLO cfgs are trained on darknet's letterbox.
  ImageFit fit = ImageFit::letterbox;
};

/// Maps boxes from coordinates relative to a network input of net_width x net_height into pixels of an
/// image_width x image_height image that was fitted to it by `fit` (darknet's correct_region_boxes).
void map_boxes_to_image(std::vector<Detection>& detections, int image_width, int image_height, int net_width,
                        int net_height, ImageFit fit);

}  // namespace corgy
