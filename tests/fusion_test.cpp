// The conv + max pool fusion (corgy/model/fusion.h): which pairs fuse, that fused and unfused forwards agree on
// every backend, and the per-layer profile of a fused forward.
#include "corgy/model/fusion.h"

#include <fmt/format.h>

#include "test_util.h"

namespace corgy::testing {
namespace {

std::vector<FusionNode> nodes_of(const Sequential& model) {
  std::vector<FusionNode> nodes;
  for (int i = 0; i < model.size(); ++i) nodes.push_back({&model.layer(i), model.inputs_of(i), i + 1 == model.size()});
  return nodes;
}

/// The fused graph of `model`, and which of its nodes are absorbed.
FusedGraph fused(const Sequential& model) { return fuse_layers(nodes_of(model)); }
std::vector<int> absorbed(const FusedGraph& graph) {
  std::vector<int> indices;
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    if (graph.nodes[i].absorbed) indices.push_back(static_cast<int>(i));
  }
  return indices;
}

TEST(Fusion, FusesAConvolutionThatOnlyAMaxPoolReads) {
  Sequential model;
  model.add(Conv2d({.in_channels = 3, .out_channels = 4, .kernel = 3, .padding = 1}));       // 0: fused with 1
  model.add(MaxPool2d({.kernel = 2}));                                                       // 1
  const int shared = model.add(Conv2d({.in_channels = 4, .out_channels = 4, .kernel = 1}));  // 2: read by 3 and 5
  model.add(MaxPool2d({.kernel = 2}));                                                       // 3
  model.add(AvgPool2d({.kernel = 1}), {shared});                                             // 4
  model.add(Conv2d({.in_channels = 4, .out_channels = 4, .kernel = 1}));                     // 5: feeds avgpool
  model.add(AvgPool2d({.kernel = 2}));                                                       // 6
  const FusedGraph graph = fused(model);
  EXPECT_EQ(absorbed(graph), std::vector<int>{0});
  EXPECT_EQ(graph.nodes[1].layer->describe(), "conv2d 3x3/1 pad 1, 3->4 + maxpool2d 2x2/2");
  EXPECT_EQ(graph.nodes[1].inputs, std::vector<int>{Sequential::model_input});
}

TEST(Fusion, DoesNotFuseAConvolutionWhoseOutputIsKept) {
  Sequential model;
  const int conv = model.add(Conv2d({.in_channels = 2, .out_channels = 3, .kernel = 3, .padding = 1}));
  model.add(MaxPool2d({.kernel = 2}));
  EXPECT_EQ(absorbed(fused(model)), std::vector<int>{0});

  std::mt19937 rng(3);
  randomize_parameters(model, rng);
  const Variable input = random_variable({1, 2, 6, 6}, rng);
  model.set_backend("blas");
  model.forward(input);
  EXPECT_THROW(model.output(conv), Error);  // fused: never written
  model.mark_output(conv);
  const Variable pooled = model.forward(input).clone();
  const Variable conv_output = model.output(conv).clone();
  model.set_fusion(false);
  EXPECT_TRUE(outputs_match(model.forward(input), pooled, 0.0));
  EXPECT_TRUE(outputs_match(model.output(conv), conv_output, 0.0));
}

TEST(Fusion, TurnsXTimesSigmoidXIntoASwishConvolution) {
  Sequential model;
  const int conv = model.add(Conv2d({.in_channels = 3, .out_channels = 4, .kernel = 3, .padding = 1}));  // 0
  const int gate = model.add(Sigmoid());                                                                 // 1
  model.add(Elementwise(ElementwiseOp::multiply), {conv, gate});                                         // 2
  const int other = model.add(Sigmoid());                          // 3: x * sigmoid(y)
  model.add(Elementwise(ElementwiseOp::multiply), {conv, other});  // 4
  model.add(Add(), {2, 4});                                        // 5
  const FusedGraph graph = fused(model);
  // Node 0 is read by 2 and 4: it stays; 1 and 2 become one swish layer reading 0, which then cannot move into the
  // shared convolution. 3 and 4 are another pattern (the multiply's other operand is not the sigmoid's input).
  EXPECT_EQ(absorbed(graph), std::vector<int>{1});
  EXPECT_EQ(graph.nodes[2].layer->describe(), "swish");
  EXPECT_EQ(graph.nodes[2].inputs, std::vector<int>{conv});
  EXPECT_EQ(graph.nodes[4].layer->type(), "elementwise");

  Sequential alone;
  const int c = alone.add(Conv2d({.in_channels = 3, .out_channels = 4, .kernel = 1}));
  const int s = alone.add(Sigmoid());
  alone.add(Elementwise(ElementwiseOp::multiply), {s, c});  // either operand order
  const FusedGraph swish = fused(alone);
  EXPECT_EQ(absorbed(swish), (std::vector<int>{0, 1}));
  EXPECT_EQ(swish.nodes[2].layer->describe(), "conv2d 1x1/1 pad 0, 3->4, swish");
}

/// ChannelAffine(1/6, 1/2) + clipped_relu(1): hard sigmoid as an ONNX export before opset 14 writes it.
ChannelAffine hard_sigmoid(int channels, float scale = 1.0f / 6.0f) {
  ChannelAffine gate(channels, Activation::clipped_relu(1.0f));
  gate.set_parameters(std::vector<float>(channels, scale), std::vector<float>(channels, 0.5f));
  return gate;
}

// MobileNetV3's blocks as exported: expansion -> x * hard_sigmoid(x) -> depthwise -> x * hard_sigmoid(x) -> projection.
Sequential hard_swish_block() {
  Sequential model;
  const int e = model.add(Conv2d({.in_channels = 5, .out_channels = 24, .kernel = 1}));  // 0
  const int e_gate = model.add(hard_sigmoid(24));                                        // 1
  model.add(Elementwise(ElementwiseOp::multiply), {e, e_gate});                          // 2
  const int d = model.add(
      Conv2d({.in_channels = 24, .out_channels = 24, .kernel = 3, .stride = 2, .padding = 1, .groups = 24}));  // 3
  const int d_gate = model.add(hard_sigmoid(24));                                                              // 4
  model.add(Elementwise(ElementwiseOp::multiply), {d_gate, d});            // 5: either operand order
  model.add(Conv2d({.in_channels = 24, .out_channels = 7, .kernel = 1}));  // 6
  return model;
}

TEST(Fusion, TurnsXTimesHardSigmoidXIntoAHardSwishConvolution) {
  const FusedGraph graph = fused(hard_swish_block());
  // Both hard swishes move into their convolutions (0 and 3), which with the projection make one block.
  EXPECT_EQ(absorbed(graph), (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(graph.nodes[6].layer->describe(),
            "inverted_residual 5 -> 24 (hard_swish), depthwise 3x3/2 pad 1 (hard_swish), -> 7");

  // Another gate is another function: a scale of 1/5, or a gate that reads another tensor.
  Sequential other;
  const int c = other.add(Conv2d({.in_channels = 3, .out_channels = 4, .kernel = 1}));
  const int g = other.add(hard_sigmoid(4, 0.2f));
  other.add(Elementwise(ElementwiseOp::multiply), {c, g});
  const int y = other.add(Conv2d({.in_channels = 3, .out_channels = 4, .kernel = 1}), {Sequential::model_input});
  other.add(Elementwise(ElementwiseOp::multiply), {y, c});  // 4
  const int h = other.add(hard_sigmoid(4), {y});
  other.add(Elementwise(ElementwiseOp::multiply), {c, h});  // c * hard_sigmoid(y)
  other.add(Add(), {2, 6});
  const FusedGraph none = fused(other);
  EXPECT_EQ(none.nodes[2].layer->type(), "elementwise");
  EXPECT_EQ(none.nodes[6].layer->type(), "elementwise");
}

TEST(Fusion, FoldsAConcatenationAndItsBatchNormIntoTheConvolutionAfterThem) {
  // DenseNet's layers: concat -> batch norm + ReLU (a ChannelAffine) -> 1x1 convolution.
  Sequential model;
  const int stem = model.add(Conv2d({.in_channels = 3, .out_channels = 4, .kernel = 3, .padding = 1}));  // 0
  model.add(Concat(), {stem, Sequential::model_input});                                                  // 1
  model.add(ChannelAffine(7, Activation::relu()));                                                       // 2
  model.add(Conv2d({.in_channels = 7, .out_channels = 5, .kernel = 1}));                                 // 3
  model.add(ReLU());                                                                                     // 4
  const int kept = model.add(Concat(), {stem, 4});                                                       // 5
  model.add(ChannelAffine(9, Activation::relu()));                                                       // 6
  model.add(Conv2d({.in_channels = 9, .out_channels = 2, .kernel = 1}));                                 // 7
  model.add(ChannelAffine(2), {7});                                                                      // 8
  model.add(Conv2d({.in_channels = 2, .out_channels = 2, .kernel = 3, .padding = 1}));                   // 9
  model.add(Add(), {9, kept});  // 10: the second concatenation is read twice
  const FusedGraph graph = fused(model);
  // 1, 2 and 3 (with the ReLU 4) become one layer reading the concatenated tensors; 5 is read by 6 and 10 and stays;
  // the 3x3 convolution 9 takes no affine (it joins the add 10).
  EXPECT_EQ(absorbed(graph), (std::vector<int>{1, 2, 3, 6, 9}));
  EXPECT_EQ(graph.nodes[4].layer->type(), "preactivated_conv2d");
  EXPECT_EQ(graph.nodes[4].layer->describe(), "channel_affine 7, relu -> conv2d 1x1/1 pad 0, 7->5, relu");
  EXPECT_EQ(graph.nodes[4].inputs, (std::vector<int>{stem, Sequential::model_input}));
  EXPECT_EQ(graph.nodes[7].layer->type(), "preactivated_conv2d");
  EXPECT_EQ(graph.nodes[7].inputs, std::vector<int>{kept});
  EXPECT_EQ(graph.nodes[8].layer->type(), "channel_affine");
}

TEST(Fusion, MovesTheAveragePoolAfterAPreactivatedPointwiseConvolutionBeforeIt) {
  // DenseNet's transition: concat -> batch norm + ReLU -> 1x1 convolution -> 2x2/2 average pool.
  Sequential model;
  const int stem = model.add(Conv2d({.in_channels = 3, .out_channels = 4, .kernel = 3, .padding = 1}));     // 0
  model.add(Concat(), {stem, Sequential::model_input});                                                     // 1
  model.add(ChannelAffine(7, Activation::relu()));                                                          // 2
  model.add(Conv2d({.in_channels = 7, .out_channels = 5, .kernel = 1}));                                    // 3
  model.add(AvgPool2d({.kernel = 2}));                                                                      // 4
  model.add(ChannelAffine(5, Activation::relu()));                                                          // 5
  model.add(Conv2d({.in_channels = 5, .out_channels = 2, .kernel = 1, .activation = Activation::relu()}));  // 6
  model.add(AvgPool2d({.kernel = 2}));  // 7: after an activation, the two do not commute
  const FusedGraph graph = fused(model);
  EXPECT_EQ(absorbed(graph), (std::vector<int>{1, 2, 3, 5}));
  EXPECT_EQ(graph.nodes[4].layer->type(), "preactivated_conv2d");
  EXPECT_EQ(graph.nodes[4].layer->describe(), "channel_affine 7, relu -> avgpool2d 2x2/2 -> conv2d 1x1/1 pad 0, 7->5");
  EXPECT_EQ(graph.nodes[4].inputs, (std::vector<int>{stem, Sequential::model_input}));
  EXPECT_EQ(graph.nodes[6].layer->type(), "preactivated_conv2d");
  EXPECT_EQ(graph.nodes[7].layer->type(), "avgpool2d");
}

TEST(Fusion, FoldsAResidualAddIntoTheConvolutionBeforeIt) {
  Sequential model;
  const int stem = model.add(
      Conv2d({.in_channels = 3, .out_channels = 8, .kernel = 3, .padding = 1, .activation = Activation::relu()}));  // 0
  model.add(Conv2d({.in_channels = 8, .out_channels = 8, .kernel = 3, .padding = 1}));       // 1: fused into 2
  const int sum = model.add(Add(Activation::relu()), {1, stem});                             // 2
  const int shared = model.add(Conv2d({.in_channels = 8, .out_channels = 8, .kernel = 1}));  // 3: read by 4 and 6
  model.add(Add(), {shared, sum});                                                           // 4
  model.add(ReLU());                                                                         // 5: into the add 4
  model.add(Add(), {shared, 5});                                                             // 6
  const FusedGraph graph = fused(model);
  EXPECT_EQ(absorbed(graph), (std::vector<int>{1, 4}));
  EXPECT_EQ(graph.nodes[2].layer->describe(), "conv2d 3x3/1 pad 1, 8->8 + add, relu");
  EXPECT_EQ(graph.nodes[2].inputs, (std::vector<int>{stem, stem}));  // the convolution's input, then the residual
  EXPECT_EQ(graph.nodes[5].layer->describe(), "add, relu");
  EXPECT_EQ(graph.nodes[5].inputs, (std::vector<int>{3, sum}));
}

/// A squeeze-and-excitation block as exporters write it, on the output of a depthwise convolution.
Sequential squeeze_excite_block(Activation reduce_activation, Activation gate) {
  Sequential model;
  const int x = model.add(Conv2d({.in_channels = 6, .out_channels = 6, .kernel = 3, .padding = 1, .groups = 6}));
  model.add(AvgPool2d::global());
  model.add(Conv2d({.in_channels = 6, .out_channels = 3, .kernel = 1, .activation = reduce_activation}));
  model.add(Conv2d({.in_channels = 3, .out_channels = 6, .kernel = 1, .activation = gate}));
  model.add(Elementwise(ElementwiseOp::multiply), {x, 3});
  model.add(Conv2d({.in_channels = 6, .out_channels = 4, .kernel = 1}));
  return model;
}

TEST(Fusion, MakesOneLayerOfASqueezeExcitationBlock) {
  // The block's product kept as the model's output: the convolution after it must not take it (rule 9).
  Sequential block = squeeze_excite_block(Activation::relu(), Activation::clipped_relu(1.0f));
  std::vector<FusionNode> nodes = nodes_of(block);
  nodes[4].keep = true;
  const FusedGraph graph = fuse_layers(nodes);
  EXPECT_EQ(absorbed(graph), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(graph.nodes[4].layer->describe(), "squeeze_excite 6 -> 3 (relu) -> 6 (clipped_relu(1))");
  EXPECT_EQ(graph.nodes[4].inputs, std::vector<int>{0});
  EXPECT_EQ(graph.nodes[5].layer->type(), "conv2d");

  // The reduce convolution's SiLU written as x * sigmoid(x), as EfficientNet's export has it.
  Sequential model;
  const int x = model.add(Conv2d({.in_channels = 6, .out_channels = 6, .kernel = 1}));
  model.add(AvgPool2d::global());
  const int reduce = model.add(Conv2d({.in_channels = 6, .out_channels = 2, .kernel = 1}));
  const int sigmoid = model.add(Sigmoid());
  model.add(Elementwise(ElementwiseOp::multiply), {reduce, sigmoid});
  model.add(Conv2d({.in_channels = 2, .out_channels = 6, .kernel = 1, .activation = Activation::sigmoid()}));
  model.add(Elementwise(ElementwiseOp::multiply), {x, 5});
  const FusedGraph efficient = fused(model);
  EXPECT_EQ(absorbed(efficient), (std::vector<int>{1, 2, 3, 4, 5}));
  EXPECT_EQ(efficient.nodes[6].layer->describe(), "squeeze_excite 6 -> 2 (swish) -> 6 (sigmoid)");
}

TEST(Fusion, FoldsTheGatesIntoThePointwiseConvolutionAfterASqueezeExcitation) {
  const FusedGraph graph = fused(squeeze_excite_block(Activation::relu(), Activation::clipped_relu(1.0f)));
  EXPECT_EQ(absorbed(graph), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(graph.nodes[5].layer->describe(),
            "squeeze_excite 6 -> 3 (relu) -> 6 (clipped_relu(1)) -> conv2d 1x1, 6->4");
  EXPECT_EQ(graph.nodes[5].inputs, std::vector<int>{0});

  // MobileNetV3's block with its residual: the projection's add (rule 3) and its activation come along.
  Sequential model;
  const int x = model.add(Conv2d({.in_channels = 4, .out_channels = 6, .kernel = 3, .padding = 1}));  // 0
  model.add(Conv2d({.in_channels = 6, .out_channels = 6, .kernel = 3, .padding = 1, .groups = 6}));   // 1
  model.add(AvgPool2d::global());
  model.add(Conv2d({.in_channels = 6, .out_channels = 2, .kernel = 1, .activation = Activation::relu()}));
  model.add(Conv2d({.in_channels = 2, .out_channels = 6, .kernel = 1, .activation = Activation::sigmoid()}));
  model.add(Elementwise(ElementwiseOp::multiply), {1, 4});                                       // 5
  const int projection = model.add(Conv2d({.in_channels = 6, .out_channels = 6, .kernel = 1}));  // 6
  const int sum = model.add(Add(Activation::relu()), {projection, x});                           // 7
  const FusedGraph residual = fused(model);
  EXPECT_EQ(absorbed(residual), (std::vector<int>{2, 3, 4, 5, 6}));
  EXPECT_EQ(residual.nodes[sum].layer->describe(),
            "squeeze_excite 6 -> 2 (relu) -> 6 (sigmoid) -> conv2d 1x1, 6->6 + add, relu");
  EXPECT_EQ(residual.nodes[sum].inputs, (std::vector<int>{1, x}));
}

TEST(Fusion, LeavesTheScaledTensorAloneWhenAnotherLayerReadsIt) {
  // The product read by the projection and by a second convolution: it must be written, so no layer takes it; nor
  // does a 3x3 convolution (not pointwise) take the block.
  Sequential model = squeeze_excite_block(Activation::relu(), Activation::sigmoid());
  model.add(Conv2d({.in_channels = 6, .out_channels = 2, .kernel = 1}), {4});  // 6
  model.add(Concat(), {5, 6});                                                 // 7
  const FusedGraph shared = fused(model);
  EXPECT_EQ(absorbed(shared), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(shared.nodes[4].layer->type(), "squeeze_excite");
  EXPECT_EQ(shared.nodes[5].layer->type(), "conv2d");
  EXPECT_EQ(shared.nodes[6].layer->type(), "conv2d");

  Sequential spatial;
  const int x = spatial.add(Conv2d({.in_channels = 6, .out_channels = 6, .kernel = 1}));
  spatial.add(AvgPool2d::global());
  spatial.add(Conv2d({.in_channels = 6, .out_channels = 3, .kernel = 1, .activation = Activation::relu()}));
  spatial.add(Conv2d({.in_channels = 3, .out_channels = 6, .kernel = 1, .activation = Activation::sigmoid()}));
  spatial.add(Elementwise(ElementwiseOp::multiply), {x, 3});
  spatial.add(Conv2d({.in_channels = 6, .out_channels = 4, .kernel = 3, .padding = 1}));
  const FusedGraph graph = fused(spatial);
  EXPECT_EQ(graph.nodes[4].layer->type(), "squeeze_excite");
  EXPECT_EQ(graph.nodes[5].layer->type(), "conv2d");
}

// Tiny YOLO's pattern: conv + leaky + maxpool 2/2 on odd sizes, then darknet's 2/1 maxpool that pads bottom/right.
Sequential tiny_yolo_like() {
  const Activation leaky = Activation::leaky_relu(0.1f);
  Sequential model;
  model.add(Conv2d({.in_channels = 3, .out_channels = 8, .kernel = 3, .padding = 1, .activation = leaky}));
  model.add(MaxPool2d::darknet(2, 2));
  model.add(Conv2d({.in_channels = 8, .out_channels = 16, .kernel = 3, .padding = 1, .activation = leaky}));
  model.add(MaxPool2d::darknet(2, 1));
  model.add(Conv2d({.in_channels = 16, .out_channels = 5, .kernel = 1}));
  return model;
}

class FusionOnBackend : public ::testing::TestWithParam<std::string> {};

/// The model's forward with its rewrites (twice: the second reuses the plans) matches its forward layer by layer.
void expect_fused_matches_unfused(Sequential& model, const Variable& input, const std::string& context = "") {
  model.set_fusion(false);
  const Variable unfused = model.forward(input).clone();
  model.set_fusion(true);
  for (int run = 0; run < 2; ++run) {
    EXPECT_TRUE(outputs_match(model.forward(input), unfused)) << context << "run " << run;
  }
}

TEST_P(FusionOnBackend, FusedAndUnfusedForwardsAgree) {
  std::mt19937 rng(11);
  Sequential model = tiny_yolo_like();
  randomize_parameters(model, rng);
  const Variable input = random_variable({2, 3, 27, 23}, rng, 2.0f);
  model.set_backend(make_backend(GetParam(), {.validation = kSweepValidation}));
  expect_fused_matches_unfused(model, input);
}

TEST_P(FusionOnBackend, ProfileHasAnEntryPerComputedLayer) {
  std::mt19937 rng(5);
  Sequential model = tiny_yolo_like();
  randomize_parameters(model, rng);
  model.set_backend(GetParam());
  model.backend().set_profiling(true);
  model.forward(random_variable({1, 3, 16, 16}, rng));
  const std::vector<OpProfile> profile = model.backend().take_profile();
  // Layers 0 and 2 are computed inside the fused steps of layers 1 and 3. A GPU backend may record several
  // entries for one layer (a dispatch each), in layer order.
  std::vector<int> layers;
  double total_ms = 0.0;
  for (const OpProfile& entry : profile) {
    if (layers.empty() || layers.back() != entry.layer) layers.push_back(entry.layer);
    EXPECT_FALSE(entry.algorithm.empty()) << "layer " << entry.layer;
    EXPECT_GE(entry.ms, 0.0);
    total_ms += entry.ms;
  }
  EXPECT_EQ(layers, (std::vector<int>{1, 3, 4}));
  EXPECT_GT(total_ms, 0.0);
  EXPECT_TRUE(model.backend().take_profile().empty());  // taken
  model.backend().set_profiling(false);
  model.forward(random_variable({1, 3, 16, 16}, rng));
  EXPECT_TRUE(model.backend().take_profile().empty());
}

// Every rewrite at once, as a MobileNetV3 / EfficientNet / ResNet mix would have them, on odd sizes and batch 2:
// fused and unfused forwards must agree on every backend.
Sequential every_pattern() {
  Sequential model;
  const int stem = model.add(Conv2d({.in_channels = 3, .out_channels = 12, .kernel = 3, .stride = 2, .padding = 1}));
  const int stem_gate = model.add(Sigmoid());
  const int x = model.add(Elementwise(ElementwiseOp::multiply), {stem, stem_gate});  // swish into the stem
  model.add(Conv2d({.in_channels = 12,
                    .out_channels = 12,
                    .kernel = 5,
                    .padding = 2,
                    .groups = 12,
                    .activation = Activation::hard_swish()}));
  const int depthwise = model.size() - 1;
  model.add(AvgPool2d::global());
  model.add(Conv2d({.in_channels = 12, .out_channels = 4, .kernel = 1, .activation = Activation::relu()}));
  model.add(Conv2d({.in_channels = 4, .out_channels = 12, .kernel = 1, .activation = Activation::sigmoid()}));
  const int excited = model.add(Elementwise(ElementwiseOp::multiply), {depthwise, model.size() - 1});
  model.add(Conv2d({.in_channels = 12, .out_channels = 12, .kernel = 1}));
  const int block = model.add(Add(), {model.size() - 1, x});  // residual into the projection
  model.add(Conv2d({.in_channels = 12, .out_channels = 12, .kernel = 3, .padding = 1}));
  model.add(Add(Activation::relu()), {block, model.size() - 1});  // residual with ReLU, conv second
  model.add(Conv2d({.in_channels = 12, .out_channels = 5, .kernel = 1}), {excited});
  const int joined = model.add(Concat(), {model.size() - 2, model.size() - 1});
  // An inverted residual block with a stride-2 depthwise convolution after it.
  model.add(Conv2d({.in_channels = 17, .out_channels = 34, .kernel = 1, .activation = Activation::relu6()}), {joined});
  model.add(Conv2d({.in_channels = 34,
                    .out_channels = 34,
                    .kernel = 3,
                    .stride = 2,
                    .padding = 1,
                    .groups = 34,
                    .activation = Activation::relu6()}));
  model.add(Conv2d({.in_channels = 34, .out_channels = 9, .kernel = 1}));
  return model;
}

TEST(Fusion, MakesOneLayerOfAnInvertedResidualBlock) {
  Sequential model;
  const int x = model.add(Conv2d({.in_channels = 3, .out_channels = 8, .kernel = 3, .padding = 1}));  // 0
  model.add(Conv2d({.in_channels = 8, .out_channels = 48, .kernel = 1, .activation = Activation::relu6()}));
  model.add(Conv2d({.in_channels = 48,
                    .out_channels = 48,
                    .kernel = 3,
                    .padding = 1,
                    .groups = 48,
                    .activation = Activation::relu6()}));                  // 2
  model.add(Conv2d({.in_channels = 48, .out_channels = 8, .kernel = 1}));  // 3: into the add
  const int sum = model.add(Add(), {3, x});                                // 4
  model.add(Conv2d({.in_channels = 8, .out_channels = 16, .kernel = 1}));  // 5: no depthwise after it
  const FusedGraph graph = fused(model);
  EXPECT_EQ(absorbed(graph), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(graph.nodes[sum].layer->describe(),
            "inverted_residual 8 -> 48 (clipped_relu(6)), depthwise 3x3/1 pad 1 (clipped_relu(6)), -> 8 + add");
  EXPECT_EQ(graph.nodes[sum].inputs, (std::vector<int>{x, x}));
}

TEST(Fusion, MakesABlockWithoutExpansionOfADepthwiseAndAProjection) {
  // MobileNetV3-Large's first block: the depthwise convolution reads the stem's output (not a 1x1 expansion), the
  // projection adds the stem's output back. And one whose depthwise output a second layer reads: left apart.
  Sequential model;
  const int x = model.add(Conv2d({.in_channels = 3, .out_channels = 16, .kernel = 3, .stride = 2, .padding = 1}));
  model.add(Conv2d({.in_channels = 16,
                    .out_channels = 16,
                    .kernel = 3,
                    .padding = 1,
                    .groups = 16,
                    .activation = Activation::relu()}));                    // 1
  model.add(Conv2d({.in_channels = 16, .out_channels = 16, .kernel = 1}));  // 2: into the add
  const int sum = model.add(Add(), {2, x});                                 // 3
  const int shared =
      model.add(Conv2d({.in_channels = 16, .out_channels = 16, .kernel = 3, .padding = 1, .groups = 16}));
  model.add(Conv2d({.in_channels = 16, .out_channels = 8, .kernel = 1}));  // 5
  model.add(Add(), {shared, shared});                                      // 6: a second reader of 4
  const FusedGraph graph = fused(model);
  EXPECT_EQ(absorbed(graph), (std::vector<int>{1, 2}));
  EXPECT_EQ(graph.nodes[sum].layer->describe(), "inverted_residual 16, depthwise 3x3/1 pad 1 (relu), -> 16 + add");
  EXPECT_EQ(graph.nodes[sum].inputs, (std::vector<int>{x, x}));
  EXPECT_EQ(graph.nodes[5].layer->type(), "conv2d");
}

TEST(Fusion, LeavesBlocksWithAWindowThatIsNotSquareUnfused) {
  // The inverted residual's kernels read square windows only: a 3x1 depthwise convolution keeps its three layers
  // apart; a 1x7 convolution still fuses with the max pool after it (conv2d_maxpool runs any window).
  Sequential model;
  model.add(Conv2d({.in_channels = 8, .out_channels = 48, .kernel = 1, .activation = Activation::relu6()}));  // 0
  model.add(Conv2d({.in_channels = 48,
                    .out_channels = 48,
                    .window = Conv2dWindow{3, 1, 1, 1, 1, 1, 1, 0, 1, 0},
                    .groups = 48,
                    .activation = Activation::relu6()}));                  // 1
  model.add(Conv2d({.in_channels = 48, .out_channels = 8, .kernel = 1}));  // 2
  model.add(Conv2d({.in_channels = 8, .out_channels = 8, .window = Conv2dWindow{1, 7, 1, 1, 1, 1, 0, 3, 0, 3}}));
  model.add(MaxPool2d({.kernel = 2}));  // 4: absorbs 3
  const FusedGraph graph = fused(model);
  EXPECT_EQ(absorbed(graph), std::vector<int>{3});
  EXPECT_EQ(graph.nodes[4].layer->describe(), "conv2d 1x7/(1, 1) pads (0, 3, 0, 3), 8->8 + maxpool2d 2x2/2");
}

TEST(Fusion, JoinsTheSqueezeExcitationAndProjectionToTheBlockBeforeThem) {
  // EfficientNet's block: expansion, depthwise, squeeze-and-excitation, projection.
  Sequential model;
  model.add(Conv2d({.in_channels = 8, .out_channels = 32, .kernel = 1, .activation = Activation::swish()}));  // 0
  const int d = model.add(Conv2d({.in_channels = 32,
                                  .out_channels = 32,
                                  .kernel = 5,
                                  .stride = 2,
                                  .padding = 2,
                                  .groups = 32,
                                  .activation = Activation::swish()}));  // 1
  model.add(AvgPool2d::global());
  model.add(Conv2d({.in_channels = 32, .out_channels = 8, .kernel = 1, .activation = Activation::swish()}));
  model.add(Conv2d({.in_channels = 8, .out_channels = 32, .kernel = 1, .activation = Activation::sigmoid()}));
  const int excited = model.add(Elementwise(ElementwiseOp::multiply), {d, 4});  // 5
  model.add(Conv2d({.in_channels = 32, .out_channels = 16, .kernel = 1}));      // 6
  const FusedGraph graph = fused(model);
  // The expansion and depthwise convolution become a block without its projection (rule 6), the gates and the
  // projection one layer (rule 9), and the two one block (rule 13).
  EXPECT_EQ(absorbed(graph), (std::vector<int>{0, d, 2, 3, 4, excited}));
  EXPECT_EQ(graph.nodes[6].layer->describe(),
            "inverted_residual 8 -> 32 (swish), depthwise 5x5/2 pad 2 (swish), squeeze_excite 32 -> 8 (swish) -> 32 "
            "(sigmoid), -> 16");
  EXPECT_EQ(graph.nodes[6].inputs, std::vector<int>{Sequential::model_input});

  // Where another layer also reads the depthwise output, the block keeps it apart: rule 9 only.
  model.add(Add(), {d, d});  // 7
  const FusedGraph shared = fused(model);
  EXPECT_EQ(absorbed(shared), (std::vector<int>{0, 2, 3, 4, excited}));
  EXPECT_EQ(shared.nodes[d].layer->describe(), "inverted_residual 8 -> 32 (swish), depthwise 5x5/2 pad 2 (swish)");
  EXPECT_EQ(shared.nodes[6].layer->type(), "squeeze_excite_conv2d");
  EXPECT_EQ(shared.nodes[6].inputs, std::vector<int>{d});
}

TEST(Fusion, FindsEveryPatternOfTheMixedNetwork) {
  const FusedGraph graph = fused(every_pattern());
  // stem + sigmoid into the multiply (2), the block's pool and 1x1s into its product (7), the projection into
  // the first add (9), the 3x3 into the second (11), the last three convolutions into one block (16).
  EXPECT_EQ(absorbed(graph), (std::vector<int>{0, 1, 4, 5, 6, 8, 10, 14, 15}));
  EXPECT_EQ(graph.nodes[16].layer->type(), "inverted_residual");
  EXPECT_EQ(graph.nodes[2].layer->type(), "fused_conv2d");
  EXPECT_EQ(graph.nodes[7].layer->type(), "squeeze_excite");
  EXPECT_EQ(graph.nodes[9].layer->type(), "fused_conv2d");
  EXPECT_EQ(graph.nodes[11].layer->type(), "fused_conv2d");
}

TEST_P(FusionOnBackend, EveryRewriteAgreesWithTheUnfusedLayers) {
  std::mt19937 rng(17);
  Sequential model = every_pattern();
  randomize_parameters(model, rng);
  const Variable input = random_variable({2, 3, 19, 13}, rng, 2.0f);
  model.set_backend(make_backend(GetParam(), {.validation = kSweepValidation}));
  expect_fused_matches_unfused(model, input);
}

TEST_P(FusionOnBackend, TheGatedProjectionAgreesWithTheUnfusedLayers) {
  // MobileNetV3's block at batch 3 (each image its own gates; one InvertedResidual by rule 13), with and without
  // fusion in turn: the fused and the unfused forwards share the projection's weights (and a backend's plans of
  // them).
  std::mt19937 rng(23);
  Sequential model;
  const int x = model.add(Conv2d({.in_channels = 5, .out_channels = 5, .kernel = 3, .padding = 1}));
  model.add(Conv2d({.in_channels = 5, .out_channels = 21, .kernel = 1, .activation = Activation::hard_swish()}));
  model.add(Conv2d({.in_channels = 21, .out_channels = 21, .kernel = 3, .padding = 1, .groups = 21}));
  const int d = model.size() - 1;
  model.add(AvgPool2d::global());
  model.add(Conv2d({.in_channels = 21, .out_channels = 7, .kernel = 1, .activation = Activation::relu()}));
  model.add(Conv2d({.in_channels = 7, .out_channels = 21, .kernel = 1, .activation = Activation::sigmoid()}));
  model.add(Elementwise(ElementwiseOp::multiply), {d, model.size() - 1});
  model.add(Conv2d({.in_channels = 21, .out_channels = 5, .kernel = 1}));
  model.add(Add(), {model.size() - 1, x});
  randomize_parameters(model, rng);
  const Variable input = random_variable({3, 5, 9, 11}, rng, 2.0f);
  model.set_backend(make_backend(GetParam(), {.validation = kSweepValidation}));
  for (int run = 0; run < 2; ++run) {
    model.set_fusion(false);
    const Variable unfused = model.forward(input).clone();
    model.set_fusion(true);
    EXPECT_TRUE(outputs_match(model.forward(input), unfused)) << "run " << run;
  }
}

/// ConvNeXt's LayerNorm over the last axis (scale and shift as broadcast constants), GELU (its scalar steps as
/// ChannelAffine layers) and the channels-first LayerNorm (scale and shift as one ChannelAffine), as the ONNX loader
/// maps the exported chains; the ChannelAffine constants are set by set_gelu_and_norm_constants().
Sequential gelu_and_layer_norms() {
  const TensorDims d{2, 8, 5, 6}, rows{2, 8, 5, 1}, planes{2, 1, 5, 6};
  Sequential model;
  const int c = model.add(Conv2d({.in_channels = 4, .out_channels = 8, .kernel = 3, .padding = 1}));      // 0
  const int mean = model.add(ReduceAxis(ReduceOp::mean, d, 3, 3, true));                                  // 1
  const int centred = model.add(BroadcastBinary(BinaryOp::subtract, d, rows), {c, mean});                 // 2
  model.add(Unary(UnaryOp::square));                                                                      // 3
  model.add(ReduceAxis(ReduceOp::mean, d, 3, 3, true));                                                   // 4
  model.add(BroadcastBinary::with_constant(BinaryOp::add, rows, {1}, std::vector<float>{1e-5f}, false));  // 5
  const int deviation = model.add(Unary(UnaryOp::sqrt));                                                  // 6
  model.add(BroadcastBinary(BinaryOp::divide, d, rows), {centred, deviation});                            // 7
  const std::vector<float> gamma{0.5f, 1.5f, -1.0f, 2.0f, 0.25f, 1.0f};
  const std::vector<float> beta{0.1f, -0.2f, 0.3f, 0.0f, 0.5f, -1.0f};
  model.add(BroadcastBinary::with_constant(BinaryOp::multiply, d, {6}, gamma, false));                  // 8
  const int h = model.add(BroadcastBinary::with_constant(BinaryOp::add, d, {1, 1, 1, 6}, beta, true));  // 9
  model.add(ChannelAffine(8), {h});                                               // 10: x / sqrt(2)
  model.add(Unary(UnaryOp::erf));                                                 // 11
  const int plus_one = model.add(ChannelAffine(8));                               // 12: + 1
  model.add(Elementwise(ElementwiseOp::multiply), {h, plus_one});                 // 13
  const int g = model.add(ChannelAffine(8));                                      // 14: * 0.5
  const int channel_mean = model.add(ReduceAxis(ReduceOp::mean, d, 1, 1, true));  // 15
  const int channel_centred = model.add(BroadcastBinary(BinaryOp::subtract, d, planes), {g, channel_mean});  // 16
  model.add(Unary(UnaryOp::square));                                                                         // 17
  model.add(ReduceAxis(ReduceOp::mean, d, 1, 1, true));                                                      // 18
  model.add(ChannelAffine(1));                                                                    // 19: + 1e-6
  const int channel_deviation = model.add(Unary(UnaryOp::sqrt));                                  // 20
  model.add(BroadcastBinary(BinaryOp::divide, d, planes), {channel_centred, channel_deviation});  // 21
  model.add(ChannelAffine(8));                                                                    // 22: scale, shift
  model.add(Conv2d({.in_channels = 8, .out_channels = 4, .kernel = 1}));                          // 23
  return model;
}

void set_gelu_and_norm_constants(Sequential& model) {
  const auto set = [&](int layer, int channels, float scale, float shift) {
    dynamic_cast<ChannelAffine&>(model.layer(layer))
        .set_parameters(std::vector<float>(static_cast<std::size_t>(channels), scale),
                        std::vector<float>(static_cast<std::size_t>(channels), shift));
  };
  set(10, 8, 1.0f / std::sqrt(2.0f), 0.0f);
  set(12, 8, 1.0f, 1.0f);
  set(14, 8, 0.5f, 0.0f);
  set(19, 1, 1.0f, 1e-6f);
  std::vector<float> scale(8), shift(8);
  for (std::size_t k = 0; k < 8; ++k) {
    scale[k] = 0.5f + 0.25f * static_cast<float>(k);
    shift[k] = 0.1f * static_cast<float>(k) - 0.3f;
  }
  dynamic_cast<ChannelAffine&>(model.layer(22)).set_parameters(scale, shift);
}

TEST(Fusion, TurnsExportedGeluAndLayerNormsIntoOneLayerEach) {
  Sequential model = gelu_and_layer_norms();
  set_gelu_and_norm_constants(model);
  const FusedGraph graph = fused(model);
  EXPECT_EQ(absorbed(graph), (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 15, 16, 17, 18, 19, 20, 21}));
  EXPECT_EQ(graph.nodes[9].layer->describe(), "layer_norm (2, 8, 5, 6) axis 3 eps 1e-05");
  EXPECT_EQ(graph.nodes[9].inputs, std::vector<int>{0});
  EXPECT_EQ(graph.nodes[14].layer->describe(), "gelu");
  EXPECT_EQ(graph.nodes[14].inputs, std::vector<int>{9});
  EXPECT_EQ(graph.nodes[22].layer->describe(), "layer_norm (2, 8, 5, 6) axis 1 eps 1e-06");
  EXPECT_EQ(graph.nodes[22].inputs, std::vector<int>{14});
  // The scale and shift came along: the channels-first norm's from the ChannelAffine, the other's from the constants.
  const auto& channels_first = dynamic_cast<const LayerNorm&>(*graph.nodes[22].layer);
  EXPECT_FLOAT_EQ(channels_first.scale().data()[3], 1.25f);
  EXPECT_FLOAT_EQ(channels_first.shift().data()[3], 0.0f);
  const auto& last_axis = dynamic_cast<const LayerNorm&>(*graph.nodes[9].layer);
  EXPECT_FLOAT_EQ(last_axis.scale().data()[2], -1.0f);
  EXPECT_FLOAT_EQ(last_axis.shift().data()[4], 0.5f);

  // A GELU whose x / sqrt(2) is another constant stays as it is, and so does a norm whose centred value is kept.
  dynamic_cast<ChannelAffine&>(model.layer(10))
      .set_parameters(std::vector<float>(8, 0.7f), std::vector<float>(8, 0.0f));
  std::vector<FusionNode> nodes = nodes_of(model);
  nodes[2].keep = true;
  const FusedGraph kept = fuse_layers(std::move(nodes));
  EXPECT_EQ(kept.nodes[14].layer->type(), "channel_affine");
  EXPECT_EQ(kept.nodes[9].layer->type(), "broadcast_binary");
  EXPECT_EQ(kept.nodes[22].layer->type(), "layer_norm");
}

TEST(Fusion, PutsAnExportedGeluIntoTheConvolutionBeforeIt) {
  // conv -> x / sqrt(2) -> erf -> + 1 -> * conv's output -> * 0.5: rule 7a makes the gelu activation, rule 2 moves it
  // into the convolution.
  Sequential model;
  const int c = model.add(Conv2d({.in_channels = 3, .out_channels = 5, .kernel = 3, .padding = 1}));  // 0
  model.add(ChannelAffine(5));                                                                        // 1
  model.add(Unary(UnaryOp::erf));                                                                     // 2
  const int plus_one = model.add(ChannelAffine(5));                                                   // 3
  model.add(Elementwise(ElementwiseOp::multiply), {c, plus_one});                                     // 4
  model.add(ChannelAffine(5));                                                                        // 5
  const auto set = [&](int layer, float scale, float shift) {
    dynamic_cast<ChannelAffine&>(model.layer(layer))
        .set_parameters(std::vector<float>(5, scale), std::vector<float>(5, shift));
  };
  set(1, 1.0f / std::sqrt(2.0f), 0.0f);
  set(3, 1.0f, 1.0f);
  set(5, 0.5f, 0.0f);
  const FusedGraph graph = fused(model);
  EXPECT_EQ(absorbed(graph), (std::vector<int>{0, 1, 2, 3, 4}));
  const auto& conv = dynamic_cast<const FusedConv2d&>(*graph.nodes[5].layer);
  EXPECT_EQ(conv.desc().activation, Activation::gelu());
  EXPECT_FALSE(conv.residual());
  EXPECT_EQ(graph.nodes[5].inputs, std::vector<int>{Sequential::model_input});
}

/// GELU's tanh form as the loader maps PyTorch's export: x * x, x * that, * 0.044715, + x, * sqrt(2 / pi) with the
/// Tanh fused into that scaling, + 1, * x, * 0.5 (constants set by set_gelu_tanh_constants()).
Sequential gelu_tanh_block() {
  Sequential model;
  const int x = model.add(Conv2d({.in_channels = 4, .out_channels = 8, .kernel = 3, .padding = 1}));  // 0
  const int square = model.add(Elementwise(ElementwiseOp::multiply), {x, x});                         // 1
  model.add(Elementwise(ElementwiseOp::multiply), {x, square});                                       // 2
  const int k = model.add(ChannelAffine(8));                                                          // 3: * 0.044715
  model.add(Add(), {k, x});                                                                           // 4
  model.add(ChannelAffine(8, Activation::tanh()));                                                    // 5: tanh(beta *)
  const int o = model.add(ChannelAffine(8));                                                          // 6: + 1
  model.add(Elementwise(ElementwiseOp::multiply), {x, o});                                            // 7
  model.add(ChannelAffine(8));                                                                        // 8: * 0.5
  model.add(Conv2d({.in_channels = 8, .out_channels = 4, .kernel = 1}));                              // 9
  return model;
}

void set_gelu_tanh_constants(Sequential& model) {
  for (const auto& [layer, scale, shift] : std::vector<std::tuple<int, float, float>>{
           {3, 0.044715f, 0.0f}, {5, std::sqrt(2.0f / 3.14159265f), 0.0f}, {6, 1.0f, 1.0f}, {8, 0.5f, 0.0f}}) {
    dynamic_cast<ChannelAffine&>(model.layer(layer))
        .set_parameters(std::vector<float>(8, scale), std::vector<float>(8, shift));
  }
}

TEST(Fusion, TurnsTheTanhFormOfGeluIntoOneUnary) {
  Sequential model = gelu_tanh_block();
  set_gelu_tanh_constants(model);
  const FusedGraph graph = fused(model);
  EXPECT_EQ(absorbed(graph), (std::vector<int>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(graph.nodes[8].layer->describe(), "unary gelu_tanh");
  EXPECT_EQ(graph.nodes[8].inputs, std::vector<int>{0});
}

TEST_P(FusionOnBackend, GeluTanhRewriteAgreesWithTheUnfusedLayers) {
  std::mt19937 rng(31);
  Sequential model = gelu_tanh_block();
  randomize_parameters(model, rng);
  set_gelu_tanh_constants(model);
  const Variable input = random_variable({2, 4, 5, 6}, rng, 2.0f);
  model.set_backend(make_backend(GetParam(), {.validation = kSweepValidation}));
  expect_fused_matches_unfused(model, input);
}

TEST_P(FusionOnBackend, HardSwishRewriteAgreesWithTheUnfusedLayers) {
  std::mt19937 rng(23);
  Sequential model = hard_swish_block();
  randomize_parameters(model, rng);
  // randomize_parameters also randomizes the gates: set hard sigmoid's constants again.
  for (int gate : {1, 4}) {
    auto& affine = dynamic_cast<ChannelAffine&>(model.layer(gate));
    affine.set_parameters(std::vector<float>(24, 1.0f / 6.0f), std::vector<float>(24, 0.5f));
  }
  const Variable input = random_variable({3, 5, 17, 11}, rng, 4.0f);  // inputs past +-3, where the gate saturates
  model.set_backend(make_backend(GetParam(), {.validation = kSweepValidation}));
  expect_fused_matches_unfused(model, input);
}

TEST_P(FusionOnBackend, GeluAndLayerNormRewritesAgreeWithTheUnfusedLayers) {
  std::mt19937 rng(29);
  Sequential model = gelu_and_layer_norms();
  randomize_parameters(model, rng);
  set_gelu_and_norm_constants(model);  // randomize_parameters also randomizes the affine steps
  const Variable input = random_variable({2, 4, 5, 6}, rng, 2.0f);
  model.set_backend(make_backend(GetParam(), {.validation = kSweepValidation}));
  expect_fused_matches_unfused(model, input);
  // A batch of 3: the layers of any rank take it from their input.
  expect_fused_matches_unfused(model, random_variable({3, 4, 5, 6}, rng, 2.0f), "batch 3, ");
}

/// ConvNeXt's channels-last MLP as exported: MatMul by the weights (a TensorLinear without bias), then the bias as an
/// Add of a constant along the last axis (constant first, as torch.onnx writes it), then GELU; the second product has
/// a bias of its own and its Add's constant is (1, 1, 1, 4) on the other side; the third's Add varies along the
/// rows (not a bias); the fourth's output is also read by the model's last layer.
Sequential tensor_linears_with_bias_adds() {
  const TensorDims d{2, 5, 6, 4}, hidden{2, 5, 6, 8};
  const auto ramp = [](std::size_t count, float scale) {
    std::vector<float> v(count);
    for (std::size_t i = 0; i < count; ++i) v[i] = scale * (static_cast<float>(i % 7) - 3.0f);
    return v;
  };
  const auto product = [&](const TensorDims& dims, int out, bool bias) {
    const int in = dims[dims.rank - 1];
    TensorLinear linear(dims, {.in_features = in, .out_features = out, .bias = bias});
    linear.linear().set_weights(ramp(static_cast<std::size_t>(in * out), 0.1f));
    if (bias) linear.linear().set_bias(ramp(static_cast<std::size_t>(out), 0.5f));
    return linear;
  };
  Sequential model;
  model.add(product(d, 8, false));                                                                           // 0
  model.add(BroadcastBinary::with_constant(BinaryOp::add, hidden, {8}, ramp(8, 0.25f), true));               // 1
  model.add(Unary(UnaryOp::gelu));                                                                           // 2
  model.add(product(hidden, 4, true));                                                                       // 3
  model.add(BroadcastBinary::with_constant(BinaryOp::add, d, {1, 1, 1, 4}, ramp(4, 1.0f), false));           // 4
  model.add(product(d, 4, false));                                                                           // 5
  model.add(BroadcastBinary::with_constant(BinaryOp::add, d, {1, 1, 6, 1}, ramp(6, 0.3f), false));           // 6
  const int kept = model.add(product(d, 4, false));                                                          // 7
  const int biased = model.add(BroadcastBinary::with_constant(BinaryOp::add, d, {4}, ramp(4, 2.0f), true));  // 8
  model.add(BroadcastBinary(BinaryOp::multiply, d, d), {biased, kept});                                      // 9
  return model;
}

TEST(Fusion, FoldsTheBiasAddAfterATensorLinearIntoIt) {
  const Sequential model = tensor_linears_with_bias_adds();
  const FusedGraph graph = fused(model);
  EXPECT_EQ(absorbed(graph), (std::vector<int>{0, 3}));
  const auto& first = dynamic_cast<const TensorLinear&>(*graph.nodes[1].layer);
  EXPECT_EQ(graph.nodes[1].inputs, std::vector<int>{Sequential::model_input});
  ASSERT_TRUE(first.linear().has_bias());
  EXPECT_FLOAT_EQ(first.linear().bias().data()[1], 0.25f * -2.0f);
  // The weights are the original layer's, not a copy.
  EXPECT_EQ(first.linear().weights().data(),
            dynamic_cast<const TensorLinear&>(model.layer(0)).linear().weights().data());
  const auto& second = dynamic_cast<const TensorLinear&>(*graph.nodes[4].layer);
  EXPECT_EQ(graph.nodes[4].inputs, std::vector<int>{2});
  EXPECT_FLOAT_EQ(second.linear().bias().data()[3], 0.5f * 0.0f + 1.0f * 0.0f);
  EXPECT_FLOAT_EQ(second.linear().bias().data()[0], 0.5f * -3.0f + 1.0f * -3.0f);
  EXPECT_EQ(graph.nodes[6].layer->type(), "broadcast_binary");  // a constant along the rows: no bias
  EXPECT_EQ(graph.nodes[8].layer->type(), "broadcast_binary");  // the product is read by another layer too
}

TEST_P(FusionOnBackend, TensorLinearBiasRewriteAgreesWithTheUnfusedLayers) {
  std::mt19937 rng(37);
  Sequential model = tensor_linears_with_bias_adds();
  model.set_backend(make_backend(GetParam(), {.validation = kSweepValidation}));
  for (const int batch : {2, 3}) {
    const Variable input = random_variable({batch, 5, 6, 4}, rng, 2.0f);
    expect_fused_matches_unfused(model, input, fmt::format("batch {}, ", batch));
  }
}

/// ConvNeXt as torchvision writes it: a downsampling LayerNorm2d (transpose to channels-last, LayerNorm over the last
/// axis, transpose back) before a 2x2/2 convolution, then a block: transpose, LayerNorm, Linear 8 -> 16 with its bias
/// (fused by rule 10), GELU, Linear 16 -> 8, transpose back, the layer scale and the residual add. The ramp values
/// keep the Linear and LayerNorm parameters apart from ones and zeros.
Sequential convnext_like() {
  const auto ramp = [](std::size_t count, float scale, float offset) {
    std::vector<float> v(count);
    for (std::size_t i = 0; i < count; ++i) v[i] = offset + scale * (static_cast<float>(i % 5) - 2.0f);
    return v;
  };
  const auto norm = [&](const TensorDims& dims) {
    LayerNorm layer(dims, 3, 1e-6f);
    const auto length = static_cast<std::size_t>(dims[3]);
    layer.set_parameters(ramp(length, 0.25f, 1.0f), ramp(length, 0.1f, 0.0f));
    return layer;
  };
  const auto product = [&](const TensorDims& dims, int out) {
    const int in = dims[3];
    TensorLinear linear(dims, {.in_features = in, .out_features = out, .bias = false});
    linear.linear().set_weights(ramp(static_cast<std::size_t>(in * out), 0.2f, 0.0f));
    return linear;
  };
  Sequential model;
  model.add(Transpose({2, 4, 10, 12}, {0, 2, 3, 1}));                                                         // 0
  model.add(norm({2, 10, 12, 4}));                                                                            // 1
  model.add(Transpose({2, 10, 12, 4}, {0, 3, 1, 2}));                                                         // 2
  const int stem = model.add(Conv2d({.in_channels = 4, .out_channels = 8, .kernel = 2, .stride = 2}));        // 3
  model.add(Transpose({2, 8, 5, 6}, {0, 2, 3, 1}));                                                           // 4
  model.add(norm({2, 5, 6, 8}));                                                                              // 5
  model.add(product({2, 5, 6, 8}, 16));                                                                       // 6
  model.add(BroadcastBinary::with_constant(BinaryOp::add, {2, 5, 6, 16}, {16}, ramp(16, 0.3f, 0.1f), true));  // 7
  model.add(Unary(UnaryOp::gelu));                                                                            // 8
  model.add(product({2, 5, 6, 16}, 8));                                                                       // 9
  model.add(Transpose({2, 5, 6, 8}, {0, 3, 1, 2}));                                                           // 10
  ChannelAffine layer_scale(8);
  layer_scale.set_parameters(ramp(8, 0.05f, 0.5f), std::vector<float>(8, 0.0f));
  const int scaled = model.add(std::move(layer_scale));  // 11
  model.add(Add(), {stem, scaled});                      // 12
  return model;
}

TEST(Fusion, RunsChannelsLastChainsBetweenTransposesOnTheChannels) {
  const Sequential model = convnext_like();
  const FusedGraph graph = fused(model);
  EXPECT_EQ(absorbed(graph), (std::vector<int>{0, 1, 4, 6, 7, 9}));
  EXPECT_EQ(graph.nodes[2].layer->describe(), "layer_norm (2, 4, 10, 12) axis 1 eps 1e-06");
  EXPECT_EQ(graph.nodes[2].inputs, std::vector<int>{Sequential::model_input});
  EXPECT_EQ(graph.nodes[5].layer->describe(), "layer_norm (2, 8, 5, 6) axis 1 eps 1e-06");
  EXPECT_EQ(graph.nodes[5].inputs, std::vector<int>{3});
  // The first Linear became a 1x1 convolution, and the GELU after it went into that (rule 2, run again last).
  const auto& expand = dynamic_cast<const FusedConv2d&>(*graph.nodes[8].layer);
  EXPECT_EQ(expand.desc().kernel, 1);
  EXPECT_EQ(expand.desc().out_channels, 16);
  EXPECT_EQ(expand.desc().activation, Activation::gelu());
  ASSERT_FALSE(expand.bias().empty());
  EXPECT_FLOAT_EQ(expand.bias().data()[0], 0.1f - 0.6f);
  EXPECT_EQ(graph.nodes[8].inputs, std::vector<int>{5});
  // The Linear weights are viewed, not copied.
  EXPECT_EQ(expand.weights().data(), dynamic_cast<const TensorLinear&>(model.layer(6)).linear().weights().data());
  const auto& project = dynamic_cast<const Conv2d&>(*graph.nodes[10].layer);
  EXPECT_EQ(project.desc().out_channels, 8);
  EXPECT_FALSE(project.has_bias());
  EXPECT_EQ(graph.nodes[10].inputs, std::vector<int>{8});

  // A chain whose LayerNorm output another layer also reads stays channels-last.
  std::vector<FusionNode> nodes = nodes_of(model);
  nodes[5].keep = true;
  const FusedGraph kept = fuse_layers(std::move(nodes));
  EXPECT_EQ(kept.nodes[10].layer->type(), "transpose");
  EXPECT_EQ(kept.nodes[2].layer->type(), "layer_norm");  // the other chain still is rewritten
}

TEST_P(FusionOnBackend, ChannelsFirstChainsAgreeWithTheTransposedLayers) {
  std::mt19937 rng(41);
  Sequential model = convnext_like();
  randomize_parameters(model, rng);
  model.set_backend(make_backend(GetParam(), {.validation = kSweepValidation}));
  for (const int batch : {2, 3}) {
    const Variable input = random_variable({batch, 4, 10, 12}, rng, 2.0f);
    expect_fused_matches_unfused(model, input, fmt::format("batch {}, ", batch));
  }
}

/// How an Inception pool branch reaches the rewrite: the pool with its padding (torchvision's avg_pool2d(x, 3, 1, 1)
/// as a newer exporter writes it), or a zero Pad and a pool without padding (as an older one does), with the ReLU in
/// the convolution (the ONNX loader's) or as a layer after it (rule 2 fuses it).
enum class PoolBranch { padded_pool, pad_layer, relu_layer };

/// Inception v3's pool branch beside a 1x1 branch, joined: x -> [1x1 conv] and x -> 3x3/1 average pool -> 1x1
/// convolution with fewer outputs (12 -> 4) -> concat. The pool's layer is 2, the convolution's 3 (4 with the ReLU
/// layer), the concat the last.
Sequential inception_pool_branch(PoolBranch form, bool count_include_pad, Activation activation, bool bias = true) {
  Sequential model;
  const int x = model.add(Conv2d({.in_channels = 3, .out_channels = 12, .kernel = 3, .padding = 1}));  // 0
  const int branch = model.add(Conv2d({.in_channels = 12, .out_channels = 5, .kernel = 1}));           // 1
  const Conv2dOptions reduce{.in_channels = 12,
                             .out_channels = 4,
                             .kernel = 1,
                             .bias = bias,
                             .activation = form == PoolBranch::relu_layer ? Activation::none() : activation};
  if (form == PoolBranch::pad_layer) {
    model.add(Pad::uniform(1), {x});                   // 2
    model.add(AvgPool2d({.kernel = 3, .stride = 1}));  // 3
    model.add(Conv2d(reduce));                         // 4
  } else {
    model.add(AvgPool2d({.kernel = 3, .stride = 1, .padding = 1, .count_include_pad = count_include_pad}), {x});  // 2
    model.add(Conv2d(reduce));                                                                                    // 3
    if (form == PoolBranch::relu_layer) model.add(ActivationLayer(activation));                                   // 4
  }
  model.add(Concat(), {branch, model.size() - 1});
  return model;
}

TEST(Fusion, ConvolvesBeforeTheAveragePoolOfAnInceptionPoolBranch) {
  Sequential model = inception_pool_branch(PoolBranch::padded_pool, true, Activation::relu());
  std::mt19937 rng(43);
  randomize_parameters(model, rng);
  const auto& conv = dynamic_cast<const Conv2d&>(model.layer(3));
  const FusedGraph graph = fused(model);
  EXPECT_EQ(absorbed(graph), std::vector<int>{});
  // The pool's node convolves the pool's input, with the same weights (views) and no bias ...
  const auto& mix = dynamic_cast<const Conv2d&>(*graph.nodes[2].layer);
  EXPECT_EQ(mix.describe(), "conv2d 1x1/1 pad 0, 12->4");
  EXPECT_FALSE(mix.has_bias());
  EXPECT_EQ(mix.weights().data(), conv.weights().data());
  EXPECT_EQ(graph.nodes[2].inputs, std::vector<int>{0});
  // ... and the convolution's node pools that, then adds the bias and applies the ReLU.
  const auto& pool = dynamic_cast<const AvgPool2d&>(*graph.nodes[3].layer);
  EXPECT_EQ(pool.describe(), "avgpool2d 3x3/1 pad 1");
  EXPECT_TRUE(pool.options().count_include_pad);
  EXPECT_EQ(graph.nodes[3].inputs, std::vector<int>{2});
  ASSERT_NE(graph.nodes[3].then, nullptr);
  const auto& bias = dynamic_cast<const ChannelAffine&>(*graph.nodes[3].then);
  EXPECT_EQ(bias.describe(), "channel_affine 4, relu");
  EXPECT_EQ(std::vector<float>(bias.scale().values().begin(), bias.scale().values().end()),
            std::vector<float>(4, 1.0f));
  EXPECT_EQ(std::vector<float>(bias.shift().values().begin(), bias.shift().values().end()),
            std::vector<float>(conv.bias().values().begin(), conv.bias().values().end()));
  EXPECT_EQ(graph.nodes[1].layer->type(), "conv2d");

  // A ReLU layer after the convolution: rule 2 fuses it first, and its node takes the pool and the bias.
  const FusedGraph relu_layer = fused(inception_pool_branch(PoolBranch::relu_layer, false, Activation::relu()));
  EXPECT_EQ(absorbed(relu_layer), std::vector<int>{3});
  EXPECT_EQ(relu_layer.nodes[2].layer->describe(), "conv2d 1x1/1 pad 0, 12->4");
  EXPECT_FALSE(dynamic_cast<const AvgPool2d&>(*relu_layer.nodes[4].layer).options().count_include_pad);
  EXPECT_EQ(relu_layer.nodes[4].inputs, std::vector<int>{2});
  ASSERT_NE(relu_layer.nodes[4].then, nullptr);
  EXPECT_EQ(relu_layer.nodes[4].then->describe(), "channel_affine 4, relu");

  // A zero Pad before a pool without padding (the Inception v3 ONNX file's): three nodes for the three layers, the
  // zeros as the pool's padding, counted.
  const FusedGraph pad_layer = fused(inception_pool_branch(PoolBranch::pad_layer, false, Activation::relu()));
  EXPECT_EQ(absorbed(pad_layer), std::vector<int>{});
  EXPECT_EQ(pad_layer.nodes[2].layer->describe(), "conv2d 1x1/1 pad 0, 12->4");
  EXPECT_EQ(pad_layer.nodes[2].inputs, std::vector<int>{0});
  const auto& padded = dynamic_cast<const AvgPool2d&>(*pad_layer.nodes[3].layer);
  EXPECT_EQ(padded.describe(), "avgpool2d 3x3/1 pad 1");
  EXPECT_TRUE(padded.options().count_include_pad);
  EXPECT_EQ(pad_layer.nodes[3].inputs, std::vector<int>{2});
  EXPECT_EQ(pad_layer.nodes[4].layer->describe(), "channel_affine 4, relu");
  EXPECT_EQ(pad_layer.nodes[4].inputs, std::vector<int>{3});
  EXPECT_EQ(pad_layer.nodes[4].then, nullptr);

  // Without bias and activation, nothing after the pool.
  const FusedGraph plain = fused(inception_pool_branch(PoolBranch::pad_layer, true, Activation::none(), false));
  EXPECT_EQ(absorbed(plain), std::vector<int>{3});
  EXPECT_EQ(plain.nodes[4].layer->describe(), "avgpool2d 3x3/1 pad 1");
  EXPECT_EQ(plain.nodes[4].inputs, std::vector<int>{2});
  EXPECT_EQ(plain.nodes[4].then, nullptr);
}

TEST(Fusion, LeavesTheAveragePoolBeforeOtherConvolutions) {
  // Layer 1 is the pool, layer 2 the convolution; with a residual (rule 3 fuses the convolution into the add, 4).
  const auto branch = [](const PoolOptions& pool_options, const Conv2dOptions& conv_options, bool residual = false) {
    Sequential model;
    const int x = model.add(Conv2d({.in_channels = 3, .out_channels = 12, .kernel = 3, .padding = 1}));
    model.add(AvgPool2d(pool_options));
    const int conv = model.add(Conv2d(conv_options));
    if (residual) {
      model.add(Conv2d({.in_channels = 3, .out_channels = 4, .kernel = 1}), {Sequential::model_input});
      model.add(Add(Activation::relu()), {3, conv});  // the second operand first: this convolution
    } else {
      model.add(Concat(), {conv, x});
    }
    return model;
  };
  const PoolOptions inception{.kernel = 3, .stride = 1, .padding = 1};
  const Conv2dOptions reduce{.in_channels = 12, .out_channels = 4, .kernel = 1, .activation = Activation::relu()};
  Conv2dOptions same = reduce, wider = reduce, spatial = reduce, linear = reduce;
  same.out_channels = 12;
  wider.out_channels = 16;
  spatial.kernel = 3;
  spatial.padding = 1;
  linear.activation = Activation::none();
  // The pool's output read by the convolution and by the concat.
  Sequential shared = branch(inception, reduce);
  shared.add(Concat(), {1, 3});

  std::vector<std::pair<std::string, Sequential>> cases;
  cases.emplace_back("pool read twice", std::move(shared));
  cases.emplace_back("12 -> 12", branch(inception, same));
  cases.emplace_back("12 -> 16", branch(inception, wider));
  cases.emplace_back("stride 2", branch({.kernel = 3, .stride = 2, .padding = 1}, reduce));
  cases.emplace_back("3x3 convolution", branch(inception, spatial));
  cases.emplace_back("residual", branch(inception, linear, true));
  // The rewrite's own check: the Inception branch itself is rewritten.
  EXPECT_NE(fused(branch(inception, reduce)).nodes[1].layer->type(), "avgpool2d");
  for (const auto& [name, model] : cases) {
    const FusedGraph graph = fused(model);
    EXPECT_EQ(graph.nodes[1].layer->type(), "avgpool2d") << name;
    const int reader = name == "residual" ? 4 : 2;
    EXPECT_EQ(graph.nodes[reader].inputs.front(), 1) << name;
    for (const FusionNode& node : graph.nodes) EXPECT_EQ(node.then, nullptr) << name;
  }
}

TEST_P(FusionOnBackend, ConvolvingBeforeTheAveragePoolAgreesWithTheUnfusedLayers) {
  std::mt19937 rng(47);
  for (const PoolBranch form : {PoolBranch::padded_pool, PoolBranch::pad_layer, PoolBranch::relu_layer}) {
    for (const bool count_include_pad : {true, false}) {
      for (const Activation activation : {Activation::relu(), Activation::none()}) {
        Sequential model = inception_pool_branch(form, count_include_pad, activation);
        randomize_parameters(model, rng);
        model.set_backend(make_backend(GetParam(), {.validation = kSweepValidation}));
        const Variable input = random_variable({2, 3, 9, 7}, rng, 2.0f);
        expect_fused_matches_unfused(model, input,
                                     fmt::format("form {}, count_include_pad {}, {}, ", static_cast<int>(form),
                                                 count_include_pad, activation.str()));
      }
    }
  }
  // Asymmetric padding (2x2/1, one row and column at the bottom and right) and a 5x5 window.
  for (const PoolOptions& options : {PoolOptions{.kernel = 2, .stride = 1, .padding = 0, .padding_bottom_right = 1},
                                     PoolOptions{.kernel = 5, .stride = 1, .padding = 2, .count_include_pad = false}}) {
    Sequential model;
    model.add(Conv2d({.in_channels = 3, .out_channels = 10, .kernel = 3, .padding = 1}));
    model.add(AvgPool2d(options));
    model.add(Conv2d({.in_channels = 10, .out_channels = 3, .kernel = 1, .activation = Activation::leaky_relu(0.1f)}));
    randomize_parameters(model, rng);
    ASSERT_NE(fused(model).nodes[2].then, nullptr) << options.kernel;
    model.set_backend(make_backend(GetParam(), {.validation = kSweepValidation}));
    expect_fused_matches_unfused(model, random_variable({1, 3, 8, 11}, rng, 2.0f),
                                 fmt::format("{}x{}, ", options.kernel, options.kernel));
  }
  // The convolution's output kept for the caller: the bias step writes it, after the pool's temporary.
  Sequential kept = inception_pool_branch(PoolBranch::padded_pool, true, Activation::relu());
  randomize_parameters(kept, rng);
  kept.set_backend(make_backend(GetParam(), {.validation = kSweepValidation}));
  kept.mark_output(3);
  const Variable input = random_variable({2, 3, 9, 7}, rng, 2.0f);
  kept.set_fusion(false);
  kept.forward(input);
  const Variable unfused = kept.output(3).clone();
  kept.set_fusion(true);
  kept.forward(input);
  EXPECT_TRUE(outputs_match(kept.output(3), unfused));
}

INSTANTIATE_TEST_SUITE_P(EveryBackend, FusionOnBackend, ::testing::ValuesIn(all_backends()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace corgy::testing
