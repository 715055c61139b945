// Darknet .weights reading: header versions, batch-norm folding with darknet's formula, the transposed
// [connected] layout, and clear errors for files that do not fit the cfg.
#include "corgy/io/darknet_weights.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "corgy/io/darknet.h"
#include "test_util.h"

namespace corgy::testing {
namespace {

DarknetModel model_of(const std::string& layers, int width = 5, int height = 4, int channels = 2) {
  return build_darknet_model(parse_darknet_cfg(
      fmt::format("[net]\nwidth={}\nheight={}\nchannels={}\n", width, height, channels) + layers, "test.cfg"));
}

// A weights file: header (major, minor, revision, seen of `seen_bytes`), then the given floats.
std::vector<std::byte> weights_file(int major, int minor, int seen_bytes, const std::vector<float>& values) {
  std::vector<std::byte> bytes(12 + seen_bytes + 4 * values.size());
  const std::int32_t header[3] = {major, minor, 0};
  std::memcpy(bytes.data(), header, 12);
  std::memcpy(bytes.data() + 12 + seen_bytes, values.data(), 4 * values.size());
  return bytes;
}

std::vector<float> counting(std::size_t count, float scale) {
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = scale * static_cast<float>(static_cast<int>(i % 7) - 3);
  return values;
}

const std::string conv_bn = "[convolutional]\nbatch_normalize=1\nfilters=3\nsize=3\npad=1\nactivation=linear\n";

TEST(DarknetWeights, BatchNormIsFoldedWithDarknetsFormula) {
  DarknetModel net = model_of(conv_bn);
  const std::vector<float> biases = {0.5f, -0.25f, 0.125f};
  const std::vector<float> scales = {2.0f, 0.5f, -1.0f};
  const std::vector<float> means = {0.1f, -0.2f, 0.3f};
  // Tiny variances, where darknet's (sqrt(var) + 1e-6) and the usual sqrt(var + eps) differ by orders of magnitude.
  const std::vector<float> variances = {1e-8f, 4e-6f, 1.0f};
  const std::vector<float> weights = counting(3 * 2 * 3 * 3, 0.01f);
  std::vector<float> values = biases;
  for (const auto* part : {&scales, &means, &variances, &weights})
    values.insert(values.end(), part->begin(), part->end());
  load_darknet_weights(net, weights_file(0, 2, 8, values), "bn.weights");

  // Reference: the convolution without batch norm, then darknet's normalize_cpu + scale_bias + add_bias.
  Conv2d plain({.in_channels = 2, .out_channels = 3, .kernel = 3, .padding = 1, .bias = false});
  plain.set_weights(weights);
  std::mt19937 rng(3);
  const Variable input = random_variable(net.input_shape(), rng);
  Sequential reference;
  reference.add(std::move(plain));
  Variable expected = reference.forward(input).clone();
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 4; ++y) {
      for (int x = 0; x < 5; ++x) {
        float& v = expected.at(0, c, y, x);
        v = (v - means[c]) / (std::sqrt(variances[c]) + .000001f) * scales[c] + biases[c];
      }
    }
  }
  EXPECT_TRUE(outputs_match(*net.forward(input)[0], expected, 1e-5));
}

TEST(DarknetWeights, HeaderVersionsDecideTheSizeOfSeen) {
  const std::string layers = "[convolutional]\nfilters=1\nsize=1\nactivation=linear\n";
  const std::vector<float> values = {0.5f, 2.0f, -3.0f};  // bias, then one weight per input channel
  Variable input(Shape{1, 2, 4, 5});
  input.fill(1.0f);
  // version 0.1: 32-bit seen; 0.2 and 1.0: 64-bit; 0.1000 (minor >= 1000): 32-bit.
  for (auto [major, minor, seen] : {std::tuple{0, 1, 4}, {0, 2, 8}, {1, 0, 8}, {0, 1000, 4}}) {
    SCOPED_TRACE(fmt::format("version {}.{}", major, minor));
    DarknetModel net = model_of(layers);
    load_darknet_weights(net, weights_file(major, minor, seen, values), "v.weights");
    for (float v : net.forward(input)[0]->values()) EXPECT_FLOAT_EQ(v, 0.5f + 2.0f - 3.0f);
    // The other size of seen leaves 4 bytes missing or left over.
    EXPECT_THROW(load_darknet_weights(net, weights_file(major, minor, 12 - seen, values), "v.weights"), Error);
  }
}

TEST(DarknetWeights, ConnectedLayersReadBothLayouts) {
  const std::string layers = "[connected]\noutput=3\nactivation=linear\n";
  const std::vector<float> weights = counting(3 * 4, 0.5f);  // [out][in]
  std::vector<float> transposed(12);
  for (int o = 0; o < 3; ++o) {
    for (int i = 0; i < 4; ++i) transposed[i * 3 + o] = weights[o * 4 + i];
  }
  std::vector<float> normal_file = {1, 2, 3};
  normal_file.insert(normal_file.end(), weights.begin(), weights.end());
  std::vector<float> transposed_file = {1, 2, 3};
  transposed_file.insert(transposed_file.end(), transposed.begin(), transposed.end());
  DarknetModel normal = model_of(layers, 2, 1, 2);
  DarknetModel old = model_of(layers, 2, 1, 2);
  load_darknet_weights(normal, weights_file(0, 2, 8, normal_file), "normal.weights");
  load_darknet_weights(old, weights_file(1001, 0, 4, transposed_file), "transposed.weights");  // major > 1000
  std::mt19937 rng(5);
  const Variable input = random_variable(normal.input_shape(), rng);
  Variable expected(Shape{1, 3, 1, 1});
  for (int o = 0; o < 3; ++o) {
    float sum = static_cast<float>(o + 1);
    for (int i = 0; i < 4; ++i) sum += weights[o * 4 + i] * input.data()[i];
    expected.data()[o] = sum;
  }
  EXPECT_TRUE(outputs_match(*normal.forward(input)[0], expected, 1e-6));
  EXPECT_TRUE(outputs_match(*old.forward(input)[0], expected, 1e-6));
}

const std::string two_convs = conv_bn + "[convolutional]\nfilters=4\nsize=1\nactivation=leaky\n";

TEST(DarknetWeights, TruncatedFileSaysWhereItEnds) {
  DarknetModel net = model_of(two_convs);
  std::vector<std::byte> bytes = random_darknet_weights(net, 1);
  // conv 0: 3 biases + 9 batch-norm values + 54 weights; conv 1: 4 biases + 12 weights
  ASSERT_EQ(bytes.size(), 20u + 4 * (66 + 16));
  EXPECT_EQ(darknet_weights_size(net), bytes.size());
  bytes.resize(bytes.size() - 8);
  const std::string e = error_of([&] { load_darknet_weights(net, bytes, "short.weights"); });
  EXPECT_TRUE(contains(e,
                       "short.weights: the file ends inside test.cfg:11 [convolutional] (layer 1), which needs bytes "
                       "284..348"))
      << e;
  EXPECT_TRUE(contains(e,
                       "the cfg needs 348 bytes (20-byte header of version 0.2.0 + 4 x 82 parameters), the file "
                       "has 340"))
      << e;
  bytes.resize(14);
  EXPECT_TRUE(contains(error_of([&] { load_darknet_weights(net, bytes, "tiny.weights"); }), "ends inside the header"));
  bytes.resize(3);
  EXPECT_TRUE(contains(error_of([&] { load_darknet_weights(net, bytes, "tiny.weights"); }), "too short for a darknet"));
}

TEST(DarknetWeights, ExtraBytesAreAnError) {
  DarknetModel net = model_of(two_convs);
  std::vector<std::byte> bytes = random_darknet_weights(net, 1);
  bytes.resize(bytes.size() + 12);
  const std::string e = error_of([&] { load_darknet_weights(net, bytes, "long.weights"); });
  EXPECT_TRUE(contains(e, "long.weights: 12 bytes more than expected: the cfg needs 348 bytes")) << e;
  EXPECT_TRUE(contains(e, "the file has 360")) << e;
}

TEST(DarknetWeights, FilesAreReadLikeMemory) {
  DarknetModel from_memory = model_of(two_convs);
  DarknetModel from_file = model_of(two_convs);
  const std::vector<std::byte> bytes = random_darknet_weights(from_memory, 9);
  const std::string path =
      (std::filesystem::temp_directory_path() / fmt::format("corgy_weights_test_{}.weights", ::getpid())).string();
  {
    std::ofstream file(path, std::ios::binary);
    file.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  load_darknet_weights(from_memory, bytes, "memory");
  load_darknet_weights(from_file, path);
  std::filesystem::remove(path);
  std::mt19937 rng(1);
  const Variable input = random_variable(from_memory.input_shape(), rng);
  const Variable expected = from_memory.forward(input)[0]->clone();
  EXPECT_TRUE(outputs_match(*from_file.forward(input)[0], expected, 0.0));
  EXPECT_TRUE(contains(error_of([&] { load_darknet_weights(from_file, "/nonexistent/x.weights"); }),
                       "/nonexistent/x.weights: cannot open the darknet weights"));
}

TEST(DarknetWeights, RandomWeightsFollowTheDocumentedGenerator) {
  // u(seed, k) = (fmix32(k * 0x9E3779B1 + seed * 0x85EBCA77) >> 8) / 2^24; fmix32(0) = 0.
  EXPECT_EQ(darknet_random_uniform(0, 0), 0.0f);
  DarknetModel net = model_of("[convolutional]\nfilters=1\nsize=1\nactivation=linear\n");
  const std::vector<std::byte> bytes = random_darknet_weights(net, 3);
  ASSERT_EQ(bytes.size(), 20u + 4 * 3);
  float values[3];
  std::memcpy(values, bytes.data() + 20, sizeof(values));
  EXPECT_EQ(values[0], 0.1f * (2.0f * darknet_random_uniform(3, 0) - 1.0f));  // bias
  const float amplitude = std::sqrt(6.0f / 2.0f);                             // weights: fan-in 2
  EXPECT_EQ(values[2], amplitude * (2.0f * darknet_random_uniform(3, 2) - 1.0f));
  EXPECT_NE(random_darknet_weights(net, 4), bytes);
}

}  // namespace
}  // namespace corgy::testing
