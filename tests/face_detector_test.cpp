// face-api's tiny face detector in corgy against face-api itself: tests/fixtures/face_api/tiny_face_detector.json
// holds what @vladmandic/face-api 1.7.15 on TensorFlow.js found in the demo photos of data/face_api at input sizes
// 416 and 608 (tools/face_api_reference.mjs). Plus the pieces: TensorFlow's 'same' pooling, the input preparation,
// the model's shapes and the errors.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>

#include "test_util.h"

namespace corgy::testing {
namespace {

using Json = nlohmann::json;

// The issue asks for IoU >= 0.9 and scores within 0.02; corgy measures ~1e-6 from face-api on every backend, so
// tighter bounds (still far above float noise) catch small regressions the bounds would let through.
constexpr float min_iou = 0.999f;
constexpr float max_score_difference = 1e-3f;
// fp16 precision (Vulkan): the bounds for it, the same faces with IoU >= 0.95.
constexpr float min_iou_fp16 = 0.95f;
constexpr float max_score_difference_fp16 = 0.02f;

bool half_precision(const std::string& backend) { return backend.ends_with("+fp16"); }

std::string face_api_data(const std::string& file) { return std::string(CORGY_FACE_API_DATA_DIR) + "/" + file; }

const std::string manifest = face_api_data("tiny_face_detector_model-weights_manifest.json");

const Json& reference() {
  static const Json json = [] {
    std::ifstream stream(fixture_path("face_api/tiny_face_detector.json"));
    return Json::parse(stream);
  }();
  return json;
}

// face-api's box (left, top, width, height) as corgy's centre form.
Box box_of(const Json& face) {
  const float w = face.at("width").get<float>();
  const float h = face.at("height").get<float>();
  return {face.at("x").get<float>() + w / 2, face.at("y").get<float>() + h / 2, w, h};
}

TEST(TinyFaceDetector, ConstantsAreFaceApis) {
  const Json& detector = reference().at("detector");
  EXPECT_EQ(FaceDetectorOptions{}.iou_threshold, detector.at("iou_threshold").get<float>());
  ASSERT_EQ(detector.at("anchors").size() * 2, tiny_face_anchors.size());
  for (std::size_t a = 0; a < detector.at("anchors").size(); ++a) {
    EXPECT_EQ(tiny_face_anchors[2 * a], detector.at("anchors")[a][0].get<float>()) << "anchor " << a;
    EXPECT_EQ(tiny_face_anchors[2 * a + 1], detector.at("anchors")[a][1].get<float>()) << "anchor " << a;
  }
  for (std::size_t c = 0; c < 3; ++c) EXPECT_EQ(tiny_face_mean_rgb[c], detector.at("mean_rgb")[c].get<float>());
}

// How far corgy's faces are from face-api's over all photos, sizes and thresholds.
struct Agreement {
  int runs = 0;
  int faces = 0;
  float worst_iou = 1.0f;
  float worst_score_difference = 0.0f;
};

// Each reference face, strongest first, takes the unmatched corgy face it overlaps most.
void compare_faces(const std::vector<LabeledBox>& found, const Json& expected, const std::string& where, bool half,
                   Agreement& agreement) {
  ASSERT_EQ(found.size(), expected.size()) << where << ": face count";
  std::vector<bool> taken(found.size(), false);
  for (const Json& face : expected) {
    const Box box = box_of(face);
    int best = -1;
    float best_iou = -1.0f;
    for (std::size_t i = 0; i < found.size(); ++i) {
      const float iou = box_iou(found[i].box, box);
      if (!taken[i] && iou > best_iou) best = static_cast<int>(i), best_iou = iou;
    }
    taken[best] = true;
    const float score_difference = std::abs(found[best].probability - face.at("score").get<float>());
    EXPECT_GE(best_iou, half ? min_iou_fp16 : min_iou) << where << ": face-api's face at " << face.dump();
    EXPECT_LE(score_difference, half ? max_score_difference_fp16 : max_score_difference)
        << where << ": face-api's face at " << face.dump();
    agreement.worst_iou = std::min(agreement.worst_iou, best_iou);
    agreement.worst_score_difference = std::max(agreement.worst_score_difference, score_difference);
    ++agreement.faces;
  }
}

class TinyFaceDetectorOnBackend : public ::testing::TestWithParam<std::string> {};

// Every photo at both sizes on blas. The naive backend and Vulkan on lavapipe (CI) take about 2 s per forward here
// and more under the sanitizers, so they check every photo at 416 and the first two at 608.
bool checks_everything(const std::string& backend) { return backend == "blas"; }
constexpr int photos_at_608_when_short = 2;
// fp16 precision runs only on Vulkan (lavapipe in CI): every photo at 416 keeps CI's time in bounds. Under the
// sanitizers the 608 size runs the same code on more pixels (the Release run checks its detections): 40 s of CI.
int photos_at_608(const std::string& backend) {
  return half_precision(backend) || CORGY_TESTS_SANITIZED ? 0 : photos_at_608_when_short;
}
// Under the sanitizers the naive backend (about 3 s per forward there) checks the first two photos at 416: the same
// code on other pixels, which the Release run checks on all six (18 s of the sanitized tests' time).
constexpr int photo_count = 6;
int photos_at_416(const std::string& backend) { return backend == "naive" && CORGY_TESTS_SANITIZED ? 2 : photo_count; }

TEST_P(TinyFaceDetectorOnBackend, FindsTheFacesFaceApiFinds) {
  Sequential model = load_tiny_face_detector(manifest);
  model.set_backend(make_backend(GetParam(), {.threads = 1, .validation = kSweepValidation}));
  Agreement agreement;
  ASSERT_EQ(reference().at("images").size(), std::size_t{photo_count});
  for (int photo_index = 0; const Json& image : reference().at("images")) {
    if (photo_index >= photos_at_416(GetParam())) break;
    const bool all_sizes = checks_everything(GetParam()) || photo_index < photos_at_608(GetParam());
    ++photo_index;
    const std::string file = std::filesystem::path(image.at("image").get<std::string>()).filename().string();
    const Variable photo = load_image(face_api_data(file), 3);
    ASSERT_EQ(photo.shape().w, image.at("width").get<int>()) << file;
    ASSERT_EQ(photo.shape().h, image.at("height").get<int>()) << file;
    for (const int size : {416, 608}) {
      if (size == 608 && !all_sizes) continue;
      // One forward per size; each threshold decodes the same output.
      const Variable& raw = model.forward(tiny_face_input(photo, size));
      for (const Json& run : image.at("runs")) {
        if (run.at("input_size").get<int>() != size) continue;
        const FaceDetectorOptions options{.input_size = size,
                                          .score_threshold = run.at("score_threshold").get<float>()};
        const std::string where =
            fmt::format("{} on {}, size {}, threshold {}", file, GetParam(), size, options.score_threshold);
        compare_faces(decode_faces(raw, 0, photo.shape().w, photo.shape().h, options), run.at("faces"), where,
                      half_precision(GetParam()), agreement);
        ++agreement.runs;
      }
    }
  }
  // 2 thresholds per photo and size: 6 photos at 416 (2 for naive under the sanitizers), and at 608 for 6, 2 or 0.
  EXPECT_EQ(agreement.runs,
            checks_everything(GetParam()) ? 24 : 2 * photos_at_416(GetParam()) + 2 * photos_at_608(GetParam()));
  RecordProperty("worst_iou", fmt::format("{:.7f}", agreement.worst_iou));
  RecordProperty("worst_score_difference", fmt::format("{:.2g}", agreement.worst_score_difference));
  fmt::print("{}: {} faces in {} runs as face-api found them; lowest IoU 1 - {:.2g}, largest score difference {:.2g}\n",
             GetParam(), agreement.faces, agreement.runs, 1.0f - agreement.worst_iou, agreement.worst_score_difference);
}

TEST_P(TinyFaceDetectorOnBackend, SamePoolingPadsTheBottomRight) {
  Variable input(Shape{1, 1, 3, 3});
  for (int i = 0; i < 9; ++i) input.data()[i] = static_cast<float>(i + 1);
  // TensorFlow's 'same' on 3 x 3: 2x2/2 -> 2 x 2 with one padded row and column at the end; 2x2/1 -> 3 x 3.
  const std::vector<std::pair<PoolOptions, std::vector<float>>> cases = {
      {{.kernel = 2, .stride = 2, .same = true}, {5, 6, 8, 9}},
      {{.kernel = 2, .stride = 1, .same = true}, {5, 6, 6, 8, 9, 9, 8, 9, 9}},
  };
  for (const auto& [options, expected] : cases) {
    Sequential model;
    model.add(MaxPool2d(options));
    model.set_backend(make_backend(GetParam(), {.validation = kSweepValidation}));
    const Variable& output = model.forward(input);
    EXPECT_EQ(std::vector<float>(output.values().begin(), output.values().end()), expected)
        << MaxPool2d(options).describe() << " on " << GetParam();
  }
}

// Every backend, and Vulkan in fp16 precision.
std::vector<std::string> backends_and_precisions() {
  std::vector<std::string> names = all_backends();
  if (std::find(names.begin(), names.end(), "vulkan") != names.end()) names.push_back("vulkan+fp16");
  return names;
}

INSTANTIATE_TEST_SUITE_P(EveryBackend, TinyFaceDetectorOnBackend, ::testing::ValuesIn(backends_and_precisions()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name = param_info.param;
                           std::replace(name.begin(), name.end(), '+', '_');
                           return name;
                         });

TEST(TinyFaceDetector, GridIsTheInputSizeOver32) {
  const Sequential model = build_tiny_face_detector();
  for (const int size : {128, 416, 608}) {
    const std::vector<Shape> shapes = model.infer_shapes(Shape{1, 3, size, size});
    EXPECT_EQ(shapes.back(), (Shape{1, tiny_face_output_channels, size / 32, size / 32})) << size;
  }
  // 416: the unpadded conv0 gives 414; 'same' pooling rounds 207 up to 104.
  const std::vector<Shape> shapes = model.infer_shapes(Shape{1, 3, 416, 416});
  EXPECT_EQ(shapes[0].h, 414);
  EXPECT_EQ(shapes[1].h, 207);
  EXPECT_EQ(shapes[4].h, 104);
  EXPECT_EQ(shapes[shapes.size() - 2].h, 13);
  EXPECT_EQ(MaxPool2d({.kernel = 2, .stride = 2, .same = true}).describe(), "maxpool2d 2x2/2 same");
}

// A 16-wide, 32-high image at input size 32: padded on the right to 32 x 32, no resampling.
TEST(TinyFaceDetector, InputIsPaddedOnTheRightAndNormalized) {
  std::mt19937 rng(3);
  Variable image = random_variable(Shape{1, 3, 32, 16}, rng, 0.5f);
  for (float& v : image.values()) v += 0.5f;
  const Variable input = tiny_face_input(image, 32);
  ASSERT_EQ(input.shape(), (Shape{1, 3, 32, 32}));
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 32; ++y) {
      for (int x = 0; x < 32; ++x) {
        const float pixel = x < 16 ? image.at(0, c, y, x) * 255.0f : 0.0f;
        ASSERT_NEAR(input.at(0, c, y, x), (pixel - tiny_face_mean_rgb[c]) / 255.0f, 1e-5f) << c << " " << y << " " << x;
      }
    }
  }
}

// Bilinear resampling reproduces a linear ramp exactly, so the sample positions show: TensorFlow's resizeBilinear
// without half-pixel centres samples output pixel r at r * 48 / 32 = 1.5 r (with them it would be 1.5 r + 0.25).
TEST(TinyFaceDetector, InputResizeSamplesAtTensorFlowsPositions) {
  Variable image(Shape{1, 3, 48, 48});
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 48; ++y) {
      for (int x = 0; x < 48; ++x) image.at(0, c, y, x) = static_cast<float>(2 * y + x + c) / 255.0f;
    }
  }
  const Variable input = tiny_face_input(image, 32);
  for (int c = 0; c < 3; ++c) {
    for (int r = 0; r < 32; ++r) {
      for (int q = 0; q < 32; ++q) {
        const float ramp = 2.0f * 1.5f * static_cast<float>(r) + 1.5f * static_cast<float>(q) + static_cast<float>(c);
        ASSERT_NEAR(input.at(0, c, r, q), (ramp - tiny_face_mean_rgb[c]) / 255.0f, 1e-4f) << c << " " << r << " " << q;
      }
    }
  }
}

TEST(TinyFaceDetector, BadInputsSayWhatIsWrong) {
  const Variable rgb(Shape{1, 3, 40, 50});
  EXPECT_TRUE(contains(error_of([&] { tiny_face_input(rgb, 400); }), "a positive multiple of 32, got 400"));
  EXPECT_TRUE(contains(error_of([] {
                         tiny_face_input(Variable(Shape{1, 1, 8, 8}), 32);
                       }),
                       "expects an RGB or RGBA image (1, 3 or 4, H, W), got (1, 1, 8, 8)"));
  EXPECT_TRUE(contains(error_of([] {
                         decode_faces(Variable(Shape{1, 20, 13, 13}), 0, 640, 480);
                       }),
                       "expects the detector's output (N, 25, G, G), got (1, 20, 13, 13)"));
  EXPECT_TRUE(contains(error_of([] {
                         decode_faces(Variable(Shape{1, 25, 13, 13}), 1, 640, 480);
                       }),
                       "batch index 1 is outside the batch of 1"));
  EXPECT_TRUE(contains(error_of([] {
                         decode_faces(Variable(Shape{1, 25, 13, 13}), 0, 0, 480);
                       }),
                       "the image size must be positive, got 0 x 480"));
}

// face-api's manifest with one tensor renamed: the loader names it and the manifest.
TEST(TinyFaceDetector, MissingTensorIsNamed) {
  namespace fs = std::filesystem;
  const fs::path folder = fs::temp_directory_path() / fmt::format("corgy_face_{}", ::getpid());
  fs::create_directories(folder);
  fs::copy_file(face_api_data("tiny_face_detector_model.bin"), folder / "tiny_face_detector_model.bin",
                fs::copy_options::overwrite_existing);
  std::ifstream stream(manifest);
  Json json = Json::parse(stream);
  json[0]["weights"][3]["name"] = "conv1/pointwise_renamed";
  const fs::path edited = folder / "manifest.json";
  std::ofstream(edited) << json.dump();
  const std::string message = error_of([&] { load_tiny_face_detector(edited.string()); });
  fs::remove_all(folder);
  EXPECT_TRUE(contains(message, edited.string() + ": no tensor named 'conv1/pointwise_filter'")) << message;
  EXPECT_TRUE(contains(message, "conv2d 1x1")) << message;
}

}  // namespace
}  // namespace corgy::testing
