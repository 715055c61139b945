// The conv + max pool fusion (corgy/model/fusion.h): which pairs fuse, that fused and unfused forwards agree on
// every backend, and the per-layer profile of a fused forward.
#include "corgy/model/fusion.h"

#include "test_util.h"

namespace corgy::testing {
namespace {

std::vector<FusionNode> nodes_of(const Sequential& model) {
  std::vector<FusionNode> nodes;
  for (int i = 0; i < model.size(); ++i) nodes.push_back({&model.layer(i), model.inputs_of(i), i + 1 == model.size()});
  return nodes;
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
  const std::vector<ConvMaxPoolFusion> fusions = find_conv_maxpool_fusions(nodes_of(model));
  ASSERT_EQ(fusions.size(), 1u);
  EXPECT_EQ(fusions[0].conv, 0);
  EXPECT_EQ(fusions[0].pool, 1);
  EXPECT_EQ(fusions[0].fused->describe(), "conv2d 3x3/1 pad 1, 3->4 + maxpool2d 2x2/2");
}

TEST(Fusion, DoesNotFuseAConvolutionWhoseOutputIsKept) {
  Sequential model;
  const int conv = model.add(Conv2d({.in_channels = 2, .out_channels = 3, .kernel = 3, .padding = 1}));
  model.add(MaxPool2d({.kernel = 2}));
  EXPECT_EQ(find_conv_maxpool_fusions(nodes_of(model)).size(), 1u);

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

TEST_P(FusionOnBackend, FusedAndUnfusedForwardsAgree) {
  std::mt19937 rng(11);
  Sequential model = tiny_yolo_like();
  randomize_parameters(model, rng);
  const Variable input = random_variable({2, 3, 27, 23}, rng, 2.0f);
  model.set_backend(make_backend(GetParam(), {.validation = true}));
  model.set_fusion(false);
  const Variable unfused = model.forward(input).clone();
  model.set_fusion(true);
  for (int run = 0; run < 2; ++run) EXPECT_TRUE(outputs_match(model.forward(input), unfused)) << "run " << run;
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
