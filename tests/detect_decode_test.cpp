// YOLO decoding, box mapping and NMS on hand-made tensors whose boxes are known.
#include <cmath>

#include "corgy/detect/nms.h"
#include "corgy/detect/region.h"
#include "corgy/detect/yolo.h"
#include "test_util.h"

namespace corgy::testing {
namespace {

float logit(float p) { return std::log(p / (1 - p)); }

// Raw head input with every value zero except those set with set().
struct RawHead {
  Variable tensor;
  int entries;  // 5 + classes
  void set(int anchor, int entry, int row, int col, float value, int image = 0) {
    tensor.at(image, anchor * entries + entry, row, col) = value;
  }
};

TEST(DetectDecode, RegionBoxesUseCellsAnchorsAndSoftmax) {
  const RegionHead head{.classes = 2, .num = 2, .anchors = {1, 2, 3, 4}, .softmax = true};
  RawHead raw{Variable(Shape{1, head.channels(), 2, 3}), 7};
  // anchor 1 at row 1, column 2
  raw.set(1, 1, 1, 2, logit(0.25f));    // y offset
  raw.set(1, 2, 1, 2, std::log(2.0f));  // w: anchor 3 cells x 2
  raw.set(1, 4, 1, 2, logit(0.9f));     // objectness
  raw.set(1, 6, 1, 2, std::log(3.0f));  // class scores (0, ln 3) -> softmax (0.25, 0.75)
  // Every other candidate has objectness 0.5, under the threshold.
  const std::vector<Detection> found = decode_region(head, raw.tensor, 0, 0.6f);
  ASSERT_EQ(found.size(), 1u);
  const Detection& d = found[0];
  EXPECT_NEAR(d.objectness, 0.9f, 1e-6);
  EXPECT_NEAR(d.box.x, (2 + 0.5f) / 3, 1e-6);
  EXPECT_NEAR(d.box.y, (1 + 0.25f) / 2, 1e-6);
  EXPECT_NEAR(d.box.w, 3 * 2.0f / 3, 1e-6);
  EXPECT_NEAR(d.box.h, 4 * 1.0f / 2, 1e-6);
  ASSERT_EQ(d.probabilities.size(), 2u);
  EXPECT_EQ(d.probabilities[0], 0.0f);  // 0.9 x 0.25 is under the threshold
  EXPECT_NEAR(d.probabilities[1], 0.9f * 0.75f, 1e-6);

  RegionHead no_softmax = head;
  no_softmax.softmax = false;
  const std::vector<Detection> raw_scores = decode_region(no_softmax, raw.tensor, 0, 0.6f);
  ASSERT_EQ(raw_scores.size(), 1u);
  EXPECT_NEAR(raw_scores[0].probabilities[1], 0.9f * std::log(3.0f), 1e-6);
  EXPECT_EQ(decode_region(head, raw.tensor, 0, 0.4f).size(), 2u * 6u);  // every candidate passes 0.4
}

TEST(DetectDecode, YoloBoxesUseMaskedPixelAnchorsAndLogisticClasses) {
  const YoloHead head{.classes = 1, .anchors = {10, 14, 23, 27, 37, 58}, .mask = {1, 2}};
  RawHead raw{Variable(Shape{2, head.channels(), 2, 2}), 6};
  raw.tensor.fill(-10.0f);  // image 0: nothing; image 1: one box, every other candidate has objectness 0.5
  std::fill(raw.tensor.data() + head.channels() * 4, raw.tensor.data() + raw.tensor.count(), 0.0f);
  raw.set(1, 0, 0, 1, logit(0.75f), 1);    // x offset; mask[1] = anchor 2 (37 x 58 pixels)
  raw.set(1, 2, 0, 1, std::log(2.0f), 1);  // w
  raw.set(1, 4, 0, 1, logit(0.8f), 1);     // objectness
  raw.set(1, 5, 0, 1, logit(0.9f), 1);     // class 0
  const Variable& batch = raw.tensor;
  EXPECT_TRUE(decode_yolo(head, batch, 0, 64, 32, 0.6f).empty());
  const std::vector<Detection> found = decode_yolo(head, batch, 1, 64, 32, 0.6f);
  ASSERT_EQ(found.size(), 1u);
  const Detection& d = found[0];
  EXPECT_NEAR(d.box.x, (1 + 0.75f) / 2, 1e-6);
  EXPECT_NEAR(d.box.y, (0 + 0.5f) / 2, 1e-6);
  EXPECT_NEAR(d.box.w, 37 * 2.0f / 64, 1e-6);
  EXPECT_NEAR(d.box.h, 58 * 1.0f / 32, 1e-6);
  EXPECT_NEAR(d.probabilities[0], 0.8f * 0.9f, 1e-6);

  YoloHead stretched = head;
  stretched.scale_x_y = 2.0f;  // x = (col + 2 * 0.75 - 0.5) / grid
  EXPECT_NEAR(decode_yolo(stretched, batch, 1, 64, 32, 0.6f)[0].box.x, (1 + 1.0f) / 2, 1e-6);
}

TEST(DetectDecode, HeadsRejectTensorsThatDoNotFit) {
  const RegionHead region{.classes = 2, .num = 2, .anchors = {1, 2, 3, 4}};
  EXPECT_THROW(decode_region(region, Variable(Shape{1, 13, 2, 2}), 0, 0.5f), Error);
  EXPECT_THROW(decode_region(region, Variable(Shape{1, 14, 2, 2}), 1, 0.5f), Error);
  EXPECT_THROW(decode_region({.classes = 2, .num = 2, .anchors = {1, 2}}, Variable(Shape{1, 14, 2, 2}), 0, 0.5f),
               Error);
  const YoloHead yolo{.classes = 1, .anchors = {10, 14}, .mask = {1}};
  EXPECT_THROW(decode_yolo(yolo, Variable(Shape{1, 6, 2, 2}), 0, 32, 32, 0.5f), Error);  // anchor 1 missing
}

TEST(DetectDecode, BoxesMapBackThroughTheLetterbox) {
  // A 300 x 200 image letterboxed into 160 x 96 covers 144 x 96 pixels starting at x = 8.
  std::vector<Detection> boxes(2);
  boxes[0].box = {0.5f, 0.5f, 0.9f, 1.0f};
  boxes[1].box = {8.0f / 160, 0.25f, 0.1f, 0.5f};
  std::vector<Detection> resized = boxes;
  map_boxes_to_image(boxes, 300, 200, 160, 96, ImageFit::letterbox);
  EXPECT_NEAR(boxes[0].box.x, 150, 1e-4);
  EXPECT_NEAR(boxes[0].box.y, 100, 1e-4);
  EXPECT_NEAR(boxes[0].box.w, 300, 1e-3);
  EXPECT_NEAR(boxes[0].box.h, 200, 1e-3);
  EXPECT_NEAR(boxes[1].box.x, 0, 1e-4);
  EXPECT_NEAR(boxes[1].box.w, 0.1f * 160 / 144 * 300, 1e-3);
  map_boxes_to_image(resized, 300, 200, 160, 96, ImageFit::resize);
  EXPECT_NEAR(resized[1].box.x, 8.0f / 160 * 300, 1e-4);
  EXPECT_NEAR(resized[1].box.h, 100, 1e-4);
}

TEST(DetectDecode, IntersectionOverUnion) {
  EXPECT_NEAR(box_iou({1, 1, 2, 2}, {2, 1, 2, 2}), 2.0f / 6.0f, 1e-6);
  EXPECT_EQ(box_iou({1, 1, 2, 2}, {5, 1, 2, 2}), 0.0f);
  EXPECT_NEAR(box_iou({1, 1, 2, 2}, {1, 1, 2, 2}), 1.0f, 1e-6);
}

Detection candidate(Box box, std::vector<float> probabilities) { return {box, 1.0f, std::move(probabilities)}; }

TEST(DetectDecode, NmsSuppressesPerClass) {
  std::vector<Detection> detections = {
      candidate({10, 10, 10, 10}, {0.8f, 0.6f}),     // B: overlaps A (IoU 0.6) in class 0
      candidate({12.5f, 10, 10, 10}, {0.9f, 0.0f}),  // A
      candidate({50, 50, 10, 10}, {0.7f, 0.0f}),     // C: far away
      candidate({13, 10, 10, 10}, {0.0f, 0.4f}),     // D: class 1, overlaps B (IoU 0.54) there
  };
  nms_per_class(detections, 0.45f);
  EXPECT_EQ(detections[0].probabilities[0], 0.0f);
  EXPECT_EQ(detections[0].probabilities[1], 0.6f);  // B survives in class 1
  EXPECT_EQ(detections[3].probabilities[1], 0.0f);
  const std::vector<LabeledBox> kept = labeled_boxes(detections, 0.5f);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].class_id, 0);
  EXPECT_EQ(kept[0].probability, 0.9f);
  EXPECT_EQ(kept[0].box.x, 12.5f);
  EXPECT_EQ(kept[1].probability, 0.7f);
  EXPECT_EQ(kept[2].class_id, 1);
  EXPECT_EQ(kept[2].box.x, 10.0f);
  // With an IoU threshold of 0.7, B is kept in class 0 (IoU 0.6 does not exceed it).
  std::vector<Detection> loose = {candidate({10, 10, 10, 10}, {0.8f}), candidate({12.5f, 10, 10, 10}, {0.9f})};
  nms_per_class(loose, 0.7f);
  EXPECT_EQ(labeled_boxes(loose, 0.5f).size(), 2u);
  std::vector<Detection> mixed = {candidate({}, {0.5f}), candidate({}, {0.5f, 0.5f})};
  EXPECT_THROW(nms_per_class(mixed), Error);
}

}  // namespace
}  // namespace corgy::testing
