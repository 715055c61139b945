// The Vulkan backend's own behaviour (on lavapipe in CI, with validation on): device choice and its errors,
// one submission per forward, recording once per shape, barriers only between dependent dispatches, weights
// uploaded once, zero-copy and the forced staging path. Layer parity is in layer_harness_test.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "corgy/backends/vulkan/gemm_dispatch.h"
#include "corgy/backends/vulkan/vulkan_context.h"
#include "test_util.h"
#include "vulkan_test_options.h"

namespace corgy::testing {
namespace {

// Two 3x3 convolutions, a max pool and a 1x1 convolution: a chain where every dispatch depends on the last.
Sequential small_chain(std::mt19937& rng) {
  Sequential model;
  model.add(
      Conv2d({.in_channels = 3, .out_channels = 8, .kernel = 3, .padding = 1, .activation = Activation::leaky_relu()}));
  model.add(MaxPool2d({.kernel = 2}));
  model.add(Conv2d({.in_channels = 8, .out_channels = 6, .kernel = 3, .padding = 1}));
  model.add(Conv2d({.in_channels = 6, .out_channels = 4, .kernel = 1}));
  randomize_parameters(model, rng);
  return model;
}

Variable expected_output(Sequential& model, const Variable& input) {
  model.set_backend("naive");
  return model.forward(input).clone();
}

TEST(VulkanBackend, ListsDevicesAndPicksByIndexOrName) {
  const std::vector<VulkanDeviceInfo> devices = vulkan_devices();
  ASSERT_FALSE(devices.empty());
  VulkanOptions by_index = validated_vulkan_options();
  by_index.device = std::to_string(devices.back().index);
  EXPECT_EQ(VulkanBackend(by_index).device().name, devices.back().name);
  VulkanOptions by_name = validated_vulkan_options();
  by_name.device = devices.front().name.substr(0, 4);  // part of the name, any case
  for (char& c : by_name.device) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(VulkanBackend(by_name).device().name, devices.front().name);
  EXPECT_EQ(make_backend("vulkan:" + std::to_string(devices.front().index))->name(), "vulkan");
}

TEST(VulkanBackend, UnknownDeviceIsAClearErrorListingTheDevices) {
  const std::string by_name = error_of([] { make_backend("vulkan:no-such-gpu"); });
  EXPECT_NE(by_name.find("no device name contains 'no-such-gpu'"), std::string::npos) << by_name;
  EXPECT_NE(by_name.find(vulkan_devices().front().name), std::string::npos) << by_name;
  const std::string by_index = error_of([] { make_backend("vulkan:99"); });
  EXPECT_NE(by_index.find("no device 99"), std::string::npos) << by_index;
}

TEST(VulkanBackend, MissingLoaderIsAClearError) {
  VulkanOptions options;
  options.loader = "libcorgy-test-no-such-vulkan-loader.so.1";
  const std::string message = error_of([&] { VulkanBackend backend(options); });
  EXPECT_NE(message.find("cannot open the Vulkan loader 'libcorgy-test-no-such-vulkan-loader.so.1'"), std::string::npos)
      << message;
}

// The loader reads VK_DRIVER_FILES (VK_ICD_FILENAMES before 1.3.207) at instance creation; pointed at a driver
// manifest that names no library, it finds no device.
class NoDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    manifest_ = std::filesystem::temp_directory_path() / "corgy_vulkan_test_no_driver.json";
    std::ofstream(manifest_)
        << R"({"file_format_version": "1.0.0", "ICD": {"library_path": "", "api_version": "1.1.0"}})";
    for (const char* name : {"VK_DRIVER_FILES", "VK_ICD_FILENAMES"}) {
      const char* value = std::getenv(name);
      saved_.emplace_back(name, value ? std::optional<std::string>(value) : std::nullopt);
      setenv(name, manifest_.c_str(), 1);
    }
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_)
      value ? (void)setenv(name.c_str(), value->c_str(), 1) : (void)unsetenv(name.c_str());
    std::filesystem::remove(manifest_);
  }
  std::filesystem::path manifest_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST_F(NoDriverTest, NoDeviceIsAClearErrorAndAutoFallsBackToBlas) {
  EXPECT_TRUE(vulkan_devices().empty());
  const std::string message = error_of([] { make_backend("vulkan"); });
  EXPECT_NE(message.find("no Vulkan device found"), std::string::npos) << message;
  ::testing::internal::CaptureStderr();
  const std::unique_ptr<Backend> backend = make_backend("auto");
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(backend->name(), "blas");
  EXPECT_NE(said.find("backend auto: blas"), std::string::npos) << said;
}

TEST(VulkanBackend, AutoPrefersAGpuAndSaysWhatItChose) {
  const std::vector<VulkanDeviceInfo> devices = vulkan_devices();
  const bool has_gpu = std::any_of(devices.begin(), devices.end(), [](const auto& d) { return d.is_gpu(); });
  ::testing::internal::CaptureStderr();
  const std::unique_ptr<Backend> backend = make_backend("auto");
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(backend->name(), has_gpu ? "vulkan" : "blas") << said;
  EXPECT_NE(said.find(has_gpu ? "backend auto: vulkan on" : "backend auto: blas, since no Vulkan GPU"),
            std::string::npos)
      << said;
}

// Breaks a valid-usage rule of vkCreateBuffer on purpose: a buffer of size 0.
void create_empty_buffer(const vulkan::Context& context) {
  VkBufferCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  info.size = 0;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  VkBuffer buffer = VK_NULL_HANDLE;
  if (context.vk().vkCreateBuffer(context.device(), &info, nullptr, &buffer) == VK_SUCCESS) {
    context.vk().vkDestroyBuffer(context.device(), buffer, nullptr);
  }
}

// Proof that the messenger works: the invalid call is reported, and counted.
void expect_the_empty_buffer_reported() {
  std::vector<std::string> messages;
  VulkanOptions options;
  options.validation = true;
  options.on_validation_message = [&](const std::string& message) { messages.push_back(message); };
  vulkan::Context context(options);
  EXPECT_EQ(context.validation_messages(), 0u);
  create_empty_buffer(context);
  ASSERT_FALSE(messages.empty());
  EXPECT_NE(messages.front().find("VUID-VkBufferCreateInfo-size"), std::string::npos) << messages.front();
  EXPECT_EQ(context.validation_messages(), messages.size());
}

TEST(VulkanBackend, ValidationMessagesAreCaughtAndCounted) { expect_the_empty_buffer_reported(); }

TEST(VulkanBackend, ValidationCountsFindingsNotGeneralNotices) {
  using vulkan::is_validation_finding;
  EXPECT_TRUE(is_validation_finding(VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
                                    VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT));
  EXPECT_TRUE(is_validation_finding(VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
                                    VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT));
  EXPECT_TRUE(is_validation_finding(VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
                                    VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT));
  EXPECT_TRUE(is_validation_finding(VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
                                    VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT));
  // What the loader posts about an exported VK_INSTANCE_LAYERS, and the layers' informational messages.
  EXPECT_FALSE(is_validation_finding(VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
                                     VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT));
  EXPECT_FALSE(is_validation_finding(VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT,
                                     VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT));
}

// Vulkan developers often export VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation. The loader then posts a general
// warning ("env var 'VK_INSTANCE_LAYERS' defined and adding layers ...") at every instance it creates, which is
// no finding about corgy's calls: validation mode must not fail for it, and must still fail for a real error.
class InstanceLayersExportedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* value = std::getenv(name_)) saved_ = value;
    setenv(name_, "VK_LAYER_KHRONOS_validation", 1);
  }
  void TearDown() override { saved_ ? (void)setenv(name_, saved_->c_str(), 1) : (void)unsetenv(name_); }
  static constexpr const char* name_ = "VK_INSTANCE_LAYERS";
  std::optional<std::string> saved_;
};

TEST_F(InstanceLayersExportedTest, AValidForwardPassesValidation) {
  std::mt19937 rng(13);
  Sequential model = small_chain(rng);
  const Variable input = random_variable({1, 3, 10, 10}, rng);
  const Variable expected = expected_output(model, input);
  auto owned = std::make_unique<VulkanBackend>(validated_vulkan_options());  // any message fails the test
  const VulkanStats& stats = owned->stats();
  model.set_backend(std::move(owned));
  EXPECT_TRUE(outputs_match(model.forward(input), expected));
  EXPECT_EQ(stats.validation_messages, 0u);
  model.set_backend(make_backend("vulkan", {.validation = true}));  // throws at end_forward() on a message
  EXPECT_TRUE(outputs_match(model.forward(input), expected));
}

TEST_F(InstanceLayersExportedTest, ARealValidationErrorIsStillReported) { expect_the_empty_buffer_reported(); }

TEST(VulkanBackend, OneSubmissionPerForwardAndOneRecordingPerShape) {
  std::mt19937 rng(11);
  Sequential model = small_chain(rng);
  const Variable input = random_variable({2, 3, 12, 12}, rng);
  const Variable expected = expected_output(model, input);
  VulkanOptions options = validated_vulkan_options();
  options.convolution.split_k = 1;  // one dispatch per convolution on any device
  auto owned = std::make_unique<VulkanBackend>(options);
  VulkanBackend& vulkan = *owned;
  model.set_backend(std::move(owned));
  for (int run = 0; run < 3; ++run) EXPECT_TRUE(outputs_match(model.forward(input), expected)) << "run " << run;
  EXPECT_EQ(vulkan.stats().submissions, 3u);
  EXPECT_EQ(vulkan.stats().recordings, 1u);
  EXPECT_EQ(vulkan.stats().upload_submissions, 1u);  // all weights, once
  // The convolution with its max pool fused into one dispatch, then a dispatch per convolution.
  EXPECT_EQ(vulkan.stats().last_dispatches, 3);
  EXPECT_EQ(vulkan.stats().last_barriers, 2);  // a chain: each dispatch reads the one before
  // Another batch size: planned and recorded again, then reused.
  const Variable single = random_variable({1, 3, 12, 12}, rng);
  const Variable expected_single = expected_output(model, single);
  model.set_backend(make_backend("vulkan", {.validation = true}));
  model.forward(single);
  EXPECT_TRUE(outputs_match(model.forward(single), expected_single));
}

TEST(VulkanBackend, PipelineStatisticsAreKeptOnlyWhereAskedForAndOffered) {
  std::mt19937 rng(12);
  Sequential model = small_chain(rng);
  const Variable input = random_variable({1, 3, 12, 12}, rng);
  const Variable expected = expected_output(model, input);
  VulkanOptions options = validated_vulkan_options();
  options.pipeline_statistics = true;
  auto owned = std::make_unique<VulkanBackend>(options);
  VulkanBackend& vulkan = *owned;
  model.set_backend(std::move(owned));
  EXPECT_TRUE(outputs_match(model.forward(input), expected));
  const std::vector<VulkanPipelineStatistics> statistics = vulkan.pipeline_statistics();
  if (vulkan.keeps_pipeline_statistics()) {
    // A GPU whose driver reports them (NVIDIA's): every pipeline the forward compiled, each with its values.
    ASSERT_FALSE(statistics.empty());
    EXPECT_TRUE(std::any_of(statistics.begin(), statistics.end(),
                            [](const VulkanPipelineStatistics& s) { return s.kernel.find("conv2d") == 0; }));
    for (const VulkanPipelineStatistics& s : statistics) EXPECT_FALSE(s.values.empty()) << s.kernel;
  } else {
    EXPECT_TRUE(statistics.empty());  // lavapipe does not offer VK_KHR_pipeline_executable_properties
  }
  const VulkanBackend plain(validated_vulkan_options());
  EXPECT_FALSE(plain.keeps_pipeline_statistics());
  EXPECT_TRUE(plain.pipeline_statistics().empty());
}

TEST(VulkanBackend, IndependentDispatchesShareABarrier) {
  // Two 1x1 convolutions of the input, then their concatenation: the convolutions run side by side, and the
  // two copies of the concatenation write disjoint channels, so one barrier (convolutions -> copies) suffices.
  std::mt19937 rng(5);
  Sequential model;
  const int a = model.add(Conv2d({.in_channels = 4, .out_channels = 3, .kernel = 1}), {Sequential::model_input});
  const int b = model.add(Conv2d({.in_channels = 4, .out_channels = 5, .kernel = 1}), {Sequential::model_input});
  model.add(Concat(), {a, b});
  randomize_parameters(model, rng);
  const Variable input = random_variable({1, 4, 6, 6}, rng);
  const Variable expected = expected_output(model, input);
  auto owned = std::make_unique<VulkanBackend>(validated_vulkan_options());
  const VulkanStats& stats = owned->stats();
  model.set_backend(std::move(owned));
  EXPECT_TRUE(outputs_match(model.forward(input), expected));
  EXPECT_EQ(stats.last_dispatches, 4);
  EXPECT_EQ(stats.last_barriers, 1);
}

TEST(VulkanBackend, StridedCopiesIntoDisjointPartsShareABarrier) {
  // A TensorConcat along axis 1 is one copy_strided per input, each declaring only the region it writes: as for
  // Concat, one barrier (convolutions -> copies) suffices.
  std::mt19937 rng(6);
  Sequential model;
  const int a = model.add(Conv2d({.in_channels = 4, .out_channels = 3, .kernel = 1}), {Sequential::model_input});
  const int b = model.add(Conv2d({.in_channels = 4, .out_channels = 5, .kernel = 1}), {Sequential::model_input});
  model.add(TensorConcat({{1, 3, 6, 6}, {1, 5, 6, 6}}, 1), {a, b});
  randomize_parameters(model, rng);
  const Variable input = random_variable({1, 4, 6, 6}, rng);
  const Variable expected = expected_output(model, input);
  auto owned = std::make_unique<VulkanBackend>(validated_vulkan_options());
  const VulkanStats& stats = owned->stats();
  model.set_backend(std::move(owned));
  EXPECT_TRUE(outputs_match(model.forward(input), expected));
  EXPECT_EQ(stats.last_dispatches, 4);
  EXPECT_EQ(stats.last_barriers, 1);
}

TEST(VulkanBackend, StridedCopiesKeepFp16IntermediatesInHalf) {
  // NCHW -> NHWC -> NCHW between convolutions (ConvNeXt's permutes) and a reversed slice, in fp16 precision: the
  // copies read and write device-only intermediates as halves (copy_strided_fp16), the output stays fp32.
  std::mt19937 rng(7);
  Sequential model;
  model.add(Conv2d({.in_channels = 3, .out_channels = 8, .kernel = 3, .padding = 1}));
  model.add(Transpose({2, 8, 7, 9}, {0, 2, 3, 1}));
  model.add(TensorSlice({2, 7, 9, 8}, {{.axis = 2, .start = 8, .stop = -1, .step = -1}}));
  model.add(Transpose({2, 7, 9, 8}, {0, 3, 1, 2}));
  model.add(Conv2d({.in_channels = 8, .out_channels = 4, .kernel = 1}));
  randomize_parameters(model, rng);
  const Variable input = random_variable({2, 3, 7, 9}, rng);
  const Variable expected = expected_output(model, input);
  VulkanOptions options = validated_vulkan_options();
  options.precision = Precision::fp16;
  auto owned = std::make_unique<VulkanBackend>(options);
  VulkanBackend& vulkan = *owned;
  model.set_backend(std::move(owned));
  EXPECT_TRUE(outputs_match(model.forward(input), expected, 2e-2));
  if (vulkan.precision() != Precision::fp16) GTEST_SKIP() << "the device has no 16-bit storage: fp32 ran";
  vulkan.set_profiling(true);
  model.forward(input);
  int half_copies = 0;
  for (const VulkanDispatchProfile& d : vulkan.dispatch_profile()) half_copies += d.kernel == "copy_strided_fp16";
  EXPECT_EQ(half_copies, 3);
}

TEST(VulkanBackend, ChangedWeightsAreUploadedAgain) {
  std::mt19937 rng(2);
  Sequential model = small_chain(rng);
  const Variable input = random_variable({1, 3, 8, 8}, rng);
  // The upload count of the static plans: on a GPU the tuner's candidates would add their own weight arrangements.
  VulkanOptions options = validated_vulkan_options();
  options.convolution.tuning = VulkanTuning::off;
  auto owned = std::make_unique<VulkanBackend>(options);
  const VulkanStats& stats = owned->stats();
  model.set_backend(std::move(owned));
  model.forward(input);
  randomize_parameters(model, rng);  // calls weights_changed()
  const Variable& output = model.forward(input);
  EXPECT_EQ(stats.upload_submissions, 2u);
  Variable result = output.clone();
  EXPECT_TRUE(outputs_match(result, expected_output(model, input)));
}

TEST(VulkanBackend, ZeroCopyWhereOfferedAndForcedStagingGiveTheSameResults) {
  std::mt19937 rng(8);
  Sequential model = small_chain(rng);
  Variable input = random_variable({3, 3, 10, 10}, rng);
  const Variable expected = expected_output(model, input);
  for (bool force_staging : {false, true}) {
    VulkanOptions options = validated_vulkan_options();
    options.force_staging = force_staging;
    auto owned = std::make_unique<VulkanBackend>(options);
    EXPECT_EQ(owned->zero_copy(), owned->device().host_import && !force_staging);
    model.set_backend(std::move(owned));
    for (int run = 0; run < 2; ++run) {
      EXPECT_TRUE(outputs_match(model.forward(input), expected)) << "staging " << force_staging << " run " << run;
    }
  }
  // New values in the same input Variable reach the device on the next forward, with either path.
  fill_random(input, rng, 1.0f);
  const Variable changed = expected_output(model, input);
  for (bool force_staging : {false, true}) {
    VulkanOptions options = validated_vulkan_options();
    options.force_staging = force_staging;
    model.set_backend(std::make_unique<VulkanBackend>(options));
    EXPECT_TRUE(outputs_match(model.forward(input), changed)) << "staging " << force_staging;
  }
}

TEST(VulkanBackend, PolledAndBlockingWaitsGiveTheSameResults) {
  // 0: every forward sleeps in vkWaitForFences; 1 us: the poll gives up at once (and is skipped after a long
  // wait); a minute: every forward is polled to the end.
  std::mt19937 rng(9);
  Sequential model = small_chain(rng);
  const Variable input = random_variable({2, 3, 10, 10}, rng);
  const Variable expected = expected_output(model, input);
  for (int spin_wait_us : {0, 1, 60'000'000}) {
    VulkanOptions options = validated_vulkan_options();
    options.spin_wait_us = spin_wait_us;
    model.set_backend(std::make_unique<VulkanBackend>(options));
    for (int run = 0; run < 3; ++run) {
      EXPECT_TRUE(outputs_match(model.forward(input), expected)) << "spin " << spin_wait_us << " run " << run;
    }
  }
}

TEST(VulkanBackend, GemmTileShapesMatchNaive) {
  // The shapes the automatic choice uses and one more; ragged sizes (scalar loads, bounds everywhere) and
  // multiples of 4 (vec4 loads and stores); every transpose with the first shape, the two extremes with others.
  std::vector<VulkanGemmTiles> shapes = {{128, 64, 16, 8, 4}};
  for (const vulkan::RatedTiles& rated : vulkan::gemm_tile_choices()) shapes.push_back(rated.tiles);
  std::mt19937 rng(6);
  NaiveBackend naive;
  struct Sizes {
    int m, n, k;
  };
  for (const VulkanGemmTiles& tiles : shapes) {
    VulkanOptions options = validated_vulkan_options();
    options.gemm_tiles = tiles;
    VulkanBackend vulkan(options);
    for (const Sizes& s : {Sizes{37, 45, 29}, Sizes{68, 132, 36}}) {
      for (const auto& [ta, tb] : {std::pair{false, false}, {true, true}, {false, true}, {true, false}}) {
        if (tiles.tile_m != shapes.back().tile_m && ta != tb) continue;
        const Variable a = random_variable(ta ? Shape::matrix(s.k, s.m) : Shape::matrix(s.m, s.k), rng);
        const Variable b = random_variable(tb ? Shape::matrix(s.n, s.k) : Shape::matrix(s.k, s.n), rng);
        EXPECT_TRUE(outputs_match(matmul(vulkan, a, b, ta, tb), matmul(naive, a, b, ta, tb)))
            << "tiles " << tiles.tile_m << "x" << tiles.tile_n << "x" << tiles.tile_k << ", " << s.m << "x" << s.n
            << "x" << s.k << " ta " << ta << " tb " << tb;
      }
    }
  }
}

TEST(VulkanBackend, ForcedTileShapesThatBreakTheRulesAreClearErrors) {
  VulkanOptions options = validated_vulkan_options();
  options.gemm_tiles = {64, 64, 16, 4, 6};
  VulkanBackend odd(options);
  const Variable a(Shape::matrix(8, 8));
  const std::string message = error_of([&] { matmul(odd, a, a); });
  EXPECT_NE(message.find("multiples of 4"), std::string::npos) << message;
  options.gemm_tiles = {256, 256, 64, 4, 4};
  VulkanBackend huge(options);
  const std::string limits = error_of([&] { matmul(huge, a, a); });
  EXPECT_NE(limits.find("the device allows"), std::string::npos) << limits;
}

TEST(VulkanBackend, LoneOperationsOutsideAForwardRunAtOnce) {
  std::mt19937 rng(4);
  VulkanBackend vulkan(validated_vulkan_options());
  NaiveBackend naive;
  const Variable x = random_variable({2, 3, 5, 5}, rng);
  Variable expected(x.shape());
  Variable actual(x.shape());
  naive.activation(Activation::sigmoid(), x, expected);
  vulkan.activation(Activation::sigmoid(), x, actual);
  EXPECT_TRUE(outputs_match(actual, expected));
  EXPECT_EQ(vulkan.stats().submissions, 1u);
  // In place, as the Backend interface allows.
  Variable in_place = x.clone();
  vulkan.activation(Activation::sigmoid(), in_place, in_place);
  EXPECT_TRUE(outputs_match(in_place, expected));
}

}  // namespace
}  // namespace corgy::testing
