// LoadLimits: a file that declares a huge tensor or model gets a corgy::Error naming the file and the size before
// the loader allocates it, and the limits can be raised or lowered through the loaders' options.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "test_util.h"

namespace corgy::testing {
namespace {

constexpr std::uint64_t mib = std::uint64_t{1} << 20;

class LoadLimitsFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::filesystem::temp_directory_path() /
              fmt::format("corgy-load-limits-{}-{}", ::getpid(),
                          ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(folder_);
  }
  void TearDown() override { std::filesystem::remove_all(folder_); }

  std::string write(const std::string& name, const std::string& bytes) const {
    const std::string path = (folder_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  std::filesystem::path folder_;
};

// A version 1.0 .npy with `header` and no data.
std::string npy_header_only(std::string header) {
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::string file("\x93NUMPY\x01\x00", 8);
  file.push_back(static_cast<char>(header.size() & 0xff));
  file.push_back(static_cast<char>(header.size() >> 8));
  return file + header;
}

TEST(LoadLimits, Float32BytesSaturatesInsteadOfOverflowing) {
  EXPECT_EQ(float32_bytes({2, 3}), 24u);
  EXPECT_EQ(float32_bytes({}), 4u);
  EXPECT_EQ(float32_bytes({5, 0, 7}), 0u);
  EXPECT_EQ(float32_bytes({-1, 7}), 0u);
  EXPECT_EQ(float32_bytes({INT32_MAX, INT32_MAX, INT32_MAX}), UINT64_MAX);
  // Even a limit of UINT64_MAX refuses a saturated count: it stands for "more than 2^64 bytes".
  EXPECT_TRUE(contains(error_of([] {
                         check_tensor_bytes({.max_tensor_bytes = UINT64_MAX}, "x.bin", "a tensor",
                                            float32_bytes({INT32_MAX, INT32_MAX, INT32_MAX}));
                       }),
                       "x.bin: a tensor: more than 2^64 bytes"));
}

TEST(LoadLimits, ModelBytesChecksEachTensorAndTheTotal) {
  ModelBytes bytes({.max_tensor_bytes = 100, .max_model_bytes = 150}, "m.bin");
  bytes.add("a", 80);
  EXPECT_TRUE(contains(error_of([&] { bytes.add("b", 101); }), "m.bin: b: 101 bytes"));
  const std::string total = error_of([&] { bytes.add("c", 80); });
  EXPECT_TRUE(contains(total, "m.bin: c: 80 bytes brings")) << total;
  EXPECT_TRUE(contains(total, "brings the model's weights to 160 bytes")) << total;
  EXPECT_TRUE(contains(total, "LoadLimits::max_model_bytes (150 bytes")) << total;
  EXPECT_EQ(bytes.total(), 80u);
}

TEST_F(LoadLimitsFiles, NpyHeaderClaimingTerabytesFailsBeforeReadingData) {
  const std::string path =
      write("huge.npy", npy_header_only("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000), }"));
  const std::string message = error_of([&] { load_npy(path); });
  EXPECT_TRUE(contains(message, path + ": the .npy array (1000000, 1000000): 4000000000000 bytes (3.6 TiB)"))
      << message;
  EXPECT_TRUE(contains(message, "LoadLimits::max_tensor_bytes (1073741824 bytes (1.0 GiB))")) << message;
  // Raised, the limit lets the header through and the data size check reports the missing bytes.
  const std::string raised = error_of([&] { load_npy(path, {.max_tensor_bytes = std::uint64_t{1} << 42}); });
  EXPECT_TRUE(contains(raised, "needs 4000000000000 data bytes, the file has 0")) << raised;
}

TEST_F(LoadLimitsFiles, NpyLimitCanBeLowered) {
  Variable tensor(Shape{1, 1, 4, 8});
  const std::string path = (folder_ / "small.npy").string();
  save_npy(path, tensor);
  EXPECT_EQ(load_npy(path, {.max_tensor_bytes = 128}).count(), 32u);
  EXPECT_TRUE(contains(error_of([&] { load_npy(path, {.max_tensor_bytes = 127}); }), "128 bytes"));
}

TEST(LoadLimits, DarknetInputOfWidth100000FailsWhenBuilt) {
  const std::string message = error_of([] {
    build_darknet_model(
        parse_darknet_cfg("[net]\nwidth=100000\nheight=100000\nchannels=3\n[maxpool]\nsize=2\n"
                          "stride=2\n",
                          "wide.cfg"));
  });
  EXPECT_TRUE(contains(
      message, "wide.cfg: the network input (1, 3, 100000, 100000) (width x height x channels): 120000000000 bytes"))
      << message;
}

TEST(LoadLimits, DarknetConvWithAMillionFiltersFailsBeforeAllocatingWeights) {
  const std::string cfg =
      "[net]\nwidth=32\nheight=32\nchannels=3\n"
      "[convolutional]\nfilters=256\nsize=3\npad=1\nactivation=leaky\n"
      "[convolutional]\nfilters=1000000\nsize=3\npad=1\nactivation=leaky\n";
  const std::string message = error_of([&] { build_darknet_model(parse_darknet_cfg(cfg, "filters.cfg")); });
  EXPECT_TRUE(contains(
      message,
      "filters.cfg:10 [convolutional] (layer 1): the weights (1000000, 256, 3, 3): 9216000000 bytes (8.6 GiB)"))
      << message;
}

TEST(LoadLimits, DarknetModelTotalAndLayerOutputsAreLimited) {
  const std::string cfg =
      "[net]\nwidth=64\nheight=64\nchannels=3\n"
      "[convolutional]\nfilters=64\nsize=3\npad=1\nactivation=leaky\n"
      "[convolutional]\nfilters=64\nsize=3\npad=1\nactivation=leaky\n"
      "[upsample]\nstride=4\n";
  const DarknetCfg parsed = parse_darknet_cfg(cfg, "t.cfg");
  EXPECT_NO_THROW(build_darknet_model(parsed));
  // Weights: 64*3*9*4 = 6912 and 64*64*9*4 = 147456 bytes.
  const std::string total = error_of([&] { build_darknet_model(parsed, {.limits = {.max_model_bytes = 150000}}); });
  EXPECT_TRUE(contains(total, "brings the model's weights to 154368 bytes")) << total;
  // The upsample's output (1, 64, 256, 256) takes 16 MiB.
  const std::string output =
      error_of([&] { build_darknet_model(parsed, {.limits = {.max_tensor_bytes = 16 * mib - 1}}); });
  EXPECT_TRUE(
      contains(output, "t.cfg:15 [upsample] (layer 2): the output (1, 64, 256, 256): 16777216 bytes (16.0 MiB)"))
      << output;
}

TEST_F(LoadLimitsFiles, TfjsTensorOverTheLimitFailsBeforeAnyShardIsRead) {
  using Json = nlohmann::json;
  const Json manifest =
      Json::array({{{"paths", {"missing-shard.bin"}},
                    {"weights", {{{"name", "huge"}, {"shape", {100000, 100000, 100}}, {"dtype", "float32"}}}}}});
  const std::string path = write("manifest.json", manifest.dump());
  const std::string message = error_of([&] { TfjsWeights::load(path); });
  EXPECT_TRUE(contains(message, path + ": tensor 'huge' [100000, 100000, 100]: 4000000000000 bytes")) << message;
}

TEST_F(LoadLimitsFiles, TfjsModelTotalIsLimited) {
  using Json = nlohmann::json;
  const Json entry = {{"shape", {1000}}, {"dtype", "float32"}};
  Json a = entry;
  a["name"] = "a";
  Json b = entry;
  b["name"] = "b";
  const Json manifest = Json::array({{{"paths", {"shard.bin"}}, {"weights", {a, b}}}});
  const std::string path = write("manifest.json", manifest.dump());
  write("shard.bin", std::string(8000, '\0'));
  EXPECT_EQ(TfjsWeights::load(path).tensors().size(), 2u);
  const std::string message = error_of([&] { TfjsWeights::load(path, {.max_model_bytes = 7999}); });
  EXPECT_TRUE(contains(message, "tensor 'b' [1000]: 4000 bytes (3.9 KiB) brings")) << message;
  EXPECT_TRUE(contains(message, "brings the model's weights to 8000 bytes")) << message;
}

TEST_F(LoadLimitsFiles, TfjsShardPathsMustStayInTheManifestFolder) {
  using Json = nlohmann::json;
  for (const std::string shard : {"/etc/passwd", "../outside.bin", "sub/../../outside.bin"}) {
    const Json manifest =
        Json::array({{{"paths", {shard}}, {"weights", {{{"name", "w"}, {"shape", {1}}, {"dtype", "float32"}}}}}});
    const std::string path = write("manifest.json", manifest.dump());
    const std::string message = error_of([&] { TfjsWeights::load(path); });
    EXPECT_TRUE(contains(message, fmt::format("shard path '{}' must be a relative path inside", shard))) << message;
  }
}

// A PNG signature and IHDR chunk for a width x height RGB image, no pixel data: enough for stb's header check.
std::string png_header(std::uint32_t width, std::uint32_t height) {
  std::string png("\x89PNG\r\n\x1a\n", 8);
  auto u32 = [&](std::uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) png.push_back(static_cast<char>((v >> shift) & 0xff));
  };
  u32(13);
  png += "IHDR";
  u32(width);
  u32(height);
  png += std::string("\x08\x02\x00\x00\x00", 5);  // 8 bits, RGB, deflate, no filter, no interlace
  u32(0);                                         // CRC (stb does not check it)
  return png;
}

TEST_F(LoadLimitsFiles, ImageHeaderIsCheckedBeforeDecoding) {
  const std::string path = write("huge.png", png_header(20000, 10000));
  const std::string message = error_of([&] { load_image(path); });
  EXPECT_TRUE(contains(message, path + ": the image (20000 x 10000 pixels, 3 channels): 2400000000 bytes (2.2 GiB)"))
      << message;
  const std::string grey = error_of([&] { load_image(path, 1, {.max_tensor_bytes = 1000}); });
  EXPECT_TRUE(contains(grey, "(20000 x 10000 pixels, 1 channels): 800000000 bytes")) << grey;
}

TEST(LoadLimits, DecodeImageFromMemoryMatchesLoadImage) {
  const std::string path = fixture_path("../../data/mnist/samples/digit_3_label_4.png");
  std::ifstream file(path, std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  const Variable decoded = decode_image({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()}, "digit", 1);
  EXPECT_TRUE(outputs_match(decoded, load_image(path, 1), 0.0));
  EXPECT_TRUE(contains(error_of([&] { decode_image({}, "nothing.png"); }), "nothing.png: cannot read the image"));
}

TEST(LoadLimits, IdxImagesAreLimited) {
  const std::string path = fixture_path("../../data/mnist/heldout-images-idx3-ubyte");
  const std::string message = error_of([&] { load_idx_images(path, {.max_tensor_bytes = mib}); });
  EXPECT_TRUE(contains(message, "IDX images 2000 x 28 x 28 as float32: 6272000 bytes")) << message;
  EXPECT_EQ(load_idx_images(path).shape(), (Shape{2000, 1, 28, 28}));
}

}  // namespace
}  // namespace corgy::testing
