// The Vulkan backend's convolution paths against the naive backend (on lavapipe in CI, validation on): im2col +
// GEMM (the reference), the implicit GEMM with every tile shape of its table and a forced split of K, the direct
// kernel, Winograd's F(2x2, 3x3), a max pool fused into the convolution's output, fp16 precision, and the per-dispatch
// profile. The cooperative-matrix kernel needs a device with VK_NV_cooperative_matrix; where there is one, the same
// cases run on it.
#include <fmt/format.h>

#include <algorithm>

#include "corgy/backends/vulkan/conv_plan.h"
#include "corgy/backends/vulkan/direct_conv.h"
#include "corgy/backends/vulkan/dispatch_math.h"
#include "corgy/backends/vulkan/winograd_conv.h"
#include "test_util.h"
#include "vulkan_test_options.h"

namespace corgy::testing {
namespace {

struct ConvCase {
  Shape input;
  Conv2dDesc desc;
};

std::string describe(const ConvCase& c) {
  return fmt::format("{} k{} s{} p{} d{} g{} -> {}", c.input.str(), c.desc.kernel, c.desc.stride, c.desc.padding,
                     c.desc.dilation, c.desc.groups, c.desc.out_channels);
}

// Ragged sizes, K not a multiple of 4, strides, dilation, groups, 1x1, several images (columns span images).
std::vector<ConvCase> conv_cases() {
  const Activation leaky = Activation::leaky_relu(0.1f);
  return {
      {{1, 3, 13, 13}, {.in_channels = 3, .out_channels = 16, .kernel = 3, .padding = 1, .activation = leaky}},
      {{3, 5, 17, 11}, {.in_channels = 5, .out_channels = 7, .kernel = 3, .padding = 1, .activation = leaky}},
      {{2, 8, 9, 9}, {.in_channels = 8, .out_channels = 36, .kernel = 1}},
      {{2, 3, 11, 13}, {.in_channels = 3, .out_channels = 5, .kernel = 3, .stride = 2}},
      {{1, 4, 15, 15}, {.in_channels = 4, .out_channels = 4, .kernel = 3, .padding = 2, .dilation = 2}},
      {{3, 2, 12, 9}, {.in_channels = 2, .out_channels = 3, .kernel = 5, .stride = 2, .padding = 1, .dilation = 2}},
      {{1, 8, 10, 10}, {.in_channels = 8, .out_channels = 12, .kernel = 3, .padding = 1, .groups = 2}},
      {{2, 64, 7, 7}, {.in_channels = 64, .out_channels = 40, .kernel = 3, .padding = 1, .activation = leaky}},
      // For the direct kernel: more output channels than one thread holds (blocks along z), and dilation.
      {{2, 3, 9, 10}, {.in_channels = 3, .out_channels = 40, .kernel = 3, .padding = 1, .activation = leaky}},
      {{1, 2, 11, 11}, {.in_channels = 2, .out_channels = 6, .kernel = 3, .stride = 2, .padding = 2, .dilation = 2}},
      {{2, 16, 9, 7}, {.in_channels = 16, .out_channels = 20, .kernel = 3, .padding = 1, .activation = leaky}},
      // ... several workgroups along both axes with ragged edges; input channels staged in several chunks (12
      // channels of 3x3 stride 2: 5 a chunk); a 5x5 kernel.
      {{1, 3, 37, 70}, {.in_channels = 3, .out_channels = 8, .kernel = 3, .padding = 1, .activation = leaky}},
      {{2, 12, 41, 67}, {.in_channels = 12, .out_channels = 5, .kernel = 3, .stride = 2, .padding = 1}},
      {{1, 5, 19, 35}, {.in_channels = 5, .out_channels = 6, .kernel = 5, .padding = 2}},
      // ... and many taps for few output channels (K = 2592: the style network's last layer, 32 -> 3 at 9x9, its
      // weights staged a chunk of input channels at a time).
      {{2, 32, 21, 37}, {.in_channels = 32, .out_channels = 3, .kernel = 9, .padding = 4}},
      // For Winograd: no padding (even output), and padding 2 (odd output, tiles past the input on every side).
      {{2, 6, 8, 10}, {.in_channels = 6, .out_channels = 9, .kernel = 3}},
      {{1, 5, 7, 6},
       {.in_channels = 5, .out_channels = 4, .kernel = 3, .padding = 2, .activation = Activation::relu()}},
  };
}

Variable conv_naive(const Conv2dDesc& d, const Variable& input, const Variable& weights, const Variable& bias) {
  const Shape& in = input.shape();
  Variable output({in.n, d.out_channels, d.output_size(in.h), d.output_size(in.w)});
  NaiveBackend().conv2d(d, input, weights, &bias, output);
  return output;
}

struct Operands {
  Variable input, weights, bias;
};

Operands random_operands(const ConvCase& c, std::mt19937& rng) {
  const Conv2dDesc& d = c.desc;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d.in_channels / d.groups * d.kernel * d.kernel));
  return {random_variable(c.input, rng),
          random_variable({d.out_channels, d.in_channels / d.groups, d.kernel, d.kernel}, rng, scale),
          random_variable(Shape::vector(d.out_channels), rng)};
}

// The kernel of each dispatch of the last profiled forward, in order.
std::vector<std::string> dispatched_kernels(const VulkanBackend& vulkan) {
  std::vector<std::string> kernels;
  for (const VulkanDispatchProfile& d : vulkan.dispatch_profile()) kernels.push_back(d.kernel);
  return kernels;
}

Variable conv_vulkan(VulkanBackend& vulkan, const Conv2dDesc& d, const Operands& o) {
  const Shape& in = o.input.shape();
  Variable output({in.n, d.out_channels, d.output_size(in.h), d.output_size(in.w)});
  vulkan.upload_constant(o.weights);
  vulkan.upload_constant(o.bias);
  vulkan.conv2d(d, o.input, o.weights, &o.bias, output);
  return output;
}

TEST(VulkanConvolution, EveryAlgorithmTileShapeAndSplitMatchesNaive) {
  // Every case with the reference path, the automatic plan, the implicit GEMM with and without a forced split, and
  // the direct kernel where it fits; every tile shape of the table with two cases (one ragged and small, one with
  // K a multiple of 4 and several tiles).
  const std::vector<VulkanConvolutionOptions> per_case = {
      {.algorithm = VulkanConvAlgorithm::im2col_gemm},
      {},
      {.algorithm = VulkanConvAlgorithm::implicit_gemm},
      {.algorithm = VulkanConvAlgorithm::implicit_gemm, .tiles = {32, 32, 16, 4, 4}, .split_k = 3},
  };
  std::vector<VulkanConvolutionOptions> per_tile;
  for (const vulkan::RatedConvTiles& rated : vulkan::implicit_gemm_tile_choices()) {
    per_tile.push_back({.algorithm = VulkanConvAlgorithm::implicit_gemm, .tiles = rated.tiles, .split_k = 1});
  }
  // Under the sanitizers (whose run checks the host code, the same for every tile shape; the Release run checks the
  // shaders' results) every fourth case besides case 1, which runs the tile shapes: a backend per plan was a minute
  // of CI.
  const bool sampled = CORGY_TESTS_SANITIZED;
  std::mt19937 rng(21);
  const std::vector<ConvCase> cases = conv_cases();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const ConvCase& c = cases[i];
    const Operands o = random_operands(c, rng);
    if (sampled && i != 1 && i % 4 != 3) continue;
    const Variable expected = conv_naive(c.desc, o.input, o.weights, o.bias);
    std::vector<VulkanConvolutionOptions> plans = per_case;
    if (i == 1 || (i == 7 && !sampled)) plans.insert(plans.end(), per_tile.begin(), per_tile.end());
    if (vulkan::direct_conv_fits(c.desc)) plans.push_back({.algorithm = VulkanConvAlgorithm::direct});
    if (vulkan::winograd_fits(c.desc)) {
      plans.push_back({.algorithm = VulkanConvAlgorithm::winograd});
      // Its 16 GEMMs with the smallest tiles: several tiles along every axis.
      VulkanOptions small_tiles = sweep_vulkan_options();
      small_tiles.convolution.algorithm = VulkanConvAlgorithm::winograd;
      small_tiles.gemm_tiles = {32, 32, 16, 4, 4};
      VulkanBackend vulkan(small_tiles);
      EXPECT_TRUE(outputs_match(conv_vulkan(vulkan, c.desc, o), expected)) << describe(c) << ", winograd 32x32";
    }
    for (const VulkanConvolutionOptions& plan : plans) {
      VulkanOptions options = sweep_vulkan_options();
      options.convolution = plan;
      VulkanBackend vulkan(options);
      EXPECT_TRUE(outputs_match(conv_vulkan(vulkan, c.desc, o), expected))
          << describe(c) << ", algorithm " << static_cast<int>(plan.algorithm) << ", tiles " << plan.tiles.tile_m << "x"
          << plan.tiles.tile_n << "x" << plan.tiles.tile_k << ", split " << plan.split_k;
    }
  }
}

TEST(VulkanConvolution, TensorCoreKernelsMatchNaiveInFp16) {
  // Both cooperative-matrix kernels, forced, on every case they fit, with and without a fused 2x2 max pool (padded
  // on odd sizes), and the automatic plan; fp16 operands against the fp32 naive result. Devices without
  // VK_NV_cooperative_matrix (lavapipe) skip this.
  VulkanOptions options = sweep_vulkan_options();
  options.precision = Precision::fp16;
  if (!VulkanBackend(options).cooperative_matrix()) GTEST_SKIP() << "the device has no cooperative matrices";
  std::mt19937 rng(27);
  NaiveBackend naive;
  const Pool2dDesc pool{.pad_bottom = 1, .pad_right = 1};
  std::vector<ConvCase> cases = conv_cases();
  // Beyond one workgroup's 8 x 32 pixels on both axes, two chunks of input channels, more than 64 output channels.
  cases.push_back({{2, 20, 19, 70}, {.in_channels = 20, .out_channels = 72, .kernel = 3, .padding = 1}});
  // Output planes of whole 16-byte units (64 and 320 pixels): the epilogue stores 8 columns per lane.
  cases.push_back({{2, 16, 8, 8}, {.in_channels = 16, .out_channels = 24, .kernel = 1}});
  cases.push_back(
      {{3, 20, 16, 20},
       {.in_channels = 20, .out_channels = 40, .kernel = 3, .padding = 1, .activation = Activation::relu()}});
  // More than four chunks of input channels (the patch kernel's limit until it took any number), the last one ragged.
  cases.push_back({{2, 88, 12, 18}, {.in_channels = 88, .out_channels = 24, .kernel = 3, .padding = 1}});
  for (const ConvCase& c : cases) {
    const Operands o = random_operands(c, rng);
    const Variable expected = conv_naive(c.desc, o.input, o.weights, o.bias);
    const Shape& conv_shape = expected.shape();
    Variable expected_pooled({conv_shape.n, conv_shape.c, pool.output_h(conv_shape.h), pool.output_w(conv_shape.w)});
    naive.pool2d(pool, expected, expected_pooled);
    for (const VulkanConvAlgorithm algorithm : {VulkanConvAlgorithm::automatic, VulkanConvAlgorithm::cooperative_matrix,
                                                VulkanConvAlgorithm::patch_cooperative_matrix}) {
      options.convolution = {.algorithm = algorithm};
      VulkanBackend vulkan(options);
      // The patch kernel refuses several groups and patches too large for shared memory (strides of 2 and the 9x9
      // window here: 48 KiB on the GPUs this runs on).
      if (algorithm == VulkanConvAlgorithm::patch_cooperative_matrix &&
          (c.desc.groups > 1 || c.desc.stride > 1 || c.desc.kernel > 5)) {
        try {
          conv_vulkan(vulkan, c.desc, o);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("patch cooperative-matrix convolution needs"), std::string::npos);
          continue;
        }
        EXPECT_EQ(c.desc.groups, 1) << describe(c);
      }
      EXPECT_TRUE(outputs_match(conv_vulkan(vulkan, c.desc, o), expected, 2e-2))
          << describe(c) << ", algorithm " << static_cast<int>(algorithm);
      if (c.desc.groups > 1) continue;
      Variable pooled(expected_pooled.shape());
      vulkan.conv2d_maxpool(c.desc, pool, o.input, o.weights, &o.bias, pooled);
      EXPECT_TRUE(outputs_match(pooled, expected_pooled, 2e-2))
          << describe(c) << " + maxpool, algorithm " << static_cast<int>(algorithm);
    }
  }
}

TEST(VulkanConvolution, EveryTensorCoreTileMatchesNaiveInFp16) {
  // Every tile shape of the cooperative-matrix table, forced, on layers larger than its tiles along M, N and K with
  // ragged edges: a gathered 3x3 layer (with a fused pool and with K split in two), a 1x1 layer whose planes are
  // whole 16-byte units (B read as units, the vector epilogue) and a residual add. Devices without
  // VK_NV_cooperative_matrix (lavapipe) skip this; the GPU run (benchmarks/vulkan_conv_device_run.sh) runs it.
  VulkanOptions options = sweep_vulkan_options();
  options.precision = Precision::fp16;
  if (!VulkanBackend(options).cooperative_matrix()) GTEST_SKIP() << "the device has no cooperative matrices";
  const Activation leaky = Activation::leaky_relu(0.1f);
  // 272 output channels: a second, ragged tile along M for tiles of 256 rows; 2 x 13 x 14 = 364 and 2 x 16 x 16 =
  // 512 columns; K = 20 x 9 = 180 and 72 (several K steps, a ragged last one).
  const ConvCase gathered{{2, 20, 13, 14},
                          {.in_channels = 20, .out_channels = 272, .kernel = 3, .padding = 1, .activation = leaky}};
  const ConvCase pointwise{{2, 72, 16, 16}, {.in_channels = 72, .out_channels = 272, .kernel = 1}};
  const Pool2dDesc pool{.pad_bottom = 1, .pad_right = 1};
  std::mt19937 rng(29);
  NaiveBackend naive;
  for (const ConvCase& c : {gathered, pointwise}) {
    const Operands o = random_operands(c, rng);
    const Variable expected = conv_naive(c.desc, o.input, o.weights, o.bias);
    const Shape& conv_shape = expected.shape();
    Variable expected_pooled({conv_shape.n, conv_shape.c, pool.output_h(conv_shape.h), pool.output_w(conv_shape.w)});
    naive.pool2d(pool, expected, expected_pooled);
    const Variable residual = random_variable(conv_shape, rng);
    Variable expected_sum(conv_shape);
    naive.conv2d_add(c.desc, o.input, o.weights, &o.bias, residual, expected_sum);
    for (const vulkan::RatedCoopmatTiles& rated : vulkan::coopmat_tile_choices()) {
      const VulkanCoopmatTiles& t = rated.tiles;
      const std::string tiles = fmt::format("{} tiles {}x{}x{}", describe(c), t.tile_m(), t.tile_n(), t.tile_k);
      for (const std::uint32_t split : {1u, 2u}) {
        options.convolution = {
            .algorithm = VulkanConvAlgorithm::cooperative_matrix, .coopmat_tiles = t, .split_k = split};
        VulkanBackend vulkan(options);
        EXPECT_TRUE(outputs_match(conv_vulkan(vulkan, c.desc, o), expected, 2e-2)) << tiles << ", split " << split;
        if (split > 1) continue;
        Variable pooled(expected_pooled.shape());
        vulkan.conv2d_maxpool(c.desc, pool, o.input, o.weights, &o.bias, pooled);
        EXPECT_TRUE(outputs_match(pooled, expected_pooled, 2e-2)) << tiles << " + maxpool";
        Variable sum(conv_shape);
        vulkan.conv2d_add(c.desc, o.input, o.weights, &o.bias, residual, sum);
        EXPECT_TRUE(outputs_match(sum, expected_sum, 2e-2)) << tiles << " + add";
      }
    }
  }
}

// conv2d_add on `vulkan`, and the dispatches it recorded (profiled).
Variable conv_add_vulkan(VulkanBackend& vulkan, const Conv2dDesc& d, const Operands& o, const Variable& residual,
                         std::vector<std::string>& kernels) {
  Variable output(residual.shape());
  vulkan.upload_constant(o.weights);
  vulkan.upload_constant(o.bias);
  vulkan.set_profiling(true);
  vulkan.conv2d_add(d, o.input, o.weights, &o.bias, residual, output);
  kernels = dispatched_kernels(vulkan);
  return output;
}

TEST(VulkanConvolution, ResidualAddMatchesNaiveOnEveryAlgorithm) {
  // activation(conv + bias + residual): the implicit-GEMM kernels add the residual in their epilogue (the split-K
  // reduction after a split) and Winograd in its output transform, with no add dispatch; the other kernels are
  // followed by add.comp. Every algorithm that
  // fits, every activation of the cases, fp32 and (on devices with cooperative matrices) fp16 against naive.
  const Activation leaky = Activation::leaky_relu(0.1f);
  const std::vector<ConvCase> cases = {
      {{2, 8, 9, 9}, {.in_channels = 8, .out_channels = 36, .kernel = 1, .activation = Activation::relu()}},
      // Planes of whole units of 8 (the cooperative-matrix kernel's vector epilogue), output channels past a tile.
      {{2, 16, 8, 8}, {.in_channels = 16, .out_channels = 36, .kernel = 1, .activation = Activation::relu()}},
      {{3, 5, 17, 11}, {.in_channels = 5, .out_channels = 7, .kernel = 3, .padding = 1, .activation = leaky}},
      {{2, 64, 7, 7}, {.in_channels = 64, .out_channels = 40, .kernel = 3, .padding = 1}},
      {{2, 6, 8, 10}, {.in_channels = 6, .out_channels = 9, .kernel = 3, .activation = Activation::relu()}},
      {{1, 12, 11, 13},
       {.in_channels = 12, .out_channels = 20, .kernel = 1, .stride = 2, .activation = Activation::sigmoid()}},
  };
  std::vector<VulkanConvolutionOptions> plans = {
      {.algorithm = VulkanConvAlgorithm::im2col_gemm},
      {},
      {.algorithm = VulkanConvAlgorithm::implicit_gemm},
      {.algorithm = VulkanConvAlgorithm::implicit_gemm, .tiles = {32, 32, 16, 4, 4}, .split_k = 3},
      {.algorithm = VulkanConvAlgorithm::direct},
      {.algorithm = VulkanConvAlgorithm::winograd},
  };
  VulkanOptions fp16_options = sweep_vulkan_options();
  fp16_options.precision = Precision::fp16;
  const bool tensor_cores = VulkanBackend(fp16_options).cooperative_matrix();
  std::mt19937 rng(31);
  NaiveBackend naive;
  for (const ConvCase& c : cases) {
    const Operands o = random_operands(c, rng);
    const Shape& in = c.input;
    const Variable residual =
        random_variable({in.n, c.desc.out_channels, c.desc.output_size(in.h), c.desc.output_size(in.w)}, rng);
    Variable expected(residual.shape());
    naive.conv2d_add(c.desc, o.input, o.weights, &o.bias, residual, expected);
    for (const VulkanConvolutionOptions& plan : plans) {
      if (plan.algorithm == VulkanConvAlgorithm::direct && !vulkan::direct_conv_fits(c.desc)) continue;
      if (plan.algorithm == VulkanConvAlgorithm::winograd && !vulkan::winograd_fits(c.desc)) continue;
      VulkanOptions options = sweep_vulkan_options();
      options.convolution = plan;
      VulkanBackend vulkan(options);
      std::vector<std::string> kernels;
      const std::string where =
          fmt::format("{}, algorithm {}, split {}", describe(c), static_cast<int>(plan.algorithm), plan.split_k);
      EXPECT_TRUE(outputs_match(conv_add_vulkan(vulkan, c.desc, o, residual, kernels), expected)) << where;
      const bool has_add = std::find(kernels.begin(), kernels.end(), "add") != kernels.end();
      if (plan.algorithm == VulkanConvAlgorithm::implicit_gemm || plan.algorithm == VulkanConvAlgorithm::winograd) {
        EXPECT_FALSE(has_add) << where;
      }
      if (plan.algorithm == VulkanConvAlgorithm::im2col_gemm) {
        EXPECT_TRUE(has_add) << where;
      }
    }
    if (!tensor_cores) continue;
    for (const VulkanConvolutionOptions& plan :
         std::vector<VulkanConvolutionOptions>{{},
                                               {.algorithm = VulkanConvAlgorithm::cooperative_matrix},
                                               {.algorithm = VulkanConvAlgorithm::cooperative_matrix, .split_k = 2},
                                               {.algorithm = VulkanConvAlgorithm::winograd}}) {
      if (plan.algorithm == VulkanConvAlgorithm::winograd && !vulkan::winograd_fits(c.desc)) continue;
      fp16_options.convolution = plan;
      VulkanBackend vulkan(fp16_options);
      std::vector<std::string> kernels;
      const std::string where =
          fmt::format("{}, fp16, algorithm {}, split {}", describe(c), static_cast<int>(plan.algorithm), plan.split_k);
      EXPECT_TRUE(outputs_match(conv_add_vulkan(vulkan, c.desc, o, residual, kernels), expected, 2e-2)) << where;
      if (plan.algorithm != VulkanConvAlgorithm::automatic) {
        EXPECT_EQ(std::find(kernels.begin(), kernels.end(), "add_fp16"), kernels.end()) << where;
        EXPECT_EQ(std::find(kernels.begin(), kernels.end(), "add"), kernels.end()) << where;
      }
      if (plan.algorithm == VulkanConvAlgorithm::cooperative_matrix) {
        EXPECT_EQ(kernels.front(), "conv2d_coopmat_fp16") << where;
      }
    }
  }
}

TEST(VulkanConvolution, SplitKIsChosenForSkinnyProblems) {
  // Tiny YOLO's 13x13x1024 -> 1024 layer at batch 1: too few tiles for a large GPU without a split of K.
  VkPhysicalDeviceLimits limits{};
  limits.maxComputeSharedMemorySize = 48 * 1024;
  limits.maxComputeWorkGroupInvocations = 1024;
  const vulkan::ConvPlan skinny = vulkan::plan_convolution({1024, 169, 9216, 1}, {}, {&limits, false});
  EXPECT_GT(skinny.splits, 1u) << skinny.describe();
  EXPECT_EQ(skinny.k_per_split % skinny.tile_k(), 0u);
  EXPECT_GE(skinny.k_per_split * skinny.splits, 9216u);
  // The same layer at batch 64 has work enough: no split.
  EXPECT_EQ(vulkan::plan_convolution({1024, 169 * 64, 9216, 1}, {}, {&limits, false}).splits, 1u);
  // most_splits caps the choice.
  const VulkanConvolutionOptions capped{.most_splits = 2};
  EXPECT_LE(vulkan::plan_convolution({1024, 169, 9216, 1}, capped, {&limits, false}).splits, 2u);
}

TEST(VulkanConvolution, DispatchesBeyondTheDeviceGridAreRefusedWithTheShapes) {
  VkPhysicalDeviceLimits limits{};
  limits.maxComputeWorkGroupCount[0] = limits.maxComputeWorkGroupCount[1] = limits.maxComputeWorkGroupCount[2] = 65535;
  EXPECT_NO_THROW(vulkan::check_dispatch_fits(limits, "direct convolution", "(64, 3, 416, 416)", "(64, 16, 208, 208)",
                                              64ull * 16 * 416 * 416, 13, 26, 64));
  try {
    vulkan::check_dispatch_fits(limits, "direct convolution", "(70000, 3, 8, 8)", "(70000, 16, 4, 4)",
                                70000ull * 16 * 8 * 8, 1, 1, 70000);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("direct convolution of input (70000, 3, 8, 8) into output (70000, 16, 4, 4) is too large"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("1x1x70000 workgroups"), std::string::npos) << text;
  }
  // 2^32 elements cannot be indexed with 32 bits, whatever the grid.
  EXPECT_THROW(vulkan::check_dispatch_fits(limits, "x", "a", "b", 1ull << 32, 1, 1, 1), Error);
}

// Pools after a convolution: fused into its output (2x2 stride 2, with and without padding on odd sizes), or not
// fusable (stride 1, 3x3) and run as a second dispatch.
TEST(VulkanConvolution, ConvolutionWithMaxPoolMatchesNaive) {
  struct PoolCase {
    Shape input;
    Pool2dDesc pool;
  };
  const std::vector<PoolCase> cases = {
      {{2, 3, 12, 12}, {}},
      {{1, 4, 13, 11}, {.pad_bottom = 1, .pad_right = 1}},  // darknet 2/2 and TF 'same' on odd sizes
      // 3 input channels: the direct kernel (K = 27), with padded windows on either side.
      {{1, 3, 13, 11}, {.pad_bottom = 1, .pad_right = 1}},
      {{2, 3, 11, 9}, {.pad_top = 1, .pad_left = 1}},
      {{3, 5, 9, 9}, {}},  // the last row and column fall out of every window
      {{1, 6, 13, 13}, {.stride_h = 1, .stride_w = 1, .pad_bottom = 1, .pad_right = 1}},  // darknet 2/1
      {{2, 3, 10, 10}, {.kernel_h = 3, .kernel_w = 3, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1}},
  };
  std::mt19937 rng(22);
  NaiveBackend naive;
  for (const PoolCase& pc : cases) {
    const ConvCase c{pc.input,
                     {.in_channels = pc.input.c,
                      .out_channels = 20,
                      .kernel = 3,
                      .padding = 1,
                      .activation = Activation::leaky_relu(0.1f)}};
    const Operands o = random_operands(c, rng);
    const Variable conv = conv_naive(c.desc, o.input, o.weights, o.bias);
    Variable expected(
        {conv.shape().n, conv.shape().c, pc.pool.output_h(conv.shape().h), pc.pool.output_w(conv.shape().w)});
    naive.pool2d(pc.pool, conv, expected);
    std::vector<VulkanConvolutionOptions> plans;
    for (const std::uint32_t split : {1u, 4u}) {
      for (const bool fuse : {true, false}) plans.push_back({.split_k = split, .fuse_pool = fuse});
    }
    // Winograd fuses the pools whose windows are its tiles and runs the others after it.
    for (const bool fuse : {true, false})
      plans.push_back({.algorithm = VulkanConvAlgorithm::winograd, .fuse_pool = fuse});
    for (const VulkanConvolutionOptions& plan : plans) {
      VulkanOptions options = sweep_vulkan_options();
      options.convolution = plan;
      VulkanBackend vulkan(options);
      vulkan.upload_constant(o.weights);
      vulkan.upload_constant(o.bias);
      Variable actual(expected.shape());
      vulkan.conv2d_maxpool(c.desc, pc.pool, o.input, o.weights, &o.bias, actual);
      EXPECT_TRUE(outputs_match(actual, expected))
          << describe(c) << " pool " << pc.pool.kernel_h << "/" << pc.pool.stride_h << " split " << plan.split_k
          << " fuse " << plan.fuse_pool << " algorithm " << static_cast<int>(plan.algorithm);
    }
  }
}

TEST(VulkanConvolution, Fp16PrecisionKeepsIntermediatesInHalfAndStaysClose) {
  // A chain whose intermediates are device-only: in fp16 they are stored as halves; the output stays fp32.
  std::mt19937 rng(23);
  Sequential model;
  const Activation leaky = Activation::leaky_relu(0.1f);
  model.add(Conv2d({.in_channels = 3, .out_channels = 16, .kernel = 3, .padding = 1, .activation = leaky}));
  model.add(MaxPool2d({.kernel = 2}));
  model.add(Conv2d({.in_channels = 16, .out_channels = 32, .kernel = 3, .padding = 1, .activation = leaky}));
  model.add(MaxPool2d::darknet(2, 1));
  model.add(BatchNorm(32));  // channel_affine reads and writes fp16
  model.add(PReLU(32));      // prelu reads fp32 only: its input is converted
  model.add(Conv2d({.in_channels = 32, .out_channels = 8, .kernel = 1}));
  randomize_parameters(model, rng);
  const Variable input = random_variable({2, 3, 20, 20}, rng);
  model.set_backend("naive");
  const Variable expected = model.forward(input).clone();

  VulkanOptions options = sweep_vulkan_options();
  options.precision = Precision::fp16;
  options.convolution.split_k = 1;
  auto owned = std::make_unique<VulkanBackend>(options);
  VulkanBackend& vulkan = *owned;
  model.set_backend(std::move(owned));
  EXPECT_TRUE(outputs_match(model.forward(input), expected, 2e-2));
  if (vulkan.precision() != Precision::fp16) GTEST_SKIP() << "the device has no 16-bit storage: fp32 ran";
  vulkan.set_profiling(true);
  model.forward(input);
  const std::vector<std::string> kernels = dispatched_kernels(vulkan);
  const bool coopmat = vulkan.cooperative_matrix();
  // 16 input channels on tensor cores: the patch kernel.
  const std::string conv_kernel = coopmat ? "conv2d_patch_coopmat_fp16" : "conv2d_implicit_gemm_fp16";
  // Sequential fuses each convolution with its pool: the 2x2/2 pool into the first convolution's output (fp32
  // input, fp16 output; the direct kernel, K = 27), the darknet 2/1 pool as a second dispatch; the batch
  // norm in fp16; a conversion for the PReLU, which reads fp32 only; the last convolution (1x1, K = 32: direct too)
  // reads and writes fp32.
  const std::vector<std::string> wanted = {"conv2d_direct_fp16",  conv_kernel, "pool2d_fp16",  "channel_affine_fp16",
                                           "tensor_convert_fp16", "prelu",     "conv2d_direct"};
  EXPECT_EQ(kernels, wanted);
}

TEST(VulkanConvolution, FirstLayersOfFewTapsRunTheDirectKernel) {
  // An RGB network's first layer (K = 27) with its pool, in fp32 and fp16; the next (K = 144) is a GEMM unless
  // forced.
  std::mt19937 rng(24);
  Sequential model;
  const Activation leaky = Activation::leaky_relu(0.1f);
  model.add(Conv2d({.in_channels = 3, .out_channels = 16, .kernel = 3, .padding = 1, .activation = leaky}));
  model.add(MaxPool2d({.kernel = 2}));
  model.add(Conv2d({.in_channels = 16, .out_channels = 8, .kernel = 3, .padding = 1}));
  model.add(Conv2d({.in_channels = 8, .out_channels = 20, .kernel = 5, .padding = 2}));  // K = 200, 20 channels
  randomize_parameters(model, rng);
  const Variable input = random_variable({2, 3, 18, 14}, rng);
  model.set_backend("naive");
  const Variable expected = model.forward(input).clone();
  for (const Precision precision : {Precision::fp32, Precision::fp16}) {
    VulkanOptions options = sweep_vulkan_options();
    options.precision = precision;
    // The static table's rule: on a GPU the tuner may find another plan faster at this size.
    options.convolution.tuning = VulkanTuning::off;
    auto owned = std::make_unique<VulkanBackend>(options);
    VulkanBackend& vulkan = *owned;
    model.set_backend(std::move(owned));
    EXPECT_TRUE(outputs_match(model.forward(input), expected, precision == Precision::fp16 ? 2e-2 : 1e-4));
    vulkan.set_profiling(true);
    model.forward(input);
    ASSERT_FALSE(vulkan.dispatch_profile().empty());
    const VulkanDispatchProfile& first = vulkan.dispatch_profile().front();
    EXPECT_EQ(first.kernel, vulkan.precision() == Precision::fp16 ? "conv2d_direct_fp16" : "conv2d_direct");
    EXPECT_EQ(first.detail, "16 channels/thread +maxpool");
  }
  // Forced where it does not fit: a clear error.
  VulkanOptions options = sweep_vulkan_options();
  options.convolution.algorithm = VulkanConvAlgorithm::direct;
  model.set_backend(std::make_unique<VulkanBackend>(options));
  try {
    model.forward(input);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("direct convolution needs one group, at most 160 taps per output (in "
                                         "channels x kernel x kernel) or at most 16 output channels"),
              std::string::npos)
        << e.what();
  }
}

TEST(VulkanConvolution, WideLayersWithManyTilesRunWinograd) {
  // 64 -> 64 channels over 2 x 32 x 32 tiles of 2x2: Winograd in fp32 (three dispatches, pool fused), not in fp16;
  // the same layer on one small image is an implicit GEMM. In fp16, 256 input channels on tensor cores are Winograd.
  std::mt19937 rng(25);
  const ConvCase c{{2, 64, 64, 64}, {.in_channels = 64, .out_channels = 64, .kernel = 3, .padding = 1}};
  const Operands o = random_operands(c, rng);
  NaiveBackend naive;
  const Variable conv = conv_naive(c.desc, o.input, o.weights, o.bias);
  Variable expected({2, 64, 32, 32});
  naive.pool2d({}, conv, expected);
  // The static table's rule: on a GPU the tuner may find another plan faster at these sizes.
  const auto kernels_of = [&](Precision precision, const Variable& input, Variable& output) {
    VulkanOptions options = sweep_vulkan_options();
    options.precision = precision;
    options.convolution.tuning = VulkanTuning::off;
    VulkanBackend vulkan(options);
    vulkan.upload_constant(o.weights);
    vulkan.upload_constant(o.bias);
    vulkan.set_profiling(true);
    vulkan.conv2d_maxpool(c.desc, {}, input, o.weights, &o.bias, output);
    return dispatched_kernels(vulkan);
  };
  Variable actual(expected.shape());
  EXPECT_EQ(kernels_of(Precision::fp32, o.input, actual),
            (std::vector<std::string>{"winograd_input_transform", "gemm_tiled", "winograd_output_transform"}));
  EXPECT_TRUE(outputs_match(actual, expected));
  const std::vector<std::string> half = kernels_of(Precision::fp16, o.input, actual);
  ASSERT_FALSE(half.empty());
  EXPECT_EQ(half.front().find("winograd"), std::string::npos) << half.front();
  EXPECT_TRUE(outputs_match(actual, expected, 2e-2));
  {
    VulkanOptions options = sweep_vulkan_options();
    options.precision = Precision::fp16;
    options.convolution.tuning = VulkanTuning::off;
    VulkanBackend vulkan(options);
    const Conv2dDesc wide{.in_channels = 256, .out_channels = 64, .kernel = 3, .padding = 1};
    const Variable wide_weights = random_variable({64, 256, 3, 3}, rng, 0.02f);
    const Variable wide_input = random_variable({1, 256, 16, 16}, rng);
    Variable wide_output({1, 64, 16, 16});
    vulkan.upload_constant(wide_weights);
    vulkan.set_profiling(true);
    vulkan.conv2d(wide, wide_input, wide_weights, nullptr, wide_output);
    ASSERT_FALSE(vulkan.dispatch_profile().empty());
    EXPECT_EQ(vulkan.dispatch_profile().front().kernel,
              vulkan.cooperative_matrix() ? "winograd_input_transform_fp16" : "conv2d_implicit_gemm");
  }
  const Variable small = random_variable({1, 64, 8, 8}, rng);
  Variable small_output({1, 64, 4, 4});
  const std::vector<std::string> few_tiles = kernels_of(Precision::fp32, small, small_output);
  ASSERT_FALSE(few_tiles.empty());
  EXPECT_EQ(few_tiles.front(), "conv2d_implicit_gemm");  // (with a split of K and its reduction, on a large GPU)
  // Forced where it does not fit: a clear error.
  VulkanOptions options = sweep_vulkan_options();
  options.convolution.algorithm = VulkanConvAlgorithm::winograd;
  VulkanBackend vulkan(options);
  const Conv2dDesc strided{.in_channels = 64, .out_channels = 8, .kernel = 3, .stride = 2};
  Variable strided_output({2, 8, 31, 31});
  vulkan.upload_constant(o.weights);
  const std::string error = error_of([&] { vulkan.conv2d(strided, o.input, o.weights, nullptr, strided_output); });
  EXPECT_TRUE(contains(error, "Winograd convolutions need a 3x3 kernel at stride 1")) << error;
}

TEST(VulkanConvolution, WinogradInFp16KeepsIntermediatesInHalfAndStaysClose) {
  // Forced Winograd with fp16 precision: the transformed input in fp16, the 16 GEMMs on tensor cores where the
  // device has them (conv2d_implicit_gemm_fp16 elsewhere), fp32 products, an fp16 intermediate between the layers.
  std::mt19937 rng(26);
  Sequential model;
  const Activation leaky = Activation::leaky_relu(0.1f);
  model.add(Conv2d({.in_channels = 8, .out_channels = 24, .kernel = 3, .padding = 1, .activation = leaky}));
  model.add(Conv2d({.in_channels = 24, .out_channels = 16, .kernel = 3, .padding = 1, .activation = leaky}));
  model.add(MaxPool2d({.kernel = 2}));
  randomize_parameters(model, rng);
  const Variable input = random_variable({2, 8, 15, 18}, rng);
  model.set_backend("naive");
  const Variable expected = model.forward(input).clone();
  VulkanOptions options = sweep_vulkan_options();
  options.precision = Precision::fp16;
  options.convolution.algorithm = VulkanConvAlgorithm::winograd;
  auto owned = std::make_unique<VulkanBackend>(options);
  VulkanBackend& vulkan = *owned;
  model.set_backend(std::move(owned));
  EXPECT_TRUE(outputs_match(model.forward(input), expected, 2e-2));
  vulkan.set_profiling(true);
  model.forward(input);
  const std::vector<std::string> kernels = dispatched_kernels(vulkan);
  const std::string gemm = vulkan.cooperative_matrix() ? "conv2d_coopmat_fp16" : "conv2d_implicit_gemm_fp16";
  EXPECT_EQ(kernels,
            (std::vector<std::string>{"winograd_input_transform_fp16", gemm, "winograd_output_transform_fp16",
                                      "winograd_input_transform_fp16", gemm, "winograd_output_transform_fp16"}));
}

TEST(VulkanConvolution, BackendNamesSetThePrecision) {
  auto half = make_backend("vulkan+fp16", {.validation = kSweepValidation});
  const auto* vulkan = dynamic_cast<const VulkanBackend*>(half.get());
  ASSERT_NE(vulkan, nullptr);
  EXPECT_EQ(vulkan->precision(), Precision::fp16);  // lavapipe and the GPUs corgy meets have 16-bit storage
  auto by_index = make_backend("vulkan:0+fp32");
  EXPECT_EQ(dynamic_cast<const VulkanBackend&>(*by_index).precision(), Precision::fp32);
  EXPECT_EQ(make_backend("blas+fp16")->name(), "blas");  // the CPU backends compute in fp32
  try {
    make_backend("vulkan:no-such-gpu+fp16");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no device name contains 'no-such-gpu'"), std::string::npos) << e.what();
  }
}

TEST(VulkanConvolution, ProfileListsEveryDispatchWithItsLayerAndTime) {
  std::mt19937 rng(24);
  const ConvCase c{{1, 8, 16, 16}, {.in_channels = 8, .out_channels = 16, .kernel = 3, .padding = 1}};
  const Operands o = random_operands(c, rng);
  VulkanOptions options = sweep_vulkan_options();
  options.convolution.split_k = 2;
  VulkanBackend vulkan(options);
  vulkan.upload_constant(o.weights);
  vulkan.upload_constant(o.bias);
  vulkan.set_profiling(true);
  Variable conv({1, 16, 16, 16});
  Variable pooled({1, 16, 8, 8});
  vulkan.begin_forward();
  vulkan.begin_layer(0);
  vulkan.conv2d(c.desc, o.input, o.weights, &o.bias, conv);
  vulkan.begin_layer(1);
  vulkan.pool2d({}, conv, pooled);
  vulkan.end_forward();
  const std::vector<VulkanDispatchProfile>& profile = vulkan.dispatch_profile();
  ASSERT_EQ(profile.size(), 3u);  // the split GEMM, its reduction, the pool
  EXPECT_EQ(profile[0].kernel, "conv2d_implicit_gemm");
  EXPECT_EQ(profile[0].operation, "conv2d");
  EXPECT_EQ(profile[0].layer, 0);
  EXPECT_NE(profile[0].detail.find("split 2"), std::string::npos) << profile[0].detail;
  EXPECT_DOUBLE_EQ(profile[0].flops, 2.0 * 16 * 256 * 72);
  EXPECT_EQ(profile[1].kernel, "conv2d_split_k_reduce");
  EXPECT_EQ(profile[2].operation, "pool2d");
  EXPECT_EQ(profile[2].layer, 1);
  double sum = 0.0;
  for (const VulkanDispatchProfile& d : profile) {
    EXPECT_GE(d.ms, 0.0);
    sum += d.ms;
  }
  EXPECT_LE(sum, vulkan.stats().last_gpu_ms + 1e-6);
  EXPECT_TRUE(outputs_match(conv, conv_naive(c.desc, o.input, o.weights, o.bias)));
}

}  // namespace
}  // namespace corgy::testing
