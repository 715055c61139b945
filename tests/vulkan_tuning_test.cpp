// The Vulkan backend's convolution tuning (conv_tuner.h) and its cache file (tuning_cache.h), on whatever device is
// there (lavapipe in CI, where tuning is off unless asked for: these tests ask), with the validation layer on:
// tuned results equal the static tables' within the kernels' rounding, a second backend plans from the file
// without timing, files that are corrupt, truncated, of another identity or hostile are ignored, turning tuning
// off or forcing a plan leaves the static tables' or the forced plan, and an unwritable cache folder costs only a
// note on stderr. The driver's pipeline cache kept beside the file (pipeline_compiler.h) is read back by a second
// backend, and a damaged or foreign one never reaches the driver.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "corgy/backends/vulkan/embedded_kernels.h"
#include "corgy/backends/vulkan/pipeline_compiler.h"
#include "corgy/backends/vulkan/tuning_cache.h"
#include "corgy/io/cache_file.h"
#include "test_util.h"
#include "vulkan_test_options.h"

namespace corgy::testing {
namespace {

namespace fs = std::filesystem;

VulkanOptions tuned_options(const fs::path& cache) {
  VulkanOptions options = sweep_vulkan_options();
  options.convolution.tuning = VulkanTuning::on;
  options.tuning_cache = cache.string();
  return options;
}

// Three convolution shapes with several candidates each (Winograd, direct, the GEMM tiles), one with a fused pool.
struct Layer {
  Conv2dDesc desc;
  Shape input;
  bool pool = false;
};

std::vector<Layer> layers() {
  const Activation leaky = Activation::leaky_relu(0.1f);
  return {
      {{.in_channels = 16, .out_channels = 24, .kernel = 1}, {2, 16, 9, 9}},
      {{.in_channels = 3, .out_channels = 8, .kernel = 3, .padding = 1, .activation = leaky}, {1, 3, 16, 16}, true},
      {{.in_channels = 64, .out_channels = 64, .kernel = 3, .padding = 1, .activation = leaky}, {2, 64, 10, 10}},
  };
}

struct Operands {
  Variable input, weights, bias;
};

std::vector<Operands> operands() {
  std::mt19937 rng(23);
  std::vector<Operands> result;
  for (const Layer& layer : layers()) {
    const Conv2dDesc& d = layer.desc;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d.in_channels * d.kernel * d.kernel));
    result.push_back({random_variable(layer.input, rng),
                      random_variable({d.out_channels, d.in_channels, d.kernel, d.kernel}, rng, scale),
                      random_variable(Shape::vector(d.out_channels), rng)});
  }
  return result;
}

const Pool2dDesc max_pool_2x2{.kind = PoolKind::max, .kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2};

// The first `count` layers once on `backend`, as one forward (the tuner saves at its end). Tests that need only
// one shape take the first, whose candidates are fewest: every candidate's pipeline is compiled, which on lavapipe
// takes about 0.1 s.
std::vector<Variable> run_layers(Backend& backend, const std::vector<Operands>& ops, std::size_t count = 3) {
  std::vector<Layer> all = layers();
  all.resize(count);
  std::vector<Variable> outputs;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Conv2dDesc& d = all[i].desc;
    const Shape& in = all[i].input;
    const int h = d.output_size(in.h), w = d.output_size(in.w);
    outputs.emplace_back(all[i].pool ? Shape{in.n, d.out_channels, h / 2, w / 2} : Shape{in.n, d.out_channels, h, w});
    backend.upload_constant(ops[i].weights);
    backend.upload_constant(ops[i].bias);
  }
  backend.begin_forward();
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].pool) {
      backend.conv2d_maxpool(all[i].desc, max_pool_2x2, ops[i].input, ops[i].weights, &ops[i].bias, outputs[i]);
    } else {
      backend.conv2d(all[i].desc, ops[i].input, ops[i].weights, &ops[i].bias, outputs[i]);
    }
  }
  backend.end_forward();
  return outputs;
}

void expect_close(const std::vector<Variable>& actual, const std::vector<Variable>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) EXPECT_LE(max_relative_error(actual[i], expected[i]), 1e-4) << i;
}

TEST(VulkanTuning, TunedForwardMatchesNaiveAndTheCacheIsReadBack) {
  const TempFolder folder;
  const fs::path cache = folder.path() / "tuning.jsonl";
  const std::vector<Operands> ops = operands();
  NaiveBackend naive;
  const std::vector<Variable> expected = run_layers(naive, ops);

  VulkanBackend first(tuned_options(cache));
  first.set_profiling(true);
  expect_close(run_layers(first, ops), expected);
  EXPECT_EQ(first.stats().conv_plans_timed, 3u);
  EXPECT_GE(first.stats().conv_candidates_timed, 6u);
  EXPECT_EQ(first.stats().conv_plans_from_cache, 0u);
  // The profile says where each plan came from, after the convolution's last dispatch.
  int tuned = 0;
  for (const VulkanDispatchProfile& d : first.dispatch_profile()) tuned += contains(d.detail, "[tuned]") ? 1 : 0;
  EXPECT_EQ(tuned, 3);
  // The same shapes again on this backend: remembered, not timed again.
  expect_close(run_layers(first, ops), expected);
  EXPECT_EQ(first.stats().conv_plans_timed, 3u);

  const std::string text = read_text(cache);
  EXPECT_TRUE(contains(text, "\"corgy_vulkan_tuning\"")) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4) << text;

  // A second backend (another process, as far as the cache is concerned) plans every shape from the file.
  VulkanBackend second(tuned_options(cache));
  second.set_profiling(true);
  expect_close(run_layers(second, ops), expected);
  EXPECT_EQ(second.stats().conv_plans_timed, 0u);
  EXPECT_EQ(second.stats().conv_candidates_timed, 0u);
  EXPECT_EQ(second.stats().conv_plans_from_cache, 3u);
  int cached = 0;
  for (const VulkanDispatchProfile& d : second.dispatch_profile())
    cached += contains(d.detail, "[tuning cache]") ? 1 : 0;
  EXPECT_EQ(cached, 3);
}

// The file's text as a cache reads it, without a device: every damaged or foreign variant gives no entry (a
// truncated file, those of its whole lines), and the next save replaces it with a whole file.
TEST(VulkanTuning, DamagedAndForeignFilesAreIgnored) {
  const TempFolder folder;
  const vulkan::TuningIdentity identity{"GPU", 0x10de, 0x2330, 42, "00ff", "0.1.0", "abc", 1};
  std::map<std::string, vulkan::TunedChoice> entries;
  for (const char* key : {"fp32 conv a", "fp32 conv b", "fp32 conv c"}) {
    entries[key] = {{.algorithm = VulkanConvAlgorithm::implicit_gemm, .tiles = {64, 64, 16, 4, 4}, .split_k = 1}, 0.5};
  }
  const std::string text = vulkan::format_tuning_cache(entries, identity);
  const std::string header = text.substr(0, text.find('\n'));
  const std::string entry = text.substr(header.size() + 1, text.find('\n', header.size() + 1) - header.size() - 1);
  std::string other_version = header;
  other_version.replace(other_version.find("\"corgy_vulkan_tuning\":") + 22, 1, "9");
  std::string out_of_range = entry;
  out_of_range.replace(out_of_range.find("\"split_k\":"), 11, "\"split_k\":99999999");
  const std::vector<std::pair<std::string, std::string>> files = {
      {"empty", ""},
      {"garbage", std::string("\x7f\x45\x4c\x46\x02\x01\x01\0\0\0garbage{{{[[[\n\xff\xfe", 25)},
      {"truncated", text.substr(0, text.size() - 20)},
      {"only a header", header + "\n"},
      {"other version", other_version + text.substr(header.size())},
      {"no header", text.substr(header.size() + 1)},
      {"out of range", header + "\n" + out_of_range + "\n"},
      {"wrong types", header + "\n{\"key\":7,\"algorithm\":[],\"tiles\":{},\"coopmat_tiles\":null}\n[1,2,3]\n\"x\"\n"},
      {"deep nesting", header + "\n" + std::string(100000, '[') + "\n" + std::string(1500, '[') + "\n"},
      {"too large", header + "\n" + std::string(3 << 20, 'x') + "\n" + text.substr(header.size() + 1)},
  };
  for (const auto& [name, contents] : files) {
    SCOPED_TRACE(name);
    const fs::path file = folder.path() / "cache.jsonl";
    write_text(file, contents);
    vulkan::TuningCache cache(file, identity);
    EXPECT_EQ(cache.find("fp32 conv a").has_value(), name == "truncated");
    EXPECT_FALSE(cache.find("fp32 conv c").has_value());
    cache.store("fp32 conv d", {{.algorithm = VulkanConvAlgorithm::direct}, 1.0});
    cache.save();
    vulkan::TuningCache reader(file, identity);
    EXPECT_TRUE(reader.find("fp32 conv d").has_value());
  }
}

// On the device: a file of another driver, one whose plans do not fit the layer, and things that are not a file
// in its place are timed over (and the file made whole again where it can be).
TEST(VulkanTuning, BackendRetimesStaleUnfitAndHostileFiles) {
  const TempFolder folder;
  const fs::path good = folder.path() / "good.jsonl";
  const std::vector<Operands> ops = operands();
  NaiveBackend naive;
  const std::vector<Variable> expected = run_layers(naive, ops, 1);
  {
    VulkanBackend writer(tuned_options(good));
    run_layers(writer, ops, 1);
  }
  const std::string text = read_text(good);
  const std::string header = text.substr(0, text.find('\n'));
  std::string other_driver = header;
  other_driver.replace(other_driver.find("\"driver_version\":") + 17, 1, "9");
  // A plan that cannot run the layer (the patch cooperative-matrix kernel in fp32 precision) is not one of its
  // candidates.
  std::string unfit = text;
  const std::size_t at = unfit.find("\"algorithm\":\"") + 13;
  unfit.replace(at, unfit.find('"', at) - at, "patch_cooperative_matrix");
  const std::vector<std::pair<std::string, std::string>> files = {
      {"other driver", other_driver + text.substr(header.size())}, {"unfit plan", unfit}, {"folder", ""}, {"fifo", ""}};
  for (const auto& [name, contents] : files) {
    SCOPED_TRACE(name);
    const fs::path file = folder.path() / (name + ".jsonl");
    if (name == "fifo") {
      ASSERT_EQ(::mkfifo(file.c_str(), 0600), 0);  // must not block the read
    } else if (name == "folder") {
      fs::create_directories(file / "inside");
    } else {
      write_text(file, contents);
    }
    ::testing::internal::CaptureStderr();  // the folder cannot be replaced: a note
    VulkanBackend backend(tuned_options(file));
    expect_close(run_layers(backend, ops, 1), expected);
    ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(backend.stats().conv_plans_timed, 1u);
    EXPECT_EQ(backend.stats().conv_plans_from_cache, 0u);
    if (name != "folder") {
      VulkanBackend reader(tuned_options(file));
      run_layers(reader, ops, 1);
      EXPECT_EQ(reader.stats().conv_plans_from_cache, 1u);
    }
  }
}

TEST(VulkanTuning, FileIdentityAndLimitsAreChecked) {
  vulkan::TuningIdentity identity{"GPU", 0x10de, 0x2330, 42, "00ff", "0.1.0", "abc", 1};
  std::map<std::string, vulkan::TunedChoice> entries;
  entries["fp32 conv a"] = {{.algorithm = VulkanConvAlgorithm::winograd}, 0.5};
  entries["fp32 conv b"] = {
      {.algorithm = VulkanConvAlgorithm::implicit_gemm, .tiles = {64, 64, 16, 4, 4}, .split_k = 2}, 0.25};
  entries["fp16 conv c"] = {
      {.algorithm = VulkanConvAlgorithm::cooperative_matrix, .coopmat_tiles = {4, 2, 2, 2, 32}, .split_k = 1}, 0.125};
  entries["fp16 conv d + add"] = {{.algorithm = VulkanConvAlgorithm::cooperative_matrix,
                                   .coopmat_tiles = {2, 4, 2, 2, 32},
                                   .split_k = 1,
                                   .fuse_residual = false},
                                  0.0625};
  const std::string text = vulkan::format_tuning_cache(entries, identity);
  const auto read = vulkan::parse_tuning_cache(text, identity);
  ASSERT_EQ(read.size(), 4u);
  EXPECT_EQ(read.at("fp32 conv b").plan.tiles.tile_m, 64u);
  EXPECT_EQ(read.at("fp32 conv b").plan.split_k, 2u);
  EXPECT_EQ(read.at("fp16 conv c").plan.coopmat_tiles.tile_k, 32u);
  EXPECT_TRUE(read.at("fp16 conv c").plan.fuse_residual);
  EXPECT_FALSE(read.at("fp16 conv d + add").plan.fuse_residual);
  for (auto change : std::vector<std::function<void(vulkan::TuningIdentity&)>>{
           [](auto& i) { i.device = "other"; }, [](auto& i) { i.vendor_id = 1; }, [](auto& i) { i.device_id = 1; },
           [](auto& i) { i.driver_version = 43; }, [](auto& i) { i.pipeline_cache_uuid = "11"; },
           [](auto& i) { i.corgy_version = "0.2.0"; }, [](auto& i) { i.kernels = "abd"; },
           [](auto& i) { i.format = 2; }}) {
    vulkan::TuningIdentity other = identity;
    change(other);
    EXPECT_TRUE(vulkan::parse_tuning_cache(text, other).empty());
  }
  // Tiles past the limit, an unknown algorithm, a negative split: those lines only are skipped.
  const std::string header = text.substr(0, text.find('\n') + 1);
  const std::string bad =
      header +
      "{\"key\":\"x\",\"algorithm\":\"winograd\",\"tiles\":[99999,0,0,0,0],\"coopmat_tiles\":[0,0,0,0,0],"
      "\"split_k\":0,\"ms\":1}\n"
      "{\"key\":\"y\",\"algorithm\":\"im2col_gemm\",\"tiles\":[0,0,0,0,0],\"coopmat_tiles\":[0,0,0,0,0],"
      "\"split_k\":0,\"ms\":1}\n"
      "{\"key\":\"z\",\"algorithm\":\"winograd\",\"tiles\":[0,0,0,0,0],\"coopmat_tiles\":[0,0,0,0,0],"
      "\"split_k\":-1,\"ms\":1}\n" +
      text.substr(header.size());
  EXPECT_EQ(vulkan::parse_tuning_cache(bad, identity).size(), 4u);
}

TEST(VulkanTuning, ResidualLayersAreTunedUnderTheirOwnKey) {
  // conv2d_add: its candidates are timed with the residual's add (fused into the kernel or not), and the choice is
  // kept under a key of its own; the result matches naive whichever way won.
  TempFolder folder;
  const fs::path cache = folder.path() / "tuning.jsonl";
  const std::vector<Operands> ops = operands();
  const Layer layer = layers()[2];
  const Conv2dDesc& d = layer.desc;
  const Shape out{layer.input.n, d.out_channels, d.output_size(layer.input.h), d.output_size(layer.input.w)};
  std::mt19937 rng(29);
  const Variable residual = random_variable(out, rng);
  Variable expected(out);
  NaiveBackend().conv2d_add(d, ops[2].input, ops[2].weights, &ops[2].bias, residual, expected);
  VulkanBackend vulkan(tuned_options(cache));
  vulkan.upload_constant(ops[2].weights);
  vulkan.upload_constant(ops[2].bias);
  Variable output(out);
  vulkan.begin_forward();
  vulkan.conv2d_add(d, ops[2].input, ops[2].weights, &ops[2].bias, residual, output);
  vulkan.end_forward();
  EXPECT_LE(max_relative_error(output, expected), 1e-4);
  EXPECT_EQ(vulkan.stats().conv_plans_timed, 1u);
  EXPECT_NE(read_text(cache).find(" + add\""), std::string::npos) << read_text(cache);
}

// A forward of chained layers, two of one shape and a third of that shape with a residual added: the candidates of
// every new shape are timed at the end of the forward's description and the fastest put in each layer's place,
// on that layer's own buffers, before the forward runs. The first forward must run the plans the next one does
// (the same kernels and details in the profile) and both must match naive.
std::vector<Variable> run_chain(Backend& backend, const std::vector<Variable>& weights,
                                const std::vector<Variable>& biases, const Variable& input) {
  const Conv2dDesc d{
      .in_channels = 16, .out_channels = 16, .kernel = 3, .padding = 1, .activation = Activation::relu()};
  const Shape& in = input.shape();
  std::vector<Variable> outputs;
  for (int i = 0; i < 3; ++i) outputs.emplace_back(in);
  outputs.emplace_back(Shape{in.n, 16, in.h / 2, in.w / 2});
  for (const Variable& w : weights) backend.upload_constant(w);
  for (const Variable& b : biases) backend.upload_constant(b);
  backend.begin_forward();
  backend.conv2d(d, input, weights[0], &biases[0], outputs[0]);
  backend.conv2d(d, outputs[0], weights[1], &biases[1], outputs[1]);
  backend.conv2d_add(d, outputs[1], weights[2], &biases[2], outputs[0], outputs[2]);
  backend.conv2d_maxpool(d, max_pool_2x2, outputs[2], weights[3], &biases[3], outputs[3]);
  backend.end_forward();
  return outputs;
}

TEST(VulkanTuning, FirstForwardRunsThePlansTimedAtItsEnd) {
  const TempFolder folder;
  std::mt19937 rng(31);
  const Variable input = random_variable({2, 16, 10, 10}, rng);
  std::vector<Variable> weights, biases;
  for (int i = 0; i < 4; ++i) {
    weights.push_back(random_variable({16, 16, 3, 3}, rng, 1.0f / 12.0f));
    biases.push_back(random_variable(Shape::vector(16), rng));
  }
  NaiveBackend naive;
  const std::vector<Variable> expected = run_chain(naive, weights, biases, input);

  VulkanBackend vulkan(tuned_options(folder.path() / "tuning.jsonl"));
  vulkan.set_profiling(true);
  expect_close(run_chain(vulkan, weights, biases, input), expected);
  EXPECT_EQ(vulkan.stats().conv_plans_timed, 3u);  // two layers share a shape
  const std::vector<VulkanDispatchProfile> first = vulkan.dispatch_profile();
  expect_close(run_chain(vulkan, weights, biases, input), expected);
  EXPECT_EQ(vulkan.stats().conv_plans_timed, 3u);
  const std::vector<VulkanDispatchProfile>& second = vulkan.dispatch_profile();
  ASSERT_EQ(first.size(), second.size());
  int tuned = 0;
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].kernel, second[i].kernel) << i;
    EXPECT_EQ(first[i].detail, second[i].detail) << i;
    tuned += contains(first[i].detail, "[tuned]") ? 1 : 0;
  }
  EXPECT_EQ(tuned, 4);
}

TEST(VulkanTuning, TwoWritersKeepEachOthersEntries) {
  const TempFolder folder;
  const fs::path file = folder.path() / "shared.jsonl";
  const vulkan::TuningIdentity identity{"GPU", 1, 2, 3, "ab", "0.1.0", "k", 1};
  vulkan::TuningCache a(file, identity);
  vulkan::TuningCache b(file, identity);
  EXPECT_FALSE(a.find("first"));
  EXPECT_FALSE(b.find("second"));
  a.store("first", {{.algorithm = VulkanConvAlgorithm::direct}, 1.0});
  b.store("second", {{.algorithm = VulkanConvAlgorithm::winograd}, 2.0});
  a.save();
  b.save();
  vulkan::TuningCache reader(file, identity);
  ASSERT_TRUE(reader.find("first"));
  EXPECT_EQ(reader.find("first")->algorithm, VulkanConvAlgorithm::direct);
  ASSERT_TRUE(reader.find("second"));
  EXPECT_EQ(reader.find("second")->algorithm, VulkanConvAlgorithm::winograd);
  // No temporary file is left beside it.
  int files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(folder.path())) ++files;
  EXPECT_EQ(files, 1);
}

TEST(VulkanTuning, OffAndForcedPlansAreNotTuned) {
  const TempFolder folder;
  // A file per backend: on a GPU the default tunes and writes its own.
  const fs::path cache = folder.path() / "static.jsonl";
  const std::vector<Operands> ops = operands();
  VulkanOptions static_options = sweep_vulkan_options();
  static_options.convolution.tuning = VulkanTuning::off;
  static_options.tuning_cache = cache.string();
  VulkanBackend reference(static_options);
  reference.set_profiling(true);
  run_layers(reference, ops);
  EXPECT_EQ(reference.stats().conv_plans_timed, 0u);
  EXPECT_FALSE(fs::exists(cache));

  // The default on a CPU device (lavapipe) is the static table too; on a GPU it tunes.
  VulkanOptions default_options = sweep_vulkan_options();
  default_options.tuning_cache = (folder.path() / "default.jsonl").string();
  VulkanBackend by_default(default_options);
  by_default.set_profiling(true);
  run_layers(by_default, ops);
  if (by_default.device().type == "CPU") {
    EXPECT_EQ(by_default.stats().conv_plans_timed, 0u);
    ASSERT_EQ(by_default.dispatch_profile().size(), reference.dispatch_profile().size());
    for (std::size_t i = 0; i < reference.dispatch_profile().size(); ++i) {
      EXPECT_EQ(by_default.dispatch_profile()[i].kernel, reference.dispatch_profile()[i].kernel);
      EXPECT_EQ(by_default.dispatch_profile()[i].detail, reference.dispatch_profile()[i].detail);
    }
  }

  // make_backend's switch.
  auto off = make_backend("vulkan", {.validation = kSweepValidation, .tuning = false});
  run_layers(*off, ops);
  EXPECT_EQ(dynamic_cast<VulkanBackend&>(*off).stats().conv_plans_timed, 0u);

  // A forced algorithm runs, tuning on or not.
  const fs::path forced_cache = folder.path() / "forced.jsonl";
  VulkanOptions forced = tuned_options(forced_cache);
  forced.convolution.algorithm = VulkanConvAlgorithm::implicit_gemm;
  VulkanBackend forced_backend(forced);
  forced_backend.set_profiling(true);
  run_layers(forced_backend, ops);
  EXPECT_EQ(forced_backend.stats().conv_plans_timed, 0u);
  for (const VulkanDispatchProfile& d : forced_backend.dispatch_profile()) {
    EXPECT_TRUE(d.kernel == "conv2d_implicit_gemm" || d.kernel == "conv2d_split_k_reduce") << d.kernel;
  }
  EXPECT_FALSE(fs::exists(forced_cache));
}

TEST(VulkanTuning, UnwritableCacheFolderLeavesANoteAndTunes) {
  const TempFolder folder;
  write_text(folder.path() / "a file", "not a folder");
  const std::vector<Operands> ops = operands();
  NaiveBackend naive;
  const std::vector<Variable> expected = run_layers(naive, ops, 1);
  ::testing::internal::CaptureStderr();
  VulkanBackend backend(tuned_options(folder.path() / "a file" / "tuning.jsonl"));
  expect_close(run_layers(backend, ops, 1), expected);
  const std::string note = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(backend.stats().conv_plans_timed, 1u);
  EXPECT_TRUE(contains(note, "tuning cache was not saved")) << note;
}

TEST(VulkanTuning, DefaultFileFollowsXdgCacheHome) {
  const TempFolder folder;
  const std::string saved_xdg = std::getenv("XDG_CACHE_HOME") ? std::getenv("XDG_CACHE_HOME") : "";
  const std::string saved_home = std::getenv("HOME") ? std::getenv("HOME") : "";
  VulkanOptions options = tuned_options("");
  options.tuning_cache.clear();
  {
    // Made before XDG_CACHE_HOME changes: Mesa keeps its shader cache there too, and a cold one costs seconds.
    VulkanBackend backend(options);
    ::setenv("XDG_CACHE_HOME", (folder.path() / "xdg").c_str(), 1);
    EXPECT_EQ(default_tuning_cache_folder(), folder.path() / "xdg" / "corgy");
    run_layers(backend, operands(), 1);
  }
  int files = 0;
  for (const auto& entry : fs::directory_iterator(folder.path() / "xdg" / "corgy")) {
    EXPECT_TRUE(entry.path().filename().string().starts_with("vulkan-tuning-")) << entry.path();
    ++files;
  }
  EXPECT_EQ(files, 1);
  // A relative XDG_CACHE_HOME is not used (the XDG rule): ~/.cache.
  ::setenv("XDG_CACHE_HOME", "relative", 1);
  ::setenv("HOME", folder.path().c_str(), 1);
  EXPECT_EQ(default_tuning_cache_folder(), folder.path() / ".cache" / "corgy");
  if (saved_xdg.empty()) {
    ::unsetenv("XDG_CACHE_HOME");
  } else {
    ::setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
  }
  ::setenv("HOME", saved_home.c_str(), 1);
}

// The pipeline-cache file's checks, without a device: the driver's data comes back only from a whole, unchanged
// file whose Vulkan header names this device.
TEST(VulkanTuning, PipelineCacheFileIsCheckedBeforeTheDriverSeesIt) {
  VkPhysicalDeviceProperties properties{};
  properties.vendorID = 0x10de;
  properties.deviceID = 0x2330;
  for (std::uint8_t i = 0; i < VK_UUID_SIZE; ++i) properties.pipelineCacheUUID[i] = i;
  VkPipelineCacheHeaderVersionOne header{};
  header.headerSize = sizeof header;
  header.headerVersion = VK_PIPELINE_CACHE_HEADER_VERSION_ONE;
  header.vendorID = properties.vendorID;
  header.deviceID = properties.deviceID;
  std::memcpy(header.pipelineCacheUUID, properties.pipelineCacheUUID, VK_UUID_SIZE);
  std::string data(reinterpret_cast<const char*>(&header), sizeof header);
  data += "the driver's compiled pipelines";
  const std::string file = vulkan::pipeline_cache_file_bytes(data);

  const std::optional<std::string_view> read = vulkan::pipeline_cache_driver_data(file, properties);
  ASSERT_TRUE(read);
  EXPECT_EQ(*read, data);
  // Any byte changed, a byte missing or added, no header: nothing.
  for (std::size_t i = 0; i < file.size(); ++i) {
    std::string changed = file;
    changed[i] = static_cast<char>(changed[i] ^ 0x20);
    EXPECT_FALSE(vulkan::pipeline_cache_driver_data(changed, properties)) << "byte " << i;
  }
  EXPECT_FALSE(vulkan::pipeline_cache_driver_data(file.substr(0, file.size() - 1), properties));
  EXPECT_FALSE(vulkan::pipeline_cache_driver_data(file + "x", properties));
  EXPECT_FALSE(vulkan::pipeline_cache_driver_data("", properties));
  EXPECT_FALSE(vulkan::pipeline_cache_driver_data(data, properties));
  // Whole and unchanged, but another device's, driver build's or vendor's.
  for (int field = 0; field < 3; ++field) {
    VkPhysicalDeviceProperties other = properties;
    if (field == 0) other.deviceID += 1;
    if (field == 1) other.pipelineCacheUUID[7] ^= 1;
    if (field == 2) other.vendorID = 0x1002;
    EXPECT_FALSE(vulkan::pipeline_cache_driver_data(file, other)) << "field " << field;
  }
  // Whole, this device's, but written by a library with other kernels (the fingerprint after the magic, its hash
  // not covered by the data's): nothing, so that a new version starts a file of its own pipelines.
  std::string other_kernels = file;
  std::uint64_t fingerprint = 0;
  std::memcpy(&fingerprint, other_kernels.data() + 16, sizeof fingerprint);
  EXPECT_EQ(fingerprint, vulkan::embedded_kernels_fingerprint());
  fingerprint += 1;
  std::memcpy(other_kernels.data() + 16, &fingerprint, sizeof fingerprint);
  EXPECT_FALSE(vulkan::pipeline_cache_driver_data(other_kernels, properties));
}

// A backend saves the driver's pipeline cache beside the tuning cache; the next one gives it to the driver; a
// damaged file is not given, and the forward is right either way; without cache files none is written.
TEST(VulkanTuning, PipelineCacheIsKeptBesideTheTuningCache) {
  const TempFolder folder;
  const fs::path cache = folder.path() / "tuning.jsonl";
  const fs::path pipelines = folder.path() / "tuning.jsonl.pipelines";
  const std::vector<Operands> ops = operands();
  NaiveBackend naive;
  const std::vector<Variable> expected = run_layers(naive, ops, 1);
  VulkanOptions options = sweep_vulkan_options();
  options.tuning_cache = cache.string();
  {
    VulkanBackend first(options);
    EXPECT_EQ(first.stats().pipeline_cache_loaded_bytes, 0u);
    expect_close(run_layers(first, ops, 1), expected);
    EXPECT_GT(first.stats().pipelines_compiled, 0u);
  }
  const std::string saved = read_text(pipelines);
  ASSERT_GT(saved.size(), 40u);
  EXPECT_TRUE(saved.starts_with("corgy-vk-pipes-2"));
  {
    VulkanBackend second(options);
    EXPECT_EQ(second.stats().pipeline_cache_loaded_bytes, saved.size() - 40);
    expect_close(run_layers(second, ops, 1), expected);
  }
  std::string damaged = saved;
  damaged.back() = static_cast<char>(damaged.back() ^ 1);
  write_text(pipelines, damaged);
  {
    VulkanBackend third(options);
    EXPECT_EQ(third.stats().pipeline_cache_loaded_bytes, 0u);
    expect_close(run_layers(third, ops, 1), expected);
  }
  // Its pipelines compiled again, the damaged file was replaced by a whole one.
  const std::string replaced = read_text(pipelines);
  EXPECT_TRUE(replaced.starts_with("corgy-vk-pipes-2"));
  EXPECT_NE(replaced, damaged);

  const fs::path unused = folder.path() / "unused.jsonl";
  VulkanOptions no_files = options;
  no_files.tuning_cache = unused.string();
  no_files.use_tuning_cache = false;
  VulkanBackend without(no_files);
  expect_close(run_layers(without, ops, 1), expected);
  EXPECT_FALSE(fs::exists(fs::path(unused.string() + ".pipelines")));
}

}  // namespace
}  // namespace corgy::testing
