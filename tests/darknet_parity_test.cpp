// corgy against darknet itself: raw head outputs of yolov2-tiny-voc and yolov3-tiny, every other layer type
// (mixed.cfg), darknet's decoding + NMS, and its image resizing. Fixtures from tools/darknet_reference.py, which
// runs Debian's libdarknet with the same deterministic random weights and input that these tests generate.
#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "corgy/detect/nms.h"
#include "corgy/io/darknet.h"
#include "corgy/io/darknet_weights.h"
#include "corgy/io/image.h"
#include "test_util.h"

namespace corgy::testing {
namespace {

// Keep in sync with tools/darknet_reference.py.
constexpr int width = 160;
constexpr int height = 96;
constexpr std::uint32_t weight_seed = 7;
constexpr std::uint32_t input_seed = 1234;
constexpr int image_width = 300;
constexpr int image_height = 200;
constexpr float nms_threshold = 0.45f;

std::string cfg_path(const std::string& name) { return fixture_path("../../data/darknet/" + name + ".cfg"); }

DarknetModel random_model(const std::string& cfg, const DarknetOptions& options = {}) {
  DarknetModel net = build_darknet_model(read_darknet_cfg(cfg), options);
  load_darknet_weights(net, random_darknet_weights(net, weight_seed), "random weights");
  return net;
}

Variable random_input(const Shape& shape) {
  Variable input(shape);
  for (std::size_t k = 0; k < input.count(); ++k) {
    input.data()[k] = darknet_random_uniform(input_seed, static_cast<std::uint32_t>(k));
  }
  return input;
}

void expect_heads_match_darknet(const std::string& name, int heads) {
  DarknetModel net = random_model(cfg_path(name), {.width = width, .height = height});
  ASSERT_EQ(static_cast<int>(net.heads.size()), heads);
  const Variable input = random_input(net.input_shape());
  for (const std::string& backend : all_backends()) {
    SCOPED_TRACE(backend);
    net.model.set_backend(backend);
    const std::vector<const Variable*> raw = net.forward(input);
    ASSERT_EQ(static_cast<int>(raw.size()), heads);
    for (int k = 0; k < heads; ++k) {
      SCOPED_TRACE(fmt::format("head {}", k));
      EXPECT_TRUE(outputs_match(*raw[k], load_npy(fixture_path(fmt::format("darknet/{}.head{}.npy", name, k)))));
    }
  }
}

TEST(DarknetParity, YoloV2TinyVocHeadMatchesDarknetOnEveryBackend) { expect_heads_match_darknet("yolov2-tiny-voc", 1); }

TEST(DarknetParity, YoloV3TinyHeadsMatchDarknetOnEveryBackend) { expect_heads_match_darknet("yolov3-tiny", 2); }

TEST(DarknetParity, EveryOtherLayerTypeMatchesDarknetOnEveryBackend) {
  DarknetModel net = random_model(fixture_path("darknet/mixed.cfg"));
  const std::vector<int> checked = {8, 12, 13};  // layers the fixtures hold, as the script's MIXED_LAYERS
  for (int layer : checked) net.model.mark_output(net.layer_of_cfg[layer]);
  const Variable input = random_input(net.input_shape());
  for (const std::string& backend : all_backends()) {
    SCOPED_TRACE(backend);
    net.model.set_backend(backend);
    const std::vector<const Variable*> outputs = net.forward(input);
    ASSERT_EQ(outputs.size(), 1u);
    for (int layer : checked) {
      SCOPED_TRACE(fmt::format("layer {}", layer));
      const Variable expected = load_npy(fixture_path(fmt::format("darknet/mixed.layer{}.npy", layer)));
      Variable actual = net.model.output(net.layer_of_cfg[layer]).clone();
      actual.reshape(expected.shape());  // darknet's [softmax] keeps (C, 1, 1); corgy's flattened shape is the same
      EXPECT_TRUE(outputs_match(actual, expected));
    }
    EXPECT_EQ(outputs[0], &net.model.output(net.layer_of_cfg.back()));
  }
}

using Row = std::tuple<int, float, Box>;  // class, probability, box

std::vector<Row> darknet_detections(const std::string& name) {
  const Variable table = load_npy(fixture_path(fmt::format("darknet/{}.detections.npy", name)));
  std::vector<Row> rows;
  const int count = table.count() == 0 ? 0 : table.shape().h;
  for (int i = 0; i < count; ++i) {
    const float* r = table.data() + 6 * i;
    rows.emplace_back(static_cast<int>(r[4]), r[5], Box{r[0], r[1], r[2], r[3]});
  }
  return rows;
}

// Decodes darknet's own raw head outputs with corgy and compares with darknet's boxes after NMS.
void expect_detections_match_darknet(const std::string& name, float threshold) {
  const DarknetModel net = build_darknet_model(read_darknet_cfg(cfg_path(name)), {.width = width, .height = height});
  std::vector<Detection> candidates;
  for (std::size_t k = 0; k < net.heads.size(); ++k) {
    const Variable raw = load_npy(fixture_path(fmt::format("darknet/{}.head{}.npy", name, k)));
    std::vector<Detection> decoded;
    if (const auto* region = std::get_if<RegionHead>(&net.heads[k].params)) {
      decoded = decode_region(*region, raw, 0, threshold);
    } else {
      decoded = decode_yolo(std::get<YoloHead>(net.heads[k].params), raw, 0, width, height, threshold);
    }
    candidates.insert(candidates.end(), decoded.begin(), decoded.end());
  }
  map_boxes_to_image(candidates, image_width, image_height, width, height, ImageFit::letterbox);
  nms_per_class(candidates, nms_threshold);
  std::vector<Row> ours;
  for (const LabeledBox& b : labeled_boxes(candidates, threshold)) ours.emplace_back(b.class_id, b.probability, b.box);
  std::sort(ours.begin(), ours.end(), [](const Row& a, const Row& b) {
    return std::get<0>(a) != std::get<0>(b) ? std::get<0>(a) < std::get<0>(b) : std::get<1>(a) > std::get<1>(b);
  });
  const std::vector<Row> expected = darknet_detections(name);
  ASSERT_GT(expected.size(), 10u) << "the fixture should exercise decoding with many boxes";
  ASSERT_EQ(ours.size(), expected.size());
  for (std::size_t i = 0; i < ours.size(); ++i) {
    const auto& [cls, probability, box] = ours[i];
    const auto& [expected_cls, expected_probability, expected_box] = expected[i];
    SCOPED_TRACE(fmt::format("detection {}: class {}, probability {}", i, expected_cls, expected_probability));
    EXPECT_EQ(cls, expected_cls);
    EXPECT_NEAR(probability, expected_probability, 1e-5);
    EXPECT_NEAR(box.x, expected_box.x, 2e-3);
    EXPECT_NEAR(box.y, expected_box.y, 2e-3);
    EXPECT_NEAR(box.w, expected_box.w, 2e-3 * std::max(1.0f, expected_box.w / 100));
    EXPECT_NEAR(box.h, expected_box.h, 2e-3 * std::max(1.0f, expected_box.h / 100));
  }
}

TEST(DarknetParity, RegionDecodingAndNmsMatchDarknet) { expect_detections_match_darknet("yolov2-tiny-voc", 0.1f); }

TEST(DarknetParity, YoloDecodingAndNmsMatchDarknet) { expect_detections_match_darknet("yolov3-tiny", 0.85f); }

TEST(DarknetParity, LetterboxAndResizeMatchDarknet) {
  const Variable photo = load_image(fixture_path("darknet/photo.png"));
  ASSERT_EQ(photo.shape(), (Shape{1, 3, 72, 96}));
  EXPECT_TRUE(
      outputs_match(letterbox_image(photo, 80, 64), load_npy(fixture_path("darknet/photo.letterbox.npy")), 1e-6));
  EXPECT_TRUE(outputs_match(resize_image(photo, 50, 40), load_npy(fixture_path("darknet/photo.resize.npy")), 1e-6));
}

}  // namespace
}  // namespace corgy::testing
