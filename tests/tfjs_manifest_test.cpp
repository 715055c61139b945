// The TensorFlow.js weights loader on hand-made manifests (float32, uint8/uint16/float16 quantization, shards,
// layouts) and its errors, then on face-api's real manifest.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>

#include "test_util.h"

namespace corgy::testing {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// A fresh folder per test for a manifest and its shards.
class TfjsManifest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    folder_ = fs::temp_directory_path() / fmt::format("corgy_tfjs_{}_{}", info->name(), ::getpid());
    fs::remove_all(folder_);
    fs::create_directories(folder_);
  }
  void TearDown() override { fs::remove_all(folder_); }

  std::string write_manifest(const Json& manifest, const std::string& name = "model-weights_manifest.json") const {
    const fs::path path = folder_ / name;
    std::ofstream(path) << manifest.dump();
    return path.string();
  }
  void write_shard(const std::string& name, const std::vector<std::uint8_t>& bytes) const {
    std::ofstream(folder_ / name, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }

  fs::path folder_;
};

template <class T>
std::vector<std::uint8_t> bytes_of(const std::vector<T>& values) {
  std::vector<std::uint8_t> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<std::uint8_t> concat(std::vector<std::uint8_t> a, const std::vector<std::uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Json entry(const std::string& name, std::vector<int> shape) {
  return {{"name", name}, {"shape", shape}, {"dtype", "float32"}};
}

Json quantized(const std::string& name, std::vector<int> shape, const std::string& dtype, double scale, double min) {
  Json e = entry(name, std::move(shape));
  e["quantization"] = {{"dtype", dtype}, {"scale", scale}, {"min", min}};
  return e;
}

TEST_F(TfjsManifest, ReadsFloat32TensorsAcrossGroupsAndShards) {
  // Group 1: "a" (2 x 3) then "b" (4), split over two shards in the middle of "b"; group 2: a scalar "c".
  const std::vector<float> a = {1.5f, -2.0f, 3.25f, 0.0f, -0.125f, 1e-7f};
  const std::vector<float> b = {10.0f, 20.0f, 30.0f, 40.0f};
  const std::vector<std::uint8_t> group1 = concat(bytes_of(a), bytes_of(b));
  write_shard("group1-shard1of2.bin", {group1.begin(), group1.begin() + 30});
  write_shard("group1-shard2of2.bin", {group1.begin() + 30, group1.end()});
  write_shard("group2-shard1of1.bin", bytes_of(std::vector<float>{-7.0f}));
  const Json manifest = Json::array({{{"paths", {"group1-shard1of2.bin", "group1-shard2of2.bin"}},
                                      {"weights", {entry("a", {2, 3}), entry("b", {4})}}},
                                     {{"paths", {"group2-shard1of1.bin"}}, {"weights", {entry("c", {})}}}});
  const TfjsWeights weights = TfjsWeights::load(write_manifest(manifest));
  ASSERT_EQ(weights.tensors().size(), 3u);
  EXPECT_EQ(weights.tensors()[0].name, "a");
  EXPECT_EQ(weights.tensors()[0].shape, (std::vector<int>{2, 3}));
  EXPECT_EQ(weights.tensors()[0].values, a);
  EXPECT_EQ(weights.at("b").values, b);
  EXPECT_EQ(weights.at("c").values, std::vector<float>{-7.0f});
  EXPECT_TRUE(weights.contains("b"));
  EXPECT_FALSE(weights.contains("d"));
}

TEST_F(TfjsManifest, DequantizesUint8AndUint16AsQTimesScalePlusMin) {
  const double scale8 = 0.009007044399485869;
  const double min8 = -1.2069439495311063;
  const double scale16 = 3.5e-5;
  const double min16 = -0.75;
  const std::vector<std::uint8_t> q8 = {0, 1, 127, 128, 254, 255};
  const std::vector<std::uint16_t> q16 = {0, 1, 40000, 65535};
  write_shard("shard.bin", concat(q8, bytes_of(q16)));
  const Json manifest = Json::array(
      {{{"paths", {"shard.bin"}},
        {"weights",
         {quantized("k8", {1, 2, 3}, "uint8", scale8, min8), quantized("k16", {2, 2}, "uint16", scale16, min16)}}}});
  const TfjsWeights weights = TfjsWeights::load(write_manifest(manifest));
  const TfjsTensor& k8 = weights.at("k8");
  ASSERT_EQ(k8.values.size(), q8.size());
  for (std::size_t i = 0; i < q8.size(); ++i) {
    EXPECT_EQ(k8.values[i], static_cast<float>(q8[i] * scale8 + min8)) << "uint8 value " << i;
  }
  const TfjsTensor& k16 = weights.at("k16");
  ASSERT_EQ(k16.values.size(), q16.size());
  for (std::size_t i = 0; i < q16.size(); ++i) {
    EXPECT_EQ(k16.values[i], static_cast<float>(q16[i] * scale16 + min16)) << "uint16 value " << i;
  }
}

TEST_F(TfjsManifest, DecodesFloat16Quantization) {
  // 1, -2, the largest half, the smallest subnormal, 0.333 (0x3555), -0, +infinity.
  const std::vector<std::uint16_t> halves = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x3555, 0x8000, 0x7c00};
  write_shard("shard.bin", bytes_of(halves));
  Json e = entry("h", {7});
  e["quantization"] = {{"dtype", "float16"}};
  const TfjsWeights weights =
      TfjsWeights::load(write_manifest(Json::array({{{"paths", {"shard.bin"}}, {"weights", {e}}}})));
  const std::vector<float>& v = weights.at("h").values;
  ASSERT_EQ(v.size(), halves.size());
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], -2.0f);
  EXPECT_EQ(v[2], 65504.0f);
  EXPECT_EQ(v[3], std::ldexp(1.0f, -24));
  EXPECT_EQ(v[4], 1365.0f / 4096.0f);  // 0x3555: mantissa 0x155 = 341 -> (1024 + 341) / 1024 x 2^-2
  EXPECT_EQ(v[5], 0.0f);
  EXPECT_TRUE(std::signbit(v[5]));
  EXPECT_TRUE(std::isinf(v[6]) && v[6] > 0);
}

TEST_F(TfjsManifest, ReadsTheWeightsManifestOfAModelJson) {
  write_shard("w.bin", bytes_of(std::vector<float>{1, 2}));
  const Json model = {{"modelTopology", Json::object()},
                      {"weightsManifest", Json::array({{{"paths", {"w.bin"}}, {"weights", {entry("x", {2})}}}})}};
  const TfjsWeights weights = TfjsWeights::load(write_manifest(model, "model.json"));
  EXPECT_EQ(weights.at("x").values, (std::vector<float>{1, 2}));
}

// A convolution computed straight from TensorFlow's definitions: HWIO kernels for conv2d, HWCM for depthwise
// (output channel c * M + m), NCHW input, stride 1, padding `pad`.
Variable tf_reference_conv(const Variable& input, std::span<const float> kernel, int k, int out_channels,
                           bool depthwise, int pad) {
  const Shape& s = input.shape();
  const int multiplier = out_channels / s.c;
  Variable output(Shape{1, out_channels, s.h + 2 * pad - k + 1, s.w + 2 * pad - k + 1});
  for (int o = 0; o < out_channels; ++o) {
    for (int y = 0; y < output.shape().h; ++y) {
      for (int x = 0; x < output.shape().w; ++x) {
        double sum = 0.0;
        for (int i = 0; i < s.c; ++i) {
          if (depthwise && i != o / multiplier) continue;
          for (int ky = 0; ky < k; ++ky) {
            for (int kx = 0; kx < k; ++kx) {
              const int iy = y + ky - pad;
              const int ix = x + kx - pad;
              if (iy < 0 || ix < 0 || iy >= s.h || ix >= s.w) continue;
              const std::size_t index = depthwise ? ((ky * k + kx) * s.c + i) * multiplier + o % multiplier
                                                  : ((ky * k + kx) * s.c + i) * out_channels + o;
              sum += input.at(0, i, iy, ix) * kernel[index];
            }
          }
        }
        output.at(0, o, y, x) = static_cast<float>(sum);
      }
    }
  }
  return output;
}

TEST_F(TfjsManifest, ConvKernelsConvertToCorgysLayoutsOnEveryBackend) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const auto random_values = [&](std::size_t count) {
    std::vector<float> values(count);
    for (float& v : values) v = uniform(rng);
    return values;
  };
  const std::vector<float> hwio = random_values(3 * 3 * 4 * 5);
  const std::vector<float> hwcm = random_values(3 * 3 * 4 * 2);
  const std::vector<float> bias = random_values(5);
  write_shard("w.bin", concat(concat(bytes_of(hwio), bytes_of(hwcm)), bytes_of(bias)));
  const Json manifest = Json::array(
      {{{"paths", {"w.bin"}}, {"weights", {entry("conv", {3, 3, 4, 5}), entry("dw", {3, 3, 4, 2}), entry("b", {5})}}}});
  const TfjsWeights weights = TfjsWeights::load(write_manifest(manifest));

  const Variable input = random_variable(Shape{1, 4, 6, 7}, rng);
  Variable expected_conv = tf_reference_conv(input, hwio, 3, 5, false, 1);
  for (int o = 0; o < 5; ++o) {
    for (int p = 0; p < 6 * 7; ++p) expected_conv.data()[o * 42 + p] += bias[o];
  }
  const Variable expected_depthwise = tf_reference_conv(input, hwcm, 3, 8, true, 1);
  for (const std::string& backend : all_backends()) {
    // Both convolutions read the model input; the depthwise one is the model's output.
    Sequential model;
    Conv2d conv({.in_channels = 4, .out_channels = 5, .kernel = 3, .padding = 1});
    load_tfjs_conv(conv, weights, "conv", "b");
    const int conv_index = model.add(std::move(conv), {Sequential::model_input});
    Conv2d depthwise({.in_channels = 4, .out_channels = 8, .kernel = 3, .padding = 1, .groups = 4, .bias = false});
    load_tfjs_conv(depthwise, weights, "dw", "");
    EXPECT_FALSE(depthwise.has_bias());
    model.add(std::move(depthwise), {Sequential::model_input});
    model.mark_output(conv_index);
    model.set_backend(make_backend(backend, {.validation = kSweepValidation}));
    EXPECT_TRUE(outputs_match(model.forward(input), expected_depthwise, 1e-5)) << backend << ": depthwise";
    EXPECT_TRUE(outputs_match(model.output(conv_index), expected_conv, 1e-5)) << backend << ": conv2d";
  }
}

TEST(TfjsLayouts, HwioAndHwcmIndexMapping) {
  // Value = its own HWIO / HWCM index, so every element's destination can be checked.
  std::vector<float> hwio(2 * 3 * 4 * 5);
  for (std::size_t i = 0; i < hwio.size(); ++i) hwio[i] = static_cast<float>(i);
  const std::vector<float> oihw = hwio_to_oihw(hwio, 2, 3, 4, 5);
  for (int o = 0; o < 5; ++o) {
    for (int i = 0; i < 4; ++i) {
      for (int y = 0; y < 2; ++y) {
        for (int x = 0; x < 3; ++x) {
          ASSERT_EQ(oihw[((o * 4 + i) * 2 + y) * 3 + x], static_cast<float>(((y * 3 + x) * 4 + i) * 5 + o));
        }
      }
    }
  }
  const std::vector<float> depthwise = depthwise_hwcm_to_oihw(hwio, 2, 3, 4, 5);  // C = 4, M = 5
  for (int c = 0; c < 4; ++c) {
    for (int m = 0; m < 5; ++m) {
      for (int y = 0; y < 2; ++y) {
        for (int x = 0; x < 3; ++x) {
          ASSERT_EQ(depthwise[((c * 5 + m) * 2 + y) * 3 + x], static_cast<float>(((y * 3 + x) * 4 + c) * 5 + m));
        }
      }
    }
  }
}

TEST_F(TfjsManifest, MissingShardNamesTheShardAndTheManifest) {
  const std::string manifest =
      write_manifest(Json::array({{{"paths", {"absent.bin"}}, {"weights", {entry("x", {2})}}}}));
  const std::string message = error_of([&] { TfjsWeights::load(manifest); });
  EXPECT_TRUE(contains(message, "absent.bin: cannot open the TensorFlow.js weight shard")) << message;
  EXPECT_TRUE(contains(message, manifest)) << message;
}

TEST_F(TfjsManifest, ShortAndLongShardsSayTheSizes) {
  write_shard("short.bin", std::vector<std::uint8_t>(7));
  write_shard("long.bin", std::vector<std::uint8_t>(9));
  for (const auto& [shard, word] : {std::pair{"short.bin", "short"}, std::pair{"long.bin", "too many"}}) {
    const std::string manifest = write_manifest(
        Json::array({{{"paths", {shard}}, {"weights", {entry("x", {2}), quantized("q", {0}, "uint8", 1, 0)}}}}));
    const std::string message = error_of([&] { TfjsWeights::load(manifest); });
    EXPECT_TRUE(contains(message, fmt::format("shard {} holds {} bytes", shard, word == std::string("short") ? 7 : 9)))
        << message;
    EXPECT_TRUE(contains(message, "take 8 bytes")) << message;
    EXPECT_TRUE(contains(message, word)) << message;
  }
}

TEST_F(TfjsManifest, UnknownDtypesAreRefused) {
  write_shard("w.bin", std::vector<std::uint8_t>(8));
  Json int32 = entry("ints", {2});
  int32["dtype"] = "int32";
  std::string message = error_of([&] {
    TfjsWeights::load(write_manifest(Json::array({{{"paths", {"w.bin"}}, {"weights", {int32}}}})));
  });
  EXPECT_TRUE(contains(message, "tensor 'ints': unsupported dtype 'int32'")) << message;

  message = error_of([&] {
    TfjsWeights::load(
        write_manifest(Json::array({{{"paths", {"w.bin"}}, {"weights", {quantized("q", {8}, "int8", 0.1, 0.0)}}}})));
  });
  EXPECT_TRUE(contains(message, "tensor 'q': unknown quantization dtype 'int8'")) << message;

  Json no_range = entry("q", {8});
  no_range["quantization"] = {{"dtype", "uint8"}};
  message = error_of([&] {
    TfjsWeights::load(write_manifest(Json::array({{{"paths", {"w.bin"}}, {"weights", {no_range}}}})));
  });
  EXPECT_TRUE(contains(message, "uint8 quantization needs 'scale' and 'min'")) << message;
}

TEST_F(TfjsManifest, MalformedManifestsSayWhatIsWrong) {
  write_shard("w.bin", std::vector<std::uint8_t>(8));
  std::ofstream(folder_ / "broken.json") << "[{\"paths\": [";
  std::string message = error_of([&] { TfjsWeights::load((folder_ / "broken.json").string()); });
  EXPECT_TRUE(contains(message, "broken.json: not a TensorFlow.js weights manifest")) << message;

  message = error_of([&] { TfjsWeights::load(write_manifest(Json::object({{"weights", Json::array()}}))); });
  EXPECT_TRUE(contains(message, "expects a JSON list of weight groups")) << message;

  message = error_of([&] {
    TfjsWeights::load(write_manifest(Json::array({{{"paths", {"w.bin"}}, {"weights", {{{"name", "x"}}}}}})));
  });
  EXPECT_TRUE(contains(message, "weight entry 0 (\"x\") is malformed")) << message;
  EXPECT_TRUE(contains(message, "'shape' not found")) << message;

  message = error_of([&] {
    TfjsWeights::load(write_manifest(Json::array({{{"paths", {"w.bin"}}, {"weights", {entry("x", {-2, -1})}}}})));
  });
  EXPECT_TRUE(contains(message, "shape [-2,-1] has a dimension that is not a whole number from 0 to 2147483647"))
      << message;

  // Beyond int, and a float (nlohmann's get<int> of 1e30 would be undefined behaviour), are errors too.
  for (const Json& dims : {Json::array({1, 5000000000LL}), Json::array({1e30}), Json("3")}) {
    Json bad = entry("x", {1});
    bad["shape"] = dims;
    message = error_of([&] {
      TfjsWeights::load(write_manifest(Json::array({{{"paths", {"w.bin"}}, {"weights", {bad}}}})));
    });
    EXPECT_TRUE(contains(message, "tensor 'x'")) << message;
    EXPECT_TRUE(contains(message, "shape")) << message;
  }

  message = error_of([&] {
    TfjsWeights::load(
        write_manifest(Json::array({{{"paths", {"w.bin"}}, {"weights", {entry("x", {1}), entry("x", {1})}}}})));
  });
  EXPECT_TRUE(contains(message, "tensor 'x' appears twice")) << message;

  message = error_of([] { TfjsWeights::load("/nonexistent/model-weights_manifest.json"); });
  EXPECT_TRUE(contains(message, "/nonexistent/model-weights_manifest.json: cannot open")) << message;
}

TEST_F(TfjsManifest, MissingTensorsAndWrongShapesNameTheTensorAndLayer) {
  write_shard("w.bin", bytes_of(std::vector<float>(3 * 3 * 2 * 4 + 4)));
  const std::string manifest =
      write_manifest(Json::array({{{"paths", {"w.bin"}}, {"weights", {entry("k", {3, 3, 2, 4}), entry("b", {4})}}}}));
  const TfjsWeights weights = TfjsWeights::load(manifest);

  std::string message = error_of([&] { weights.at("nope"); });
  EXPECT_TRUE(contains(message, manifest + ": no tensor named 'nope'")) << message;

  message = error_of([&] { weights.values("k", {3, 3, 4, 2}); });
  EXPECT_TRUE(contains(message, "tensor 'k' has shape [3, 3, 2, 4], expected [3, 3, 4, 2]")) << message;

  Conv2d wrong({.in_channels = 4, .out_channels = 2, .kernel = 3});
  message = error_of([&] { load_tfjs_conv(wrong, weights, "k", "b"); });
  EXPECT_TRUE(contains(message, "expected [3, 3, 4, 2]")) << message;
  EXPECT_TRUE(contains(message, wrong.describe())) << message;

  Conv2d grouped({.in_channels = 4, .out_channels = 4, .kernel = 3, .groups = 2});
  message = error_of([&] { load_tfjs_conv(grouped, weights, "k", "b"); });
  EXPECT_TRUE(contains(message, "groups 1 or groups = in_channels")) << message;

  Conv2d right({.in_channels = 2, .out_channels = 4, .kernel = 3});
  message = error_of([&] { load_tfjs_conv(right, weights, "k", "missing_bias"); });
  EXPECT_TRUE(contains(message, "no tensor named 'missing_bias'")) << message;
}

// face-api's real manifest: 19 uint8-quantized tensors in one 193,321-byte shard.
TEST(TfjsFaceApi, LoadsTheTinyFaceDetectorManifest) {
  const std::string manifest = std::string(CORGY_FACE_API_DATA_DIR) + "/tiny_face_detector_model-weights_manifest.json";
  const TfjsWeights weights = TfjsWeights::load(manifest);
  EXPECT_EQ(weights.tensors().size(), 19u);
  std::size_t total = 0;
  for (const TfjsTensor& tensor : weights.tensors()) total += tensor.values.size();
  EXPECT_EQ(total, 193321u);
  EXPECT_EQ(weights.at("conv1/depthwise_filter").shape, (std::vector<int>{3, 3, 16, 1}));
  EXPECT_EQ(weights.at("conv8/filters").shape, (std::vector<int>{1, 1, 512, 25}));
  // Every value lies on its tensor's quantization grid min + q * scale, q in 0..255, as the manifest states it.
  std::ifstream stream(manifest);
  const Json json = Json::parse(stream);
  for (const Json& e : json.at(0).at("weights")) {
    const double scale = e.at("quantization").at("scale").get<double>();
    const double min = e.at("quantization").at("min").get<double>();
    for (float value : weights.at(e.at("name").get<std::string>()).values) {
      const double q = (value - min) / scale;
      ASSERT_NEAR(q, std::round(q), 1e-3) << e.at("name");
      ASSERT_GE(std::round(q), 0.0);
      ASSERT_LE(std::round(q), 255.0);
    }
  }
}

}  // namespace
}  // namespace corgy::testing
