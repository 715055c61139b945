// Whole small networks on the Vulkan backend against the naive backend, at batch 1 and 3, each run twice in a
// row (reused intermediates must not change results), with validation on and one submission per forward; in
// fp32 (1e-4 of the output's magnitude) and fp16 precision (2e-2, the bound for fp16 outputs), where
// the intermediates are fp16 and kernels that read fp32 only get them converted.
#include <fmt/format.h>

#include <functional>

#include "test_util.h"
#include "vulkan_test_options.h"

namespace corgy::testing {
namespace {

struct ModelCase {
  std::string name;
  Shape image;  // (1, C, H, W); the batch is set by the test
  std::function<void(Sequential&)> build;
};

void PrintTo(const ModelCase& model_case, std::ostream* os) { *os << model_case.name; }

// LeNet for MNIST, as in the MNIST example.
void build_lenet(Sequential& m) {
  m.add(Conv2d({.in_channels = 1, .out_channels = 8, .kernel = 5, .padding = 2, .activation = Activation::relu()}));
  m.add(MaxPool2d({.kernel = 2}));
  m.add(Conv2d({.in_channels = 8, .out_channels = 16, .kernel = 5, .padding = 2, .activation = Activation::relu()}));
  m.add(MaxPool2d({.kernel = 2}));
  m.add(Flatten());
  m.add(Linear({.in_features = 16 * 7 * 7, .out_features = 32, .activation = Activation::relu()}));
  m.add(Linear({.in_features = 32, .out_features = 10}));
  m.add(Softmax());
}

// Tiny YOLO's pattern in miniature: conv + batch norm + leaky, max pools (one darknet 2/1), a 1x1 head; a
// route (concat) of an upsampled branch with an earlier layer, and a shortcut (add).
void build_tiny_yolo_like(Sequential& m) {
  const Activation leaky = Activation::leaky_relu(0.1f);
  m.add(Conv2d({.in_channels = 3, .out_channels = 8, .kernel = 3, .padding = 1, .bias = false}));
  m.add(BatchNorm(8));
  m.add(LeakyReLU(0.1f));
  m.add(MaxPool2d({.kernel = 2}));
  const int mid = m.add(Conv2d({.in_channels = 8, .out_channels = 16, .kernel = 3, .padding = 1, .activation = leaky}));
  m.add(MaxPool2d({.kernel = 2}));
  m.add(Conv2d({.in_channels = 16, .out_channels = 16, .kernel = 3, .padding = 1, .activation = leaky}));
  const int pooled = m.add(MaxPool2d::darknet(2, 1));
  const int shortcut = m.add(Conv2d({.in_channels = 16, .out_channels = 16, .kernel = 1, .activation = leaky}));
  const int sum = m.add(Add(leaky), {shortcut, pooled});
  const int up = m.add(Upsample(2), {sum});
  const int route = m.add(Concat(), {up, mid});
  m.add(Conv2d({.in_channels = 32, .out_channels = 10, .kernel = 1}), {route});
}

// MobileNet's pattern: depthwise 3x3 + pointwise 1x1 blocks, global average pool, classifier.
void build_mobilenet_like(Sequential& m) {
  const Activation relu = Activation::relu();
  m.add(Conv2d({.in_channels = 3, .out_channels = 8, .kernel = 3, .stride = 2, .padding = 1, .activation = relu}));
  m.add(Conv2d({.in_channels = 8, .out_channels = 8, .kernel = 3, .padding = 1, .groups = 8, .activation = relu}));
  m.add(Conv2d({.in_channels = 8, .out_channels = 16, .kernel = 1, .activation = relu}));
  m.add(Conv2d({.in_channels = 16,
                .out_channels = 16,
                .kernel = 3,
                .stride = 2,
                .padding = 1,
                .groups = 16,
                .activation = relu}));
  m.add(Conv2d({.in_channels = 16, .out_channels = 24, .kernel = 1, .activation = Activation::swish()}));
  m.add(AvgPool2d({.global = true}));
  m.add(Flatten());
  m.add(Linear({.in_features = 24, .out_features = 5}));
  m.add(Softmax());
}

// ConvNeXt's LayerNorm over the last axis and GELU as ONNX exports them, on tensors of rank 4 and 3 (the arithmetic of
// corgy/tensor_math.h: in fp16 each of its kernels runs as its _fp16 variant on half intermediates).
void build_layernorm_gelu_like(Sequential& m) {
  const TensorDims x{1, 8, 6, 10}, row{1, 8, 6, 1}, wide{1, 8, 6, 16};
  const int conv = m.add(Conv2d({.in_channels = 3, .out_channels = 8, .kernel = 3, .padding = 1}));
  const int mean = m.add(ReduceAxis(ReduceOp::mean, x, 3, 3, true));
  const int centred = m.add(BroadcastBinary(BinaryOp::subtract, x, row), {conv, mean});
  m.add(Unary(UnaryOp::square));
  m.add(ReduceAxis(ReduceOp::mean, x, 3, 3, true));
  const std::vector<float> epsilon{1e-5f};
  m.add(BroadcastBinary::with_constant(BinaryOp::add, row, {1}, epsilon, false));
  const int deviation = m.add(Unary(UnaryOp::sqrt));
  m.add(BroadcastBinary(BinaryOp::divide, x, row), {centred, deviation});
  std::vector<float> gamma(10);
  for (std::size_t i = 0; i < gamma.size(); ++i) gamma[i] = 0.5f + 0.1f * static_cast<float>(i);
  m.add(BroadcastBinary::with_constant(BinaryOp::multiply, x, {10}, gamma, false));
  TensorLinear projection(x, {.in_features = 10, .out_features = 16});
  std::vector<float> weights(160);
  for (std::size_t i = 0; i < weights.size(); ++i)
    weights[i] = 0.05f * static_cast<float>(static_cast<int>(i % 13) - 6);
  projection.linear().set_weights(weights);
  const int h = m.add(std::move(projection));
  const std::vector<float> inverse_sqrt2{0.70710678f}, one{1.0f};
  m.add(BroadcastBinary::with_constant(BinaryOp::multiply, wide, {1}, inverse_sqrt2, false));
  m.add(Unary(UnaryOp::erf));
  const int erf_plus_one = m.add(BroadcastBinary::with_constant(BinaryOp::add, wide, {1}, one, false));
  m.add(BroadcastBinary(BinaryOp::multiply, wide, wide), {h, erf_plus_one});
  m.add(SoftmaxAxis(wide, 2));
  m.add(ReduceAxis(ReduceOp::sum, wide, 1, 1, false));
}

// The style network's pattern on planes larger than one workgroup's share (vulkan_instance_norm.cpp: two passes over
// chunks of each plane), so that the fp16 variants read and write half intermediates.
void build_style_like(Sequential& m) {
  m.add(Conv2d({.in_channels = 3, .out_channels = 4, .kernel = 3, .padding = 1}));
  m.add(InstanceNorm(4, 1e-5f, Activation::relu()));
  m.add(Conv2d({.in_channels = 4, .out_channels = 3, .kernel = 3, .padding = 1}));
  m.add(InstanceNorm(3));
}

std::vector<ModelCase> all_models() {
  return {{"lenet", {1, 1, 28, 28}, build_lenet},
          {"tiny_yolo_like", {1, 3, 32, 32}, build_tiny_yolo_like},
          {"mobilenet_like", {1, 3, 24, 24}, build_mobilenet_like},
          {"layernorm_gelu_like", {1, 3, 6, 10}, build_layernorm_gelu_like},
          {"style_like", {1, 3, 136, 131}, build_style_like}};
}

class VulkanModel : public ::testing::TestWithParam<std::tuple<ModelCase, int, Precision>> {};

TEST_P(VulkanModel, MatchesNaiveTwiceInARow) {
  const auto& [model_case, batch, precision] = GetParam();
  std::mt19937 rng(99);
  Sequential model;
  model_case.build(model);
  randomize_parameters(model, rng);
  Shape shape = model_case.image;
  shape.n = batch;
  const Variable input = random_variable(shape, rng, 1.0f);
  model.set_backend("naive");
  const Variable expected = model.forward(input).clone();

  VulkanOptions options = validated_vulkan_options();
  options.precision = precision;
  auto owned = std::make_unique<VulkanBackend>(options);
  const VulkanStats& stats = owned->stats();
  const bool half = owned->precision() == Precision::fp16;
  model.set_backend(std::move(owned));
  for (int run = 0; run < 2; ++run) {
    EXPECT_TRUE(outputs_match(model.forward(input), expected, half ? 2e-2 : 1e-4))
        << model_case.name << " batch " << batch << " run " << run << (half ? " fp16" : "");
  }
  EXPECT_EQ(stats.submissions, 2u);
  EXPECT_EQ(stats.recordings, 1u);
}

INSTANTIATE_TEST_SUITE_P(SmallNetworks, VulkanModel,
                         ::testing::Combine(::testing::ValuesIn(all_models()), ::testing::Values(1, 3),
                                            ::testing::Values(Precision::fp32, Precision::fp16)),
                         [](const ::testing::TestParamInfo<VulkanModel::ParamType>& param_info) {
                           return fmt::format("{}_batch{}{}", std::get<0>(param_info.param).name,
                                              std::get<1>(param_info.param),
                                              std::get<2>(param_info.param) == Precision::fp16 ? "_fp16" : "");
                         });

// A new style mix of the style network uploads nothing and keeps the recorded forward: each forward reads the
// norms' mixed scale and shift, which are not constants (ConditionalInstanceNorm).
TEST(VulkanStyleTransfer, StyleChangeUploadsNothingAndKeepsTheRecording) {
  StyleTransferModel model({.styles = 3, .width = 4, .residual_blocks = 1});
  std::mt19937 rng(3);
  randomize_parameters(model.network(), rng);
  const Variable input = random_variable({1, 3, 16, 20}, rng, 0.5f);
  auto owned = std::make_unique<VulkanBackend>(validated_vulkan_options());
  const VulkanStats& stats = owned->stats();
  model.network().set_backend(std::move(owned));
  model.set_style(std::vector<float>{1.0f, 0.0f, 0.0f});
  const Variable before = model.stylise(input).clone();
  const std::uint64_t uploads = stats.upload_submissions;
  model.set_style(std::vector<float>{0.1f, 0.6f, 0.3f});
  const Variable after = model.stylise(input).clone();
  EXPECT_EQ(stats.upload_submissions, uploads);
  EXPECT_EQ(stats.recordings, 1u);
  EXPECT_EQ(stats.submissions, 2u);
  model.network().set_backend("naive");
  EXPECT_TRUE(outputs_match(after, model.stylise(input)));
  EXPECT_FALSE(outputs_match(before, model.stylise(input), 1e-2));
}

}  // namespace
}  // namespace corgy::testing
