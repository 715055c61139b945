// face-api's tiny face detector (npm @vladmandic/face-api, MIT; the model of justadudewhohacks/face-api.js): a
// Tiny-YOLOv2 with depthwise separable convolutions and one class, trained to find faces. 193 KB of uint8-quantized
// TensorFlow.js weights (data/face_api). See docs/face-detector.md.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "corgy/detect/detection.h"
#include "corgy/io/tfjs_manifest.h"
#include "corgy/model/sequential.h"
#include "corgy/variable.h"

namespace corgy {

/// face-api's settings (TinyYolov2Options, tinyFaceDetector/const.ts).
struct FaceDetectorOptions {
  /// Side of the square network input in pixels, a multiple of 32 (face-api's inputSize: 416 by default, 608 for
  /// small faces, 128..320 for speed).
  int input_size = 416;
  /// A face is reported when its score (the sigmoid of the box confidence) exceeds this (face-api's scoreThreshold).
  float score_threshold = 0.5f;
  /// NMS: a box that overlaps a higher-scoring one with IoU above this is dropped (face-api's IOU_THRESHOLD).
  float iou_threshold = 0.4f;
};

/// The five anchors as (width, height) in grid cells (tinyFaceDetector/const.ts: BOX_ANCHORS).
inline constexpr std::array<float, 10> tiny_face_anchors = {1.603231f, 2.094468f, 6.041143f, 7.080126f, 2.882459f,
                                                            3.518061f, 4.266906f, 5.178857f, 9.041765f, 10.66308f};
/// The mean R, G, B (0..255) that face-api subtracts before dividing by 255 (tinyFaceDetector/const.ts: MEAN_RGB).
inline constexpr std::array<float, 3> tiny_face_mean_rgb = {117.001f, 114.697f, 97.404f};
/// Channels of the raw output: 5 anchors x (x, y, w, h, score).
inline constexpr int tiny_face_output_channels = 25;

/// The network with zero weights (TinyYolov2Base.runMobilenet with isFirstLayerConv2d): input (N, 3, S, S), S a
/// multiple of 32, as tiny_face_input() makes it; output (N, 25, S / 32, S / 32), for each anchor the planes x, y,
/// w, h, score before any sigmoid or exp.
///   conv0 3x3 3->16 no padding, leaky 0.1; maxpool 2x2/2 'same'
///   conv1..conv5: depthwise 3x3 pad 1 (no bias), pointwise 1x1 (bias, leaky 0.1), 16->32->64->128->256->512, each
///   followed by maxpool 2x2/2 'same' (conv5: 2x2/1 'same')
///   conv8 1x1 512->25 with bias, no activation
/// TensorFlow's 'same' pooling pads odd sizes at the bottom/right (416: 414 -> 207 -> 104 -> 52 -> 26 -> 13 -> 13).
Sequential build_tiny_face_detector();

/// Loads face-api's tensors (conv0/filters, conv0/bias, convK/depthwise_filter, convK/pointwise_filter, convK/bias
/// for K = 1..5, conv8/filters, conv8/bias) into a model from build_tiny_face_detector(). Throws corgy::Error naming
/// the manifest and the tensor when one is missing or has another shape.
void load_tiny_face_detector_weights(Sequential& model, const TfjsWeights& weights);

/// build_tiny_face_detector() with the weights of a tiny_face_detector_model-weights_manifest.json and its shard.
Sequential load_tiny_face_detector(const std::string& manifest_path);

/// face-api's input for an image (1, 3, H, W) with values in [0, 1] (as load_image gives it) or (1, 4, H, W) (alpha
/// ignored): pixel values x 255, padded with zeros at the bottom or right to a square (padToSquare), resized to
/// input_size x input_size by tf.image.resizeBilinear (align_corners and half_pixel_centers off), then
/// (value - tiny_face_mean_rgb) / 255. Returns (1, 3, input_size, input_size). Throws corgy::Error for another shape
/// or an input size that is not a positive multiple of 32.
Variable tiny_face_input(const Variable& image, int input_size);

/// Decodes the raw output (N, 25, G, G) for image `batch_index` of the batch, made from an image_width x
/// image_height picture by tiny_face_input(), as TinyYolov2Base.extractBoxes and detect do: score = sigmoid, box
/// centre (cell + sigmoid(x, y)) / G, size anchor * exp(w, h) / G, rescaled from the padded square to the picture;
/// boxes scoring above options.score_threshold, NMS at options.iou_threshold. Returns boxes in pixels of the
/// picture with class_id 0 and probability = score, highest score first. Throws corgy::Error for another shape.
std::vector<LabeledBox> decode_faces(const Variable& raw, int batch_index, int image_width, int image_height,
                                     const FaceDetectorOptions& options = {});

/// tiny_face_input(), a forward on the model's backend and decode_faces(): the faces in `image` (1, 3, H, W) in
/// [0, 1], boxes in its pixels.
std::vector<LabeledBox> detect_faces(Sequential& model, const Variable& image, const FaceDetectorOptions& options = {});

}  // namespace corgy
