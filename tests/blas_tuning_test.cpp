// Plan-time tuning of the blas backend's convolutions (corgy/backends/blas/conv_tuner.h): which layers are timed,
// that a choice is remembered for the process and in the tuning cache file (tuning_cache.h), and that forced
// algorithms are left alone. The results of every choice are checked against the naive backend by the layer harness.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "corgy/backends/blas/blas_backend.h"
#include "corgy/backends/blas/conv_plan.h"
#include "corgy/backends/blas/conv_tuner.h"
#include "corgy/backends/blas/tuning_cache.h"
#include "test_util.h"

namespace corgy::testing {
namespace {

/// A one-thread blas backend whose choices are kept in this process only: what another test process wrote to the
/// default tuning cache file must not decide what these tests see timed.
std::unique_ptr<Backend> blas_in_memory(BlasConvolution convolution = BlasConvolution::automatic) {
  return std::make_unique<BlasBackend>(
      BlasOptions{.threads = 1, .convolution = convolution, .use_tuning_cache = false});
}

/// The algorithm text the profile gives for each layer of one forward of `model` on `backend`.
std::vector<std::string> profiled_algorithms(Sequential& model, std::unique_ptr<Backend> backend, const Shape& input) {
  std::mt19937 rng(9);
  randomize_parameters(model, rng);
  model.set_backend(std::move(backend));
  model.backend().set_profiling(true);
  model.forward(random_variable(input, rng));
  std::vector<std::string> algorithms;
  for (const OpProfile& entry : model.backend().take_profile()) algorithms.push_back(entry.algorithm);
  return algorithms;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(BlasTuning, TimesTheCandidatesOnceAndRemembersTheChoice) {
  // 3x3 stride 1 with >= 8 channels: F(4x4, 3x3), F(2x2, 3x3) and the packed GEMM all apply. An input shape no
  // other test uses, so the process-wide table has no entry for it yet.
  const Shape input{1, 24, 23, 19};
  Sequential first;
  first.add(Conv2d({.in_channels = 24, .out_channels = 24, .kernel = 3, .padding = 1}));
  first.add(Conv2d({.in_channels = 24, .out_channels = 24, .kernel = 3, .padding = 1}));
  first.add(Conv2d({.in_channels = 24, .out_channels = 16, .kernel = 1}));
  const std::vector<std::string> algorithms = profiled_algorithms(first, blas_in_memory(), input);
  ASSERT_EQ(algorithms.size(), 3u);
  EXPECT_TRUE(contains(algorithms[0], "[measured of 3]")) << algorithms[0];
  EXPECT_TRUE(contains(algorithms[1], "[measured before]")) << algorithms[1];  // the same shape: not timed again
  // A 1x1: the packed GEMM per image against one GEMM over the batch's pixels.
  EXPECT_TRUE(contains(algorithms[2], "[measured of 2]")) << algorithms[2];

  Sequential second;  // another model with the same layer shape: the process remembers
  second.add(Conv2d({.in_channels = 24, .out_channels = 24, .kernel = 3, .padding = 1}));
  EXPECT_TRUE(contains(profiled_algorithms(second, blas_in_memory(), input).at(0), "[measured before]"));

  Sequential forced;
  forced.add(Conv2d({.in_channels = 24, .out_channels = 24, .kernel = 3, .padding = 1}));
  const std::string forced_algorithm =
      profiled_algorithms(forced, blas_in_memory(BlasConvolution::winograd2x2), input).at(0);
  EXPECT_TRUE(contains(forced_algorithm, "F(2x2,3x3)")) << forced_algorithm;
  EXPECT_TRUE(contains(forced_algorithm, "[forced]")) << forced_algorithm;
}

TEST(BlasTuning, KeptPlansAreFoundAgainAfterAnotherShape) {
  // With the plans of two shapes kept (Sequential::set_kept_plans, passed to the backend), returning to the first
  // shape finds its plan as it was made ("measured of 3"); with one kept, the first shape is planned again (from
  // the process's table: "measured before"). Shapes no other test uses.
  const auto algorithm_at = [](Sequential& model, const Shape& input) {
    std::mt19937 rng(5);
    model.forward(random_variable(input, rng));
    return model.backend().take_profile().at(0).algorithm;
  };
  for (const int kept : {2, 1}) {
    const Shape one{1, 24, 21 + kept, 17}, two{2, 24, 21 + kept, 17};
    Sequential model;
    model.add(Conv2d({.in_channels = 24, .out_channels = 24, .kernel = 3, .padding = 1}));
    std::mt19937 rng(9);
    randomize_parameters(model, rng);
    model.set_backend(blas_in_memory());
    model.set_kept_plans(kept);
    model.backend().set_profiling(true);
    EXPECT_TRUE(contains(algorithm_at(model, one), "[measured of 3]"));
    EXPECT_TRUE(contains(algorithm_at(model, two), "[measured of 3]"));
    const std::string again = algorithm_at(model, one);
    EXPECT_TRUE(contains(again, kept == 2 ? "[measured of 3]" : "[measured before]")) << kept << ": " << again;
  }
}

TEST(BlasTuning, CandidatesStartWithTheTablesChoice) {
  const Conv2dDesc wide{.in_channels = 64, .out_channels = 64, .kernel = 3, .padding = 1};
  const std::vector<blas::ConvChoice> three = blas::candidate_algorithms(wide, {1, 64, 56, 56});
  ASSERT_EQ(three.size(), 3u);
  EXPECT_EQ(three[0].algorithm, blas::ConvAlgorithm::winograd);
  EXPECT_EQ(three[0].variant, blas::WinogradVariant::f4x4);
  EXPECT_EQ(three[2].algorithm, blas::ConvAlgorithm::packed_gemm);

  const Conv2dDesc pointwise{.in_channels = 64, .out_channels = 32, .kernel = 1};
  // On a small map (7x7), also the transposed GEMM with the output channels in the lanes; on a larger one not.
  const std::vector<blas::ConvChoice> small_map = blas::candidate_algorithms(pointwise, {8, 64, 7, 7});
  ASSERT_EQ(small_map.size(), 3u);
  EXPECT_EQ(small_map[0].algorithm, blas::ConvAlgorithm::packed_gemm);
  EXPECT_EQ(small_map[1].algorithm, blas::ConvAlgorithm::pointwise_batch);
  EXPECT_EQ(small_map[2].algorithm, blas::ConvAlgorithm::channels_in_lanes);
  EXPECT_EQ(blas::candidate_algorithms(pointwise, {8, 64, 28, 28}).size(), 2u);

  // At stride 2, the transposed GEMM on any map (it reads the taps in place); at stride 3 only on small ones.
  const Conv2dDesc strided{.in_channels = 64, .out_channels = 64, .kernel = 3, .stride = 2, .padding = 1};
  const std::vector<blas::ConvChoice> strided_large = blas::candidate_algorithms(strided, {1, 64, 56, 56});
  ASSERT_EQ(strided_large.size(), 2u);
  EXPECT_EQ(strided_large[0].algorithm, blas::ConvAlgorithm::packed_gemm);
  EXPECT_EQ(strided_large[1].algorithm, blas::ConvAlgorithm::channels_in_lanes);
  Conv2dDesc stride3 = strided;
  stride3.stride = 3;
  EXPECT_EQ(blas::candidate_algorithms(stride3, {1, 64, 56, 56}).size(), 1u);
  const std::vector<blas::ConvChoice> strided_small = blas::candidate_algorithms(strided, {1, 64, 14, 14});
  ASSERT_EQ(strided_small.size(), 2u);
  EXPECT_EQ(strided_small[1].algorithm, blas::ConvAlgorithm::channels_in_lanes);
  // Grouped (ResNeXt's 32 groups of 16 channels): the transposed GEMM, a panel per group, on a small map; not for
  // groups of fewer than 8 channels, nor where its 32-bit tap offsets would not reach across the padded image.
  const Conv2dDesc grouped{.in_channels = 512, .out_channels = 512, .kernel = 3, .padding = 1, .groups = 32};
  const std::vector<blas::ConvChoice> grouped_small = blas::candidate_algorithms(grouped, {1, 512, 14, 14});
  ASSERT_EQ(grouped_small.size(), 2u);
  EXPECT_EQ(grouped_small[0].algorithm, blas::ConvAlgorithm::packed_gemm);
  EXPECT_EQ(grouped_small[1].algorithm, blas::ConvAlgorithm::channels_in_lanes);
  Conv2dDesc narrow_groups = grouped;
  narrow_groups.in_channels = narrow_groups.out_channels = 128;
  EXPECT_EQ(blas::candidate_algorithms(narrow_groups, {1, 128, 14, 14}).size(), 1u);
  Conv2dDesc huge_strided = grouped;
  huge_strided.stride = 2;
  EXPECT_EQ(blas::candidate_algorithms(huge_strided, {1, 512, 2048, 2048}).size(), 1u);
  EXPECT_EQ(blas::candidate_algorithms(huge_strided, {1, 512, 56, 56}).size(), 2u);
  const Conv2dDesc depthwise{.in_channels = 8, .out_channels = 8, .kernel = 3, .padding = 1, .groups = 8};
  // Depthwise: the channel blocks first on small planes, the plane kernel first on large ones; each times the other.
  const std::vector<blas::ConvChoice> small = blas::candidate_algorithms(depthwise, {1, 8, 9, 9});
  ASSERT_EQ(small.size(), 2u);
  EXPECT_EQ(small[0].algorithm, blas::ConvAlgorithm::depthwise_channel_blocks);
  EXPECT_EQ(small[1].algorithm, blas::ConvAlgorithm::depthwise);
  EXPECT_EQ(blas::candidate_algorithms(depthwise, {1, 8, 56, 56}).at(0).algorithm, blas::ConvAlgorithm::depthwise);
  // Only the plane kernel where the channel blocks' tile would outgrow L2 (112 x 112), or at dilation 2.
  EXPECT_EQ(blas::candidate_algorithms(depthwise, {1, 8, 112, 112}).size(), 1u);
  Conv2dDesc dilated = depthwise;
  dilated.dilation = 2;
  dilated.padding = 2;
  EXPECT_EQ(blas::candidate_algorithms(dilated, {1, 8, 9, 9}).size(), 1u);
  EXPECT_NE(blas::tuning_key(wide, {1, 64, 56, 56}, 1), blas::tuning_key(wide, {1, 64, 56, 56}, 2));
}

// Weights that every kept plan holds a copy of are paged out (ConvPlanCache::store): the layer's tensor then lives in
// a file mapping, and a plan for another input shape, the naive backend and the caller read the same values from it.
TEST(BlasTuning, WeightsHeldByThePlansArePagedOutAndStillRead) {
  Sequential model;  // 256 -> 256 3x3: 2.4 MB of weights, mapped (page_memory.h), planned by a packed algorithm
  model.add(Conv2d({.in_channels = 256, .out_channels = 256, .kernel = 3, .padding = 1}));
  std::mt19937 rng(3);
  randomize_parameters(model, rng);
  const Variable& weights = dynamic_cast<const Conv2d&>(model.layer(0)).weights();
  const Variable original = weights.clone();
  Sequential reference;
  reference.add(Conv2d({.in_channels = 256, .out_channels = 256, .kernel = 3, .padding = 1}));
  Conv2d& reference_layer = dynamic_cast<Conv2d&>(reference.layer(0));
  reference_layer.weights() = original.clone();
  reference_layer.bias() = dynamic_cast<const Conv2d&>(model.layer(0)).bias().clone();
  reference.set_backend("naive", 1);
  model.set_backend("blas", 1);
  for (const Shape& shape : {Shape{1, 256, 9, 11}, Shape{2, 256, 6, 5}}) {
    SCOPED_TRACE(shape.str());
    const Variable input = random_variable(shape, rng);
    const Variable output = model.forward(input).clone();
    std::ifstream maps("/proc/self/maps");
    const auto address = reinterpret_cast<std::uintptr_t>(weights.data());
    std::string line, mapping;
    while (std::getline(maps, line)) {
      std::uintptr_t begin = 0, end = 0;
      if (std::sscanf(line.c_str(), "%lx-%lx", &begin, &end) == 2 && begin <= address && address < end) mapping = line;
    }
    if (mapping.find('/') == std::string::npos) {
      GTEST_SKIP() << "the weights were not paged out (an AddressSanitizer build, or no temporary folder on a disk): "
                   << mapping;
    }
    EXPECT_EQ(max_relative_error(weights, original), 0.0) << mapping;
    EXPECT_LT(max_relative_error(output, reference.forward(input)), 1e-4);
  }
}

// The tuner evicts each candidate's packed weights before timing it (conv_tuner.h: evict_from_caches): every
// algorithm that packs weights must name them, all of them, and evicting them must leave them as they were.
TEST(BlasTuning, EveryPlanNamesThePackedWeightsItReads) {
  struct Layer {
    Conv2dDesc desc;
    Shape input;
  };
  const std::vector<Layer> layers = {
      {{.in_channels = 64, .out_channels = 64, .kernel = 3, .padding = 1}, {1, 64, 56, 56}},
      {{.in_channels = 24, .out_channels = 40, .kernel = 5, .padding = 2}, {1, 24, 14, 14}},
      {{.in_channels = 64, .out_channels = 40, .kernel = 1}, {2, 64, 7, 7}},
      {{.in_channels = 64, .out_channels = 64, .kernel = 3, .stride = 2, .padding = 1}, {1, 64, 14, 14}},
      {{.in_channels = 3, .out_channels = 16, .kernel = 3, .stride = 2, .padding = 1}, {1, 3, 32, 32}},
      {{.in_channels = 8, .out_channels = 8, .kernel = 3, .padding = 1, .groups = 8}, {1, 8, 9, 9}},
  };
  std::mt19937 rng(5);
  blas::ThreadTeam team(1);
  for (const Layer& layer : layers) {
    const Conv2dDesc& desc = layer.desc;
    const Variable weights =
        random_variable({desc.out_channels, desc.in_channels / desc.groups, desc.kernel, desc.kernel}, rng);
    const Variable bias = random_variable({1, desc.out_channels, 1, 1}, rng);
    const std::vector<blas::ConvChoice> candidates = blas::candidate_algorithms(desc, layer.input);
    const std::string name = fmt::format("{}->{} k{} s{} g{} at {}", desc.in_channels, desc.out_channels, desc.kernel,
                                         desc.stride, desc.groups, layer.input.str());
    ASSERT_GE(candidates.size(), 2u) << name;
    for (const blas::ConvChoice& choice : candidates) {
      const blas::ConvPlan plan = blas::plan_convolution(desc, layer.input, weights, &bias, choice, team);
      SCOPED_TRACE(name + ": " + plan.describe());
      const std::vector<std::span<const float>> buffers = plan.weight_buffers();
      if (choice.algorithm == blas::ConvAlgorithm::depthwise) {
        EXPECT_TRUE(buffers.empty());  // reads the layer's own weights (the tuner evicts those too)
        continue;
      }
      std::size_t floats = 0;
      std::vector<std::vector<float>> before;
      for (const std::span<const float> buffer : buffers) {
        EXPECT_FALSE(buffer.empty());
        floats += buffer.size();
        before.emplace_back(buffer.begin(), buffer.end());
      }
      EXPECT_GE(floats, weights.count());  // packed, every weight is there at least once
      blas::evict_from_caches(buffers);
      for (std::size_t i = 0; i < buffers.size(); ++i) {
        EXPECT_TRUE(std::equal(buffers[i].begin(), buffers[i].end(), before[i].begin()));
      }
    }
  }
}

// A layer planned at another batch size (Backend::set_kept_plans) usually packs the same values: the plan cache keeps
// one copy (ConvPlan::share_packed_weights). Every buffer of the second plan whose values equal the first's is the
// first's buffer; the plan of other weights of the same shape shares none.
TEST(BlasTuning, PlansOfOneLayerAtTwoBatchSizesHoldEachPackingOnce) {
  struct Layer {
    Conv2dDesc desc;
    Shape input;  // batch 1; planned again at batch 3
  };
  const std::vector<Layer> layers = {
      {{.in_channels = 64, .out_channels = 64, .kernel = 3, .padding = 1}, {1, 64, 20, 20}},
      {{.in_channels = 64, .out_channels = 40, .kernel = 1}, {1, 64, 7, 7}},
      {{.in_channels = 64, .out_channels = 64, .kernel = 3, .stride = 2, .padding = 1}, {1, 64, 14, 14}},
      {{.in_channels = 3, .out_channels = 16, .kernel = 3, .stride = 2, .padding = 1}, {1, 3, 32, 32}},
  };
  std::mt19937 rng(6);
  blas::ThreadTeam team(1);
  int shared_plans = 0;
  for (const Layer& layer : layers) {
    const Conv2dDesc& desc = layer.desc;
    const Shape weights_shape{desc.out_channels, desc.in_channels / desc.groups, desc.kernel, desc.kernel};
    const Variable weights = random_variable(weights_shape, rng);
    const Variable other_weights = random_variable(weights_shape, rng);
    const Variable bias = random_variable({1, desc.out_channels, 1, 1}, rng);
    const Shape batch3{3, layer.input.c, layer.input.h, layer.input.w};
    for (const blas::ConvChoice& choice : blas::candidate_algorithms(desc, layer.input)) {
      blas::ConvPlanCache cache;
      cache.set_kept_shapes(2);
      const blas::ConvPlan& one =
          cache.store(weights, blas::plan_convolution(desc, layer.input, weights, &bias, choice, team));
      const blas::ConvPlan& three =
          cache.store(weights, blas::plan_convolution(desc, batch3, weights, &bias, choice, team));
      const blas::ConvPlan& other =
          cache.store(other_weights, blas::plan_convolution(desc, batch3, other_weights, &bias, choice, team));
      SCOPED_TRACE(fmt::format("{}->{} k{} s{}: {} then {}", desc.in_channels, desc.out_channels, desc.kernel,
                               desc.stride, one.describe(), three.describe()));
      const std::vector<std::span<const float>> first = one.weight_buffers(), second = three.weight_buffers();
      bool shared = false;
      for (std::size_t i = 0; i < std::min(first.size(), second.size()); ++i) {
        const bool same_values =
            first[i].size() == second[i].size() && std::equal(first[i].begin(), first[i].end(), second[i].begin());
        // The depthwise and few-channel kernels' small packings stay each plan's own.
        const bool shareable = one.algorithm != blas::ConvAlgorithm::depthwise_channel_blocks &&
                               one.algorithm != blas::ConvAlgorithm::few_channels;
        if (same_values && shareable) {
          EXPECT_EQ(second[i].data(), first[i].data()) << "buffer " << i;
        }
        shared = shared || second[i].data() == first[i].data();
      }
      shared_plans += shared ? 1 : 0;
      for (const std::span<const float> buffer : other.weight_buffers()) {
        for (const std::span<const float> mine : second) EXPECT_NE(buffer.data(), mine.data());
      }
    }
  }
  // Of the 11 plans of these layers on an AVX-512 CPU, 8 share: not the two Winograd plans, whose tile follows the
  // tile count (25 tiles at batch 1, 75 at batch 3), nor the few-channel kernel's small packing.
  EXPECT_GE(shared_plans, 4);
}

// The plans kept for two batch sizes, and the ones after a third drops the first, compute what the naive backend does
// from the packings they share.
TEST(BlasTuning, PlansSharingTheirPackingComputeEachBatchSize) {
  for (const BlasConvolution convolution :
       {BlasConvolution::packed, BlasConvolution::winograd, BlasConvolution::automatic}) {
    Sequential model, reference;
    for (Sequential* m : {&model, &reference}) {
      m->add(
          Conv2d({.in_channels = 16, .out_channels = 24, .kernel = 3, .padding = 1, .activation = Activation::relu()}));
      m->add(Conv2d({.in_channels = 24, .out_channels = 8, .kernel = 1}));
    }
    std::mt19937 rng(8);
    randomize_parameters(model, rng);
    for (int i = 0; i < 2; ++i) {
      auto& from = dynamic_cast<Conv2d&>(model.layer(i));
      auto& to = dynamic_cast<Conv2d&>(reference.layer(i));
      to.weights() = from.weights().clone();
      to.bias() = from.bias().clone();
    }
    model.set_backend(blas_in_memory(convolution));
    model.set_kept_plans(2);
    reference.set_backend("naive", 1);
    for (const int batch : {1, 3, 1, 5, 3, 1}) {
      SCOPED_TRACE(fmt::format("convolution {}, batch {}", static_cast<int>(convolution), batch));
      const Variable input = random_variable({batch, 16, 13, 11}, rng);
      EXPECT_LT(max_relative_error(model.forward(input), reference.forward(input)), 1e-4);
    }
  }
}

// Two rounds decide a clear winner; a close call between the best two is run again before it is decided (and kept
// in the tuning cache).
TEST(BlasTuning, CloseCallsAreTimedAgain) {
  std::vector<int> runs(3, 0);
  // Candidate 1 leads the first two rounds by 4% (noise on candidate 0's runs); the later rounds show 0 is faster.
  const std::vector<std::vector<double>> times = {
      {1.20, 1.15, 1.00, 1.00, 1.00}, {1.10, 1.10, 1.10, 1.10, 1.10}, {3.00, 3.00}};
  const blas::Fastest close = blas::fastest_candidate(3, [&](std::size_t i) { return times[i].at(runs[i]++); });
  EXPECT_EQ(close.index, 0u);
  EXPECT_DOUBLE_EQ(close.ms, 1.00);
  EXPECT_EQ(runs, (std::vector<int>{2 + blas::kCloseCallRounds, 2 + blas::kCloseCallRounds, 2}));
  std::fill(runs.begin(), runs.end(), 0);
  const std::vector<std::vector<double>> clear = {{2.0, 2.0}, {1.0, 1.0}, {3.0, 3.0}};
  EXPECT_EQ(blas::fastest_candidate(3, [&](std::size_t i) { return clear[i].at(runs[i]++); }).index, 1u);
  EXPECT_EQ(runs, (std::vector<int>{2, 2, 2}));
}

blas::CpuTuningIdentity test_identity() {
  return {.cpu = "Test CPU 9000", .isa = "avx512", .corgy_version = "0.1.0", .library = "5f2c01", .format = 1};
}

// The file's text: what is written is read back; a file of another identity, and malformed lines, are not used.
TEST(BlasTuningCache, ReadsBackWhatItWritesAndIgnoresForeignOrBrokenText) {
  const blas::CpuTuningIdentity id = test_identity();
  const std::string text =
      blas::format_blas_tuning_cache({{"64->64 k3 s1 p1 d1 g1 in (1, 64, 56, 56) t1 avx512", {"winograd f2x2", 0.25}},
                                      {"key b", {"packed_gemm", 1.5}}},
                                     id);
  const std::map<std::string, blas::TunedEntry> read = blas::parse_blas_tuning_cache(text, id);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read.at("64->64 k3 s1 p1 d1 g1 in (1, 64, 56, 56) t1 avx512").choice, "winograd f2x2");
  EXPECT_EQ(read.at("key b").choice, "packed_gemm");
  EXPECT_DOUBLE_EQ(read.at("key b").ms, 1.5);
  std::vector<blas::CpuTuningIdentity> others(5, id);
  others[0].cpu = "Other CPU";
  others[1].isa = "avx2";
  others[2].corgy_version = "0.2.0";
  others[3].library = "5f2c02";  // another build of corgy
  others[4].format = 2;
  for (const blas::CpuTuningIdentity& other : others) EXPECT_TRUE(blas::parse_blas_tuning_cache(text, other).empty());
  const std::string header = text.substr(0, text.find('\n') + 1);
  const std::string broken =
      header + "not json\n" + R"({"key":"no ms","choice":"packed_gemm"})" + "\n" +
      R"({"key":1,"choice":"packed_gemm","ms":1})" + "\n" + R"({"key":"long choice","choice":")" +
      std::string(65, 'x') + R"(","ms":1})" + "\n" + R"({"key":"long line","choice":"packed_gemm","ms":1,"pad":")" +
      std::string(2000, 'x') + "\"}\n[1,2]\n\n" + R"({"key":"no count","choice":"packed_gemm","ms":0.5})" + "\n" +
      R"({"key":"negative count","choice":"packed_gemm","ms":0.5,"agreed":-1})" + "\n" +
      R"({"key":"huge count","choice":"packed_gemm","ms":0.5,"agreed":1001})" + "\n" +
      R"({"key":"disturbed","choice":"packed_gemm","ms":0.5,"agreed":0})" + "\n" +
      R"({"key":"fewer measured","choice":"packed_gemm","ms":0.5,"agreed":2,"measured":1})" + "\n" +
      R"({"key":"huge measured","choice":"packed_gemm","ms":0.5,"agreed":0,"measured":1001})" + "\n" +
      R"({"key":"text measured","choice":"packed_gemm","ms":0.5,"agreed":0,"measured":"4"})" + "\n" +
      R"({"key":"measured","choice":"packed_gemm","ms":0.5,"agreed":1,"measured":3})" + "\n" +
      R"({"key":"good","choice":"packed_gemm","ms":0.5,"agreed":1})" + "\n";
  const std::map<std::string, blas::TunedEntry> only_good = blas::parse_blas_tuning_cache(broken, id);
  ASSERT_EQ(only_good.size(), 3u);
  EXPECT_EQ(only_good.at("disturbed").agreed, 0);  // a measurement made while the cores were disturbed
  EXPECT_EQ(only_good.at("disturbed").measured, 0);
  EXPECT_EQ(only_good.at("measured").agreed, 1);
  EXPECT_EQ(only_good.at("measured").measured, 3);
  EXPECT_EQ(only_good.at("good").agreed, 1);
  EXPECT_EQ(only_good.at("good").measured, 1);  // a file of a corgy that did not count it: as agreed
  for (const std::string& junk : {std::string(), std::string("\0\xff{", 3), header.substr(0, 20), std::string("{}\n")})
    EXPECT_TRUE(blas::parse_blas_tuning_cache(junk, id).empty());
}

TEST(BlasTuningCache, AChoiceIsUsedOnlyWhereItIsStillACandidate) {
  const TempFolder folder;
  const std::filesystem::path file = folder.path() / "tuning.jsonl";
  write_text(
      file, blas::format_blas_tuning_cache({{"layer", {"winograd f4x4", 1.0, blas::kAgreedToTrust}}}, test_identity()));
  blas::TuningTable table(file, test_identity());
  const std::string with[] = {"packed_gemm", "winograd f4x4"};
  const std::string without[] = {"packed_gemm", "pointwise_batch"};
  EXPECT_EQ(table.find("layer", with), 1u);
  EXPECT_FALSE(table.find("layer", without));  // e.g. a candidate a later corgy no longer times for that shape
  EXPECT_FALSE(table.find("another layer", with));
}

// One process's measurement is not trusted by the next: a choice is planned from the file once two processes in a
// row measured it; a process that measures another choice starts the count again.
TEST(BlasTuningCache, AChoiceIsTrustedOnceTwoProcessesAgreed) {
  const TempFolder folder;
  const std::filesystem::path file = folder.path() / "tuning.jsonl";
  const std::string names[] = {"packed_gemm", "winograd f4x4", "winograd f2x2"};
  const auto process = [&](const std::string& measured) {  // a later process: its own table of the file
    blas::TuningTable table(file, test_identity());
    std::optional<std::size_t> planned = table.find("layer", names);
    if (!planned) {
      table.record("layer", {measured, 1.0});
      planned = table.find("layer", names);  // this process's own measurement is used at once
      table.save();
    }
    return std::pair{names[*planned], blas::parse_blas_tuning_cache(read_text(file), test_identity()).at("layer")};
  };
  auto [first, after_first] = process("winograd f2x2");  // disturbed timings, say
  EXPECT_EQ(first, "winograd f2x2");
  EXPECT_EQ(after_first.agreed, 1);
  auto [second, after_second] = process("winograd f4x4");  // measures again: another choice, counted from 1
  EXPECT_EQ(second, "winograd f4x4");
  EXPECT_EQ(after_second.agreed, 1);
  auto [third, after_third] = process("winograd f4x4");  // measures again and agrees
  EXPECT_EQ(third, "winograd f4x4");
  EXPECT_EQ(after_third.agreed, 2);
  auto [fourth, after_fourth] = process("packed_gemm");  // plans from the file: measures nothing
  EXPECT_EQ(fourth, "winograd f4x4");
  EXPECT_EQ(after_fourth.agreed, 2);
}

// A measurement made while another thread shared a core counts for no agreement: the next process times the
// operation again, and only undisturbed measurements raise the count to trust.
TEST(BlasTuningCache, ADisturbedMeasurementIsNotTrustedByLaterProcesses) {
  const TempFolder folder;
  const std::filesystem::path file = folder.path() / "tuning.jsonl";
  const std::string names[] = {"packed_gemm", "winograd f4x4"};
  const auto process = [&](const std::string& measured, bool disturbed) {
    blas::TuningTable table(file, test_identity());
    const bool planned_from_file = table.find("layer", names).has_value();
    if (!planned_from_file) {
      table.record("layer", {measured, 1.0}, disturbed);
      EXPECT_EQ(table.find("layer", names), measured == names[0] ? 0u : 1u);  // used by its own process all the same
      table.save();
    }
    return std::pair{planned_from_file, blas::parse_blas_tuning_cache(read_text(file), test_identity()).at("layer")};
  };
  EXPECT_EQ(process("packed_gemm", true).second.agreed, 0);
  EXPECT_EQ(process("packed_gemm", true).second.agreed, 0);  // again disturbed: still nothing to trust
  EXPECT_EQ(process("winograd f4x4", false).second.agreed, 1);
  const blas::TunedEntry confirmed = process("winograd f4x4", true).second;
  EXPECT_EQ(confirmed.agreed, 1);    // a disturbed confirmation adds nothing to the agreement ...
  EXPECT_EQ(confirmed.measured, 2);  // ... only to the processes in a row
  const auto [from_file, entry] = process("winograd f4x4", false);
  EXPECT_FALSE(from_file);
  EXPECT_EQ(entry.agreed, 2);
  EXPECT_EQ(entry.measured, 3);
  EXPECT_TRUE(process("packed_gemm", true).first);  // trusted now: planned without timing
}

// Where the cores are never quiet (CI's test processes two to two cores, a busy server), kMeasuredToTrust processes
// in a row that measured the same choice, disturbed as they were, are trusted: otherwise every process timed every
// layer again. Another choice in between starts the count again.
TEST(BlasTuningCache, DisturbedProcessesInARowThatAgreeAreTrustedInTheEnd) {
  const TempFolder folder;
  const std::filesystem::path file = folder.path() / "tuning.jsonl";
  const std::string names[] = {"packed_gemm", "winograd f4x4"};
  const auto disturbed_process = [&](const std::string& measured) {
    blas::TuningTable table(file, test_identity());
    const bool planned_from_file = table.find("layer", names).has_value();
    if (!planned_from_file) {
      table.record("layer", {measured, 1.0}, true);
      table.save();
    }
    return std::pair{planned_from_file, blas::parse_blas_tuning_cache(read_text(file), test_identity()).at("layer")};
  };
  EXPECT_EQ(disturbed_process("packed_gemm").second.measured, 1);
  EXPECT_EQ(disturbed_process("packed_gemm").second.measured, 2);
  EXPECT_EQ(disturbed_process("winograd f4x4").second.measured, 1);  // another choice: counted from 1
  for (int measured = 2; measured <= blas::kMeasuredToTrust; ++measured) {
    const auto [from_file, entry] = disturbed_process("winograd f4x4");
    EXPECT_FALSE(from_file);
    EXPECT_EQ(entry.agreed, 0);
    EXPECT_EQ(entry.measured, measured);
  }
  EXPECT_TRUE(disturbed_process("packed_gemm").first);  // trusted now: planned without timing
}

// A core is disturbed when its FMA rate falls below kUndisturbedShare of the best the table has seen, in its file
// or in this process; the best is saved with the choices, and rates that are not a CPU's are ignored.
TEST(BlasTuningCache, TheBestCoreRateSeenIsKeptAndJudgesLaterMeasurements) {
  const TempFolder folder;
  const std::filesystem::path file = folder.path() / "tuning.jsonl";
  write_text(file, blas::format_blas_tuning_cache({{"layer", {"packed_gemm", 1.0, 1}}}, test_identity(), 200.0));
  EXPECT_DOUBLE_EQ(blas::parse_blas_tuning_core_gflops(read_text(file), test_identity()), 200.0);
  EXPECT_EQ(blas::parse_blas_tuning_core_gflops(read_text(file), blas::CpuTuningIdentity{}), 0.0);
  blas::TuningTable table(file, test_identity());
  const std::string names[] = {"packed_gemm"};
  EXPECT_FALSE(table.find("layer", names));  // reads the file; one process's choice is not trusted
  EXPECT_TRUE(table.undisturbed(0.0));       // no probe on this CPU: nothing to judge by
  EXPECT_TRUE(table.undisturbed(180.0));
  EXPECT_FALSE(table.undisturbed(160.0));
  EXPECT_TRUE(table.undisturbed(240.0));   // a new best ...
  EXPECT_FALSE(table.undisturbed(180.0));  // ... that later rates are judged by
  table.save();
  const std::string text = read_text(file);
  EXPECT_DOUBLE_EQ(blas::parse_blas_tuning_core_gflops(text, test_identity()), 240.0);
  EXPECT_EQ(blas::parse_blas_tuning_cache(text, test_identity()).size(), 1u);
  const std::string header = text.substr(0, text.find('\n') + 1);
  for (const char* rate : {R"({"core_fma_gflops":-5})", R"({"core_fma_gflops":"fast"})", R"({"core_fma_gflops":1e9})"})
    EXPECT_EQ(blas::parse_blas_tuning_core_gflops(header + rate + "\n", test_identity()), 0.0) << rate;
}

TEST(BlasTuningCache, SavesMergedWithWhatAnotherProcessWrote) {
  const TempFolder folder;
  const std::filesystem::path file = folder.path() / "new folder" / "tuning.jsonl";  // the folder is made
  blas::TuningTable first(file, test_identity()), second(file, test_identity());
  first.record("a", {"packed_gemm", 1.0});
  second.record("b", {"winograd f2x2", 2.0});
  first.save();
  second.save();  // keeps what the first wrote
  const std::map<std::string, blas::TunedEntry> both = blas::parse_blas_tuning_cache(read_text(file), test_identity());
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both.at("a").choice, "packed_gemm");
  EXPECT_EQ(both.at("b").choice, "winograd f2x2");
  // A file of another identity is replaced, not merged.
  blas::CpuTuningIdentity other = test_identity();
  other.library = "rebuilt";
  blas::TuningTable rebuilt(file, other);
  rebuilt.record("c", {"packed_gemm", 3.0});
  rebuilt.save();
  EXPECT_EQ(blas::parse_blas_tuning_cache(read_text(file), other).size(), 1u);
}

TEST(BlasTuningCache, AnUnwritableFolderKeepsTheChoicesInMemoryAndSaysSoOnce) {
  const TempFolder folder;
  write_text(folder.path() / "a file", "x");  // where the cache's folder would be: nothing can be made there
  blas::TuningTable table(folder.path() / "a file" / "tuning.jsonl", test_identity());
  ::testing::internal::CaptureStderr();
  table.record("a", {"packed_gemm", 1.0});
  table.save();
  table.record("b", {"packed_gemm", 1.0});
  table.save();
  const std::string note = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(note, "the blas tuning cache was not saved")) << note;
  EXPECT_EQ(note.find("not saved"), note.rfind("not saved")) << note;  // once
  const std::string names[] = {"packed_gemm"};
  EXPECT_EQ(table.find("b", names), 0u);
}

TEST(BlasTuningCache, ABackendSavesItsChoicesAndALaterOneUsesThem) {
  const TempFolder folder;
  const std::filesystem::path file = folder.path() / "blas.jsonl";
  const Conv2dOptions layer{.in_channels = 24, .out_channels = 24, .kernel = 3, .padding = 1};
  const Shape input{1, 24, 25, 19};  // a shape no other test uses
  const auto backend_of = [](const std::filesystem::path& cache) {
    return std::make_unique<BlasBackend>(BlasOptions{.threads = 1, .tuning_cache = cache.string()});
  };
  Sequential first;
  first.add(Conv2d(layer));
  EXPECT_TRUE(contains(profiled_algorithms(first, backend_of(file), input).at(0), "[measured of 3]"));
  // Saved at the end of the forward, under this process's identity.
  std::map<std::string, blas::TunedEntry> saved =
      blas::parse_blas_tuning_cache(read_text(file), blas::this_process_tuning_identity());
  const std::string key = blas::tuning_key(dynamic_cast<const Conv2d&>(first.layer(0)).desc(), input, 1);
  ASSERT_EQ(saved.count(key), 1u) << read_text(file);
  // A later process reads it (here: a backend of another file, since a process keeps one table per file, holding
  // the packed GEMM as the choice, which the static table would not pick) and plans the layer without timing it.
  EXPECT_LE(saved[key].agreed, 1);  // 0 where another test's threads shared a core while it was timed
  saved[key] = {"packed_gemm", 9.0, blas::kAgreedToTrust};
  const std::filesystem::path later_file = folder.path() / "later.jsonl";
  write_text(later_file, blas::format_blas_tuning_cache(saved, blas::this_process_tuning_identity()));
  Sequential later;
  later.add(Conv2d(layer));
  const std::string algorithm = profiled_algorithms(later, backend_of(later_file), input).at(0);
  EXPECT_TRUE(contains(algorithm, "[measured before]")) << algorithm;
  EXPECT_TRUE(contains(algorithm, "packed sgemm")) << algorithm;
}

TEST(BlasTuningCache, TheDefaultFileIsPerCpuModelUnderXdgCacheHome) {
  const TempFolder folder;
  const char* saved = std::getenv("XDG_CACHE_HOME");
  const std::string saved_value = saved ? saved : "";
  ::setenv("XDG_CACHE_HOME", folder.path().c_str(), 1);
  const std::filesystem::path file = blas::default_blas_tuning_cache_file();
  saved ? ::setenv("XDG_CACHE_HOME", saved_value.c_str(), 1) : ::unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(file.parent_path(), folder.path() / "corgy");
  EXPECT_TRUE(file.filename().string().starts_with("blas-tuning-")) << file;
  EXPECT_EQ(blas::this_process_tuning_identity().cpu, cpu_model_name());
}

}  // namespace
}  // namespace corgy::testing
