// The multi-style transfer network (corgy/models/style_transfer.h) against PyTorch (tools/style_transfer_reference.py,
// fixtures in tests/fixtures/style_transfer): random weights with reflect and zero padding within 1e-4 and the
// trained network of data/style_transfer within 1e-3, on every backend; style changes; the weights loader's errors.
#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace corgy::testing {
namespace {

namespace fs = std::filesystem;

std::string random_weights() { return fixture_path("style_transfer/random/weights"); }

nlohmann::json cases() {
  std::ifstream file(fixture_path("style_transfer/cases.json"));
  return nlohmann::json::parse(file);
}

// The fixture's crop of data/style_transfer/dog.png as (1, 3, side, side).
Variable dog_crop(const nlohmann::json& crop) {
  const Variable dog = load_image(std::string(CORGY_STYLE_TRANSFER_DATA_DIR) + "/dog.png", 3);
  const int side = crop.at("side");
  const int x0 = crop.at("x");
  const int y0 = crop.at("y");
  Variable image(Shape{1, 3, side, side});
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < side; ++y) {
      for (int x = 0; x < side; ++x) image.at(0, c, y, x) = dog.at(0, c, y0 + y, x0 + x);
    }
  }
  return image;
}

class StyleTransferParity : public ::testing::TestWithParam<std::string> {};

TEST_P(StyleTransferParity, RandomWeightsMatchPyTorchWithReflectAndZeroPadding) {
  const nlohmann::json random = cases().at("random");
  const std::vector<float> style = random.at("style_weights");
  const Variable input = load_npy(fixture_path("style_transfer/random/input.npy"));
  for (const auto& [mode, padding] : {std::pair{"reflect", PadMode::reflect}, std::pair{"zeros", PadMode::constant}}) {
    StyleTransferModel model = StyleTransferModel::load(random_weights(), padding);
    model.set_style(style);
    model.network().set_backend(make_backend(GetParam(), {.validation = kSweepValidation}));
    const std::string file = random.at("outputs").at(mode);
    const Variable expected = load_npy(fixture_path("style_transfer/random/" + file));
    EXPECT_TRUE(outputs_match(model.stylise(input), expected, 1e-4)) << mode << " padding on " << GetParam();
  }
}

TEST_P(StyleTransferParity, TrainedNetworkMatchesPyTorch) {
  const nlohmann::json trained = cases().at("trained");
  StyleTransferModel model = StyleTransferModel::load(std::string(CORGY_STYLE_TRANSFER_DATA_DIR) + "/weights");
  EXPECT_EQ(model.style_names(), trained.at("styles").get<std::vector<std::string>>());
  model.set_style(trained.at("style_weights").get<std::vector<float>>());
  model.network().set_backend(make_backend(GetParam(), {.validation = kSweepValidation}));
  const Variable expected = load_npy(fixture_path("style_transfer/trained/output.npy"));
  EXPECT_TRUE(outputs_match(model.stylise(dog_crop(trained.at("crop"))), expected, 1e-3)) << GetParam();
}

// A new style mix takes effect at the next forward (no weights_changed()), as if the model had been built with it.
TEST_P(StyleTransferParity, StyleChangeEqualsAModelLoadedWithThatStyle) {
  std::mt19937 rng(5);
  const Variable input = random_variable({1, 3, 20, 24}, rng, 0.5f);
  const std::vector<float> first = {1.0f, 0.0f, 0.0f};
  const std::vector<float> second = {0.2f, 0.0f, 0.8f};
  StyleTransferModel changed = StyleTransferModel::load(random_weights());
  changed.network().set_backend(make_backend(GetParam(), {.validation = kSweepValidation}));
  changed.set_style(first);
  const Variable before = changed.stylise(input).clone();
  changed.set_style(second);
  const Variable after = changed.stylise(input).clone();

  StyleTransferModel fresh = StyleTransferModel::load(random_weights());
  fresh.set_style(second);
  const Variable expected = fresh.stylise(input).clone();  // naive
  EXPECT_TRUE(outputs_match(after, expected, 1e-4));
  EXPECT_GT(max_relative_error(before, expected), 1e-2) << "the two styles should differ";
}

INSTANTIATE_TEST_SUITE_P(EveryBackend, StyleTransferParity, ::testing::ValuesIn(all_backends()));

TEST(StyleTransfer, BuildsThePapersNetwork) {
  const StyleTransferModel model({.styles = 4});
  // 3 downsampling convs, 5 blocks of 2 convs, 2 upsampling convs, the output conv: 16 convs, each with a norm.
  EXPECT_EQ(model.blocks().size(), 16u);
  EXPECT_EQ(model.blocks().front().name, "conv1");
  EXPECT_EQ(model.blocks()[3].name, "res1.conv1");
  EXPECT_EQ(model.blocks().back().name, "out");
  const std::vector<Shape> shapes = model.network().infer_shapes({1, 3, 512, 384});
  EXPECT_EQ(shapes.back(), (Shape{1, 3, 512, 384}));
  // Planes that do not divide by 4 come out rounded up to a multiple of 4.
  EXPECT_EQ(model.network().infer_shapes({2, 3, 37, 45}).back(), (Shape{2, 3, 40, 48}));
  EXPECT_THROW(StyleTransferModel({.styles = 0}), Error);
  EXPECT_THROW(StyleTransferModel({.styles = 2, .padding = PadMode::edge}), Error);
}

TEST(StyleTransfer, ReflectPaddingRefusesTooSmallAnInput) {
  StyleTransferModel model({.styles = 1, .width = 2, .residual_blocks = 1});
  const Variable tiny(Shape{1, 3, 4, 4});
  try {
    model.stylise(tiny);
    FAIL() << "expected corgy::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("reflected padding 4"), std::string::npos) << e.what();
  }
}

TEST(StyleTransfer, SetStyleChecksTheWeights) {
  StyleTransferModel model({.styles = 3, .width = 2, .residual_blocks = 1});
  EXPECT_THROW(model.set_style(std::vector<float>{1.0f, 0.0f}), Error);
  EXPECT_THROW(model.set_style(std::vector<float>{1.0f, std::nanf(""), 0.0f}), Error);
  model.set_style(std::vector<float>{0.5f, 0.25f, 0.25f});
  EXPECT_EQ(model.style(), (std::vector<float>{0.5f, 0.25f, 0.25f}));
}

TEST(StyleTransfer, ParsesStyleWeights) {
  EXPECT_EQ(parse_style_weights("0.7,0.3,0", 3), (std::vector<float>{0.7f, 0.3f, 0.0f}));
  EXPECT_EQ(parse_style_weights(" 1 , 0 ", 2), (std::vector<float>{1.0f, 0.0f}));
  for (const char* bad : {"", "0.7,,0.3", "a,b", "1,2,3", "0.5,inf", "1e40,0"}) {
    EXPECT_THROW(parse_style_weights(bad, 2), Error) << bad;
  }
}

// --- the weights loader's errors --------------------------------------------------------------------------------

class StyleWeightsFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() / fmt::format("corgy-style-{}-{}",
                                                      ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                                                      static_cast<long>(::getpid()));
    fs::remove_all(folder_);
    fs::copy(random_weights(), folder_);
    std::ifstream file(folder_ / "manifest.json");
    manifest_ = nlohmann::json::parse(file);
  }
  void TearDown() override { fs::remove_all(folder_); }

  void write_manifest() { std::ofstream(folder_ / "manifest.json") << manifest_.dump(1); }
  // Loads the folder and expects corgy::Error whose message contains each of `parts`.
  void expect_error(std::initializer_list<std::string> parts) {
    try {
      StyleTransferModel::load(folder_.string());
      ADD_FAILURE() << "expected corgy::Error containing " << *parts.begin();
    } catch (const Error& e) {
      for (const std::string& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  }
  nlohmann::json& tensor(const std::string& name) {
    for (nlohmann::json& entry : manifest_.at("tensors")) {
      if (entry.at("name") == name) return entry;
    }
    throw std::runtime_error("no tensor " + name);
  }

  fs::path folder_;
  nlohmann::json manifest_;
};

TEST_F(StyleWeightsFolder, LoadsTheCopy) {
  const StyleTransferModel model = StyleTransferModel::load(folder_.string());
  EXPECT_EQ(model.options().width, 8);
  EXPECT_EQ(model.options().styles, 3);
  EXPECT_EQ(model.options().padding, PadMode::reflect);
  EXPECT_EQ(model.style_names(), (std::vector<std::string>{"a", "b", "c"}));
}

TEST_F(StyleWeightsFolder, MissingOrMalformedManifest) {
  fs::remove(folder_ / "manifest.json");
  expect_error({"manifest.json"});
  std::ofstream(folder_ / "manifest.json") << "{\"format\": ";
  expect_error({"manifest.json", "not JSON"});
  std::ofstream(folder_ / "manifest.json") << "[1, 2]";
  expect_error({"expects a JSON object"});
}

TEST_F(StyleWeightsFolder, WrongFormatOrVersion) {
  manifest_["format"] = "something-else";
  write_manifest();
  expect_error({"corgy-style-transfer", "something-else"});
  manifest_["format"] = "corgy-style-transfer";
  manifest_["version"] = 2;
  write_manifest();
  expect_error({"version 2"});
}

TEST_F(StyleWeightsFolder, BadHyperParameters) {
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, nlohmann::json>>{{"width", 0},
                                                           {"width", 100000},
                                                           {"width", "8"},
                                                           {"residual_blocks", -1},
                                                           {"residual_blocks", 2.5},
                                                           {"padding", "edge"},
                                                           {"epsilon", -1.0},
                                                           {"styles", nlohmann::json::array()}}) {
    nlohmann::json saved = manifest_;
    manifest_[key] = value;
    write_manifest();
    expect_error({key});
    manifest_ = saved;
  }
  manifest_.erase("epsilon");
  write_manifest();
  expect_error({"has no \"epsilon\""});
}

TEST_F(StyleWeightsFolder, MissingUnknownOrRepeatedTensor) {
  nlohmann::json& tensors = manifest_.at("tensors");
  const nlohmann::json first = tensors.at(0);
  tensors.erase(tensors.begin());
  write_manifest();
  expect_error({"tensor 'conv1.conv.weight' is missing", "[8, 3, 9, 9]"});
  tensors.push_back(first);
  tensors.push_back(first);
  write_manifest();
  expect_error({"'conv1.conv.weight' appears twice"});
  tensors.erase(tensors.end() - 1);
  nlohmann::json extra = first;
  extra["name"] = "res9.conv1.conv.weight";
  tensors.push_back(extra);
  write_manifest();
  expect_error({"'res9.conv1.conv.weight' is not part of the network"});
}

TEST_F(StyleWeightsFolder, ShapeOrFileMismatch) {
  tensor("up1.conv.weight")["shape"] = {16, 32, 3, 4};
  write_manifest();
  expect_error({"'up1.conv.weight' has shape [16, 32, 3, 4]", "[16, 32, 3, 3]"});
  tensor("up1.conv.weight")["shape"] = {16, 32, 3, 3};
  tensor("up1.conv.weight")["file"] = "up2.conv.weight.npy";  // holds (8, 16, 3, 3)
  write_manifest();
  expect_error({"up2.conv.weight.npy", "'up1.conv.weight' has shape (8, 16, 3, 3) in its file"});
  tensor("up1.conv.weight")["file"] = "missing.npy";
  write_manifest();
  expect_error({"missing.npy"});
}

TEST_F(StyleWeightsFolder, FileNamesStayInTheFolder) {
  for (const char* name : {"../manifest.json", "/etc/passwd", "sub/dir.npy", "..", ""}) {
    tensor("out.norm.beta")["file"] = name;
    write_manifest();
    expect_error({"not a plain file name"});
  }
}

TEST_F(StyleWeightsFolder, TruncatedTensorFile) {
  const fs::path file = folder_ / "res1.conv1.conv.weight.npy";
  fs::resize_file(file, fs::file_size(file) - 100);
  expect_error({"res1.conv1.conv.weight.npy"});
}

}  // namespace
}  // namespace corgy::testing
