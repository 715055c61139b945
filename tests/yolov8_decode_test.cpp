// YOLOv8's output decoding: candidates, the whole pipeline (best class per anchor, letterbox, per-class NMS) against
// detections computed by torchvision's batched_nms (tools/yolov8_decode_reference.py), and the YOLOv8 test model's
// layout and end-to-end run.
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "corgy/detect/yolov8.h"
#include "corgy/models/yolov8_detector.h"
#include "test_util.h"

namespace corgy::testing {
namespace {

// A (1, 4 + classes, 1, anchors) output, every value zero but those set with set().
struct Output {
  Variable tensor;
  void set(int anchor, int row, float value) { tensor.at(0, row, 0, anchor) = value; }
};

TEST(Yolov8Decode, AnchorsKeepTheirBestClassAboveTheThreshold) {
  Output out{Variable(Shape{1, 4 + 3, 1, 4})};
  // Anchor 1: a 16 x 8 box at (48, 16) of a 96 x 64 input, classes (0.3, 0.8, 0.6): class 1 only.
  for (const auto& [row, value] :
       {std::pair{0, 48.0f}, {1, 16.0f}, {2, 16.0f}, {3, 8.0f}, {4, 0.3f}, {5, 0.8f}, {6, 0.6f}}) {
    out.set(1, row, value);
  }
  out.set(3, 4, 0.5f);  // anchor 3: exactly the threshold, left out
  const std::vector<Detection> found = decode_yolov8(out.tensor, 0, 96, 64, 0.5f);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_FLOAT_EQ(found[0].box.x, 0.5f);
  EXPECT_FLOAT_EQ(found[0].box.y, 0.25f);
  EXPECT_FLOAT_EQ(found[0].box.w, 16.0f / 96);
  EXPECT_FLOAT_EQ(found[0].box.h, 0.125f);
  EXPECT_EQ(found[0].probabilities, (std::vector<float>{0.0f, 0.8f, 0.0f}));
  EXPECT_EQ(decode_yolov8(out.tensor, 0, 96, 64, 0.2f).size(), 2u);
}

TEST(Yolov8Decode, RejectsOutputsThatDoNotFit) {
  EXPECT_THROW(decode_yolov8(Variable(Shape{1, 4, 1, 8}), 0, 32, 32, 0.5f), Error);  // no class
  EXPECT_THROW(decode_yolov8(Variable(Shape{1, 6, 1, 8}), 1, 32, 32, 0.5f), Error);  // image 1 of 1
  EXPECT_THROW(decode_yolov8(Variable(Shape{1, 6, 1, 8}), 0, 0, 32, 0.5f), Error);
}

TEST(Yolov8Decode, MatchesTorchvisionBatchedNms) {
  const std::string directory = fixture_path("yolov8_decode");
  std::ifstream file(directory + "/expected.json");
  ASSERT_TRUE(file) << directory;
  const nlohmann::json expected = nlohmann::json::parse(file);
  Variable output = load_npy(directory + "/output.npy");  // (1, 7, 126) reads as (1, 1, 7, 126)
  output.reshape({1, output.shape().h, 1, output.shape().w});
  const DetectOptions options{
      .threshold = expected.at("threshold").get<float>(), .nms = expected.at("nms").get<float>(), .fit = {}};
  const std::vector<LabeledBox> found =
      decode_yolov8_detections(output, 0, expected.at("image_width").get<int>(), expected.at("image_height").get<int>(),
                               expected.at("net_width").get<int>(), expected.at("net_height").get<int>(), options);
  const nlohmann::json& reference = expected.at("detections");
  ASSERT_EQ(found.size(), reference.size());
  for (std::size_t i = 0; i < found.size(); ++i) {
    const nlohmann::json& r = reference[i];
    EXPECT_EQ(found[i].class_id, r.at("class").get<int>()) << "detection " << i;
    EXPECT_FLOAT_EQ(found[i].probability, r.at("score").get<float>()) << "detection " << i;
    EXPECT_NEAR(found[i].box.left(), r.at("left").get<float>(), 1e-3) << "detection " << i;
    EXPECT_NEAR(found[i].box.top(), r.at("top").get<float>(), 1e-3) << "detection " << i;
    EXPECT_NEAR(found[i].box.right(), r.at("right").get<float>(), 1e-3) << "detection " << i;
    EXPECT_NEAR(found[i].box.bottom(), r.at("bottom").get<float>(), 1e-3) << "detection " << i;
  }
}

TEST(Yolov8Decode, TestModelRunsEndToEnd) {
  // tools/make_onnx_models.py's reduced YOLOv8n: 3 classes at 96 x 64, 96 + 24 + 6 anchors.
  OnnxModel net = load_onnx(fixture_path("onnx/yolov8n_opset13/model.onnx"));
  const Yolov8Layout layout = yolov8_layout(net);
  EXPECT_EQ(layout.width, 96);
  EXPECT_EQ(layout.height, 64);
  EXPECT_EQ(layout.classes, 3);
  EXPECT_EQ(layout.anchors, 126);
  Variable photo(Shape{1, 3, 50, 40});
  for (std::size_t i = 0; i < photo.count(); ++i) photo.data()[i] = static_cast<float>(i % 7) / 7.0f;
  // Random weights: every box is noise, but each must be finite and of a class the model has.
  for (const LabeledBox& box : detect_objects_yolov8(net, photo, {.threshold = 0.0f, .nms = 0.7f, .fit = {}})) {
    EXPECT_TRUE(std::isfinite(box.box.x) && std::isfinite(box.box.w));
    EXPECT_TRUE(box.class_id >= 0 && box.class_id < 3);
  }
  EXPECT_THROW(detect_objects_yolov8(net, Variable(Shape{1, 1, 50, 40}), {}), Error);  // grey photo
  // A classifier is no detector: its (N, 10) output is refused, naming the file.
  OnnxModel classifier = load_onnx(fixture_path("onnx/mnist_opset17/model.onnx"));
  EXPECT_THROW(yolov8_layout(classifier), Error);
}

}  // namespace
}  // namespace corgy::testing
