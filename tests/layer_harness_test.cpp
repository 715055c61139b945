// The layer harness: every layer, over many shapes and parameters, on every backend, against the naive
// backend, with random inputs and weights (max error relative to the output's magnitude <= 1e-4).
// A case is a small model whose last layer is the one under test; multi-input layers get their inputs from
// convolutions of the model input.
#include <fmt/format.h>

#include <functional>

#include "test_util.h"

namespace corgy::testing {
namespace {

struct LayerCase {
  std::string name;
  Shape input;
  std::function<void(Sequential&)> build;
  int index = 0;                   ///< its place in all_cases()
  bool first_of_its_kind = false;  ///< the first case that its add_*_cases function made
};

void PrintTo(const LayerCase& layer_case, std::ostream* os) { *os << layer_case.name; }

// The backends under test: every one but the naive reference itself, and the blas backend with each of its
// convolution algorithms forced (where one does not apply, the automatic choice runs).
std::vector<std::string> backends_under_test() {
  std::vector<std::string> names = all_backends();
  std::erase(names, "naive");
  for (const char* forced : {"blas:im2col", "blas:packed", "blas:winograd", "blas:winograd2x2", "blas:bands",
                             "blas:channel_blocks", "blas:batch", "blas:channels_in_lanes", "blas:few_channels"})
    names.push_back(forced);
  return names;
}

std::string sanitize(std::string text) {
  for (char& ch : text) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return text;
}

void add_conv_cases(std::vector<LayerCase>& cases) {
  struct ConvShape {
    Shape input;
    Conv2dOptions options;
  };
  const Activation leaky = Activation::leaky_relu(0.1f);
  const std::vector<ConvShape> shapes = {
      {{1, 3, 13, 13}, {.in_channels = 3, .out_channels = 8, .kernel = 3, .padding = 1}},
      {{3, 5, 17, 11}, {.in_channels = 5, .out_channels = 7, .kernel = 3, .padding = 1, .activation = leaky}},
      {{2, 4, 9, 9}, {.in_channels = 4, .out_channels = 6, .kernel = 1}},
      {{1, 8, 7, 5}, {.in_channels = 8, .out_channels = 3, .kernel = 1, .bias = false}},
      {{3, 3, 15, 15},
       {.in_channels = 3, .out_channels = 4, .kernel = 5, .padding = 2, .activation = Activation::relu()}},
      {{1, 6, 16, 16}, {.in_channels = 6, .out_channels = 8, .kernel = 3, .stride = 2, .padding = 1}},
      {{2, 3, 11, 13}, {.in_channels = 3, .out_channels = 5, .kernel = 3, .stride = 2}},
      {{1, 4, 15, 15}, {.in_channels = 4, .out_channels = 4, .kernel = 3, .padding = 2, .dilation = 2}},
      {{3, 2, 12, 9}, {.in_channels = 2, .out_channels = 3, .kernel = 5, .stride = 2, .padding = 1, .dilation = 2}},
      {{1, 8, 10, 10}, {.in_channels = 8, .out_channels = 12, .kernel = 3, .padding = 1, .groups = 2}},
      {{3, 6, 9, 7},
       {.in_channels = 6, .out_channels = 6, .kernel = 1, .groups = 3, .activation = Activation::sigmoid()}},
      {{1, 16, 14, 14},
       {.in_channels = 16, .out_channels = 16, .kernel = 3, .padding = 1, .groups = 16, .activation = leaky}},
      {{3, 8, 13, 11}, {.in_channels = 8, .out_channels = 8, .kernel = 3, .stride = 2, .padding = 1, .groups = 8}},
      {{2, 5, 8, 8},
       {.in_channels = 5,
        .out_channels = 10,
        .kernel = 3,
        .padding = 1,
        .groups = 5,
        .activation = Activation::tanh()}},
      // Grouped convolutions on the channels-in-lanes GEMM (blas:channels_in_lanes; ResNeXt's groups): groups of 16,
      // 8 and 40 output channels (a group in two panels, the second partly empty), strides 1 and 2, dilation, batch
      // 3, rows that are no multiple of a tile.
      {{3, 32, 9, 11},
       {.in_channels = 32,
        .out_channels = 32,
        .kernel = 3,
        .padding = 1,
        .groups = 2,
        .activation = Activation::relu()}},
      {{2, 12, 13, 10},
       {.in_channels = 12,
        .out_channels = 32,
        .kernel = 3,
        .stride = 2,
        .padding = 1,
        .groups = 4,
        .activation = leaky}},
      {{1, 20, 8, 9},
       {.in_channels = 20,
        .out_channels = 80,
        .kernel = 3,
        .padding = 2,
        .dilation = 2,
        .groups = 2,
        .activation = Activation::swish()}},
      {{1, 1, 28, 28},
       {.in_channels = 1, .out_channels = 32, .kernel = 5, .padding = 2, .activation = Activation::relu()}},
      {{1, 3, 1, 1}, {.in_channels = 3, .out_channels = 5, .kernel = 1, .activation = Activation::mish()}},
      {{2, 4, 3, 3}, {.in_channels = 4, .out_channels = 6, .kernel = 3, .activation = Activation::swish()}},
      {{1, 64, 13, 13}, {.in_channels = 64, .out_channels = 48, .kernel = 3, .padding = 1, .activation = leaky}},
      // Winograd F(4x4, 3x3)'s cases: sizes that are not multiples of 4, channels not multiples of 8 or 16, no
      // padding and padding 2, batch 3, enough channels for the automatic choice, a Tiny YOLO-sized layer.
      {{3, 19, 23, 29}, {.in_channels = 19, .out_channels = 21, .kernel = 3, .padding = 1, .activation = leaky}},
      {{2, 16, 8, 9}, {.in_channels = 16, .out_channels = 33, .kernel = 3, .activation = Activation::relu()}},
      {{1, 24, 30, 30},
       {.in_channels = 24, .out_channels = 40, .kernel = 3, .padding = 2, .activation = Activation::mish()}},
      {{1, 256, 13, 13}, {.in_channels = 256, .out_channels = 128, .kernel = 3, .padding = 1, .activation = leaky}},
      // Winograd F(2x2, 5x5) by the automatic choice (a 5x5 layer of >= 8 channels, MNIST's second layer's shape).
      {{2, 12, 14, 13},
       {.in_channels = 12, .out_channels = 20, .kernel = 5, .padding = 2, .activation = Activation::relu()}},
      {{1, 32, 26, 26}, {.in_channels = 32, .out_channels = 16, .kernel = 1, .stride = 2}},
      // The blas backend's strided convolutions on phase planes read in place: a ResNet-style 7x7/2 stem (depth 147)
      // at odd sizes and batch 3, an even size with channels not a multiple of 8, stride 2 with dilation 3.
      {{3, 3, 23, 21},
       {.in_channels = 3,
        .out_channels = 10,
        .kernel = 7,
        .stride = 2,
        .padding = 3,
        .activation = Activation::relu()}},
      {{1, 3, 32, 32}, {.in_channels = 3, .out_channels = 13, .kernel = 7, .stride = 2, .padding = 3}},
      {{3, 19, 15, 13}, {.in_channels = 19, .out_channels = 21, .kernel = 3, .stride = 2, .padding = 1}},
      {{2, 5, 16, 14}, {.in_channels = 5, .out_channels = 7, .kernel = 5, .stride = 3, .padding = 2}},
      {{2, 4, 17, 16},
       {.in_channels = 4,
        .out_channels = 9,
        .kernel = 3,
        .stride = 2,
        .padding = 3,
        .dilation = 3,
        .activation = leaky}},
      // 1x1 convolutions of stride 2 and 3 (pointwise on the subsampled input): odd sizes, batch 3, groups.
      {{3, 13, 11, 9},
       {.in_channels = 13, .out_channels = 20, .kernel = 1, .stride = 2, .activation = Activation::swish()}},
      {{2, 6, 10, 11}, {.in_channels = 6, .out_channels = 4, .kernel = 1, .stride = 3, .groups = 2}},
      {{3, 3, 11, 9},
       {.in_channels = 3, .out_channels = 8, .kernel = 3, .padding = 1, .activation = Activation::clipped_relu(0.6f)}},
      {{2, 8, 9, 7},
       {.in_channels = 8,
        .out_channels = 8,
        .kernel = 3,
        .padding = 1,
        .groups = 8,
        .activation = Activation::relu6()}},
      {{3, 4, 7, 6}, {.in_channels = 4, .out_channels = 6, .kernel = 1, .activation = Activation::hard_swish()}},
      // Pointwise convolutions large enough for two threads on small images: the blas backend splits their output
      // channels between threads (a channel count that is no multiple of a panel, groups, batch 3).
      {{3, 64, 14, 13}, {.in_channels = 64, .out_channels = 100, .kernel = 1, .activation = Activation::relu()}},
      {{2, 96, 7, 7}, {.in_channels = 96, .out_channels = 120, .kernel = 1, .groups = 2}},
      // A reduction (ResNet's 1024 -> 256): the team splits its depth, each member's sums added up by channel (210
      // pixels: whole column panels and a tail).
      {{3, 200, 15, 14}, {.in_channels = 200, .out_channels = 44, .kernel = 1, .activation = Activation::relu6()}},
      // Depthwise convolutions (the blas backend's SIMD kernels): 3x3, 5x5 and 7x7, strides 1 and 2, dilation,
      // odd plane sizes and channel counts, batch 3, planes smaller than a register, every exponential activation.
      {{3, 13, 11, 9},
       {.in_channels = 13,
        .out_channels = 13,
        .kernel = 5,
        .padding = 2,
        .groups = 13,
        .activation = Activation::swish()}},
      {{1, 21, 15, 17},
       {.in_channels = 21,
        .out_channels = 21,
        .kernel = 5,
        .stride = 2,
        .padding = 2,
        .groups = 21,
        .activation = Activation::hard_swish()}},
      {{2, 9, 12, 10}, {.in_channels = 9, .out_channels = 9, .kernel = 3, .padding = 2, .dilation = 2, .groups = 9}},
      {{1, 35, 7, 7},
       {.in_channels = 35,
        .out_channels = 35,
        .kernel = 3,
        .stride = 2,
        .padding = 1,
        .groups = 35,
        .activation = Activation::mish()}},
      {{2, 6, 14, 14},
       {.in_channels = 6,
        .out_channels = 6,
        .kernel = 7,
        .padding = 3,
        .groups = 6,
        .bias = false,
        .activation = Activation::sigmoid()}},
      {{3, 5, 19, 2},
       {.in_channels = 5,
        .out_channels = 5,
        .kernel = 3,
        .stride = 2,
        .padding = 3,
        .dilation = 3,
        .groups = 5,
        .activation = Activation::tanh()}},
      // The channel-block kernel's blocks of 16 consecutive planes: channel counts that leave a block running from
      // one image into the next (19 at batch 3, 40), a last block of fewer planes, 7x7 at stride 2, no padding.
      {{3, 19, 9, 11},
       {.in_channels = 19,
        .out_channels = 19,
        .kernel = 3,
        .padding = 1,
        .groups = 19,
        .activation = Activation::relu()}},
      {{2, 40, 14, 14},
       {.in_channels = 40,
        .out_channels = 40,
        .kernel = 5,
        .stride = 2,
        .padding = 2,
        .groups = 40,
        .activation = Activation::leaky_relu(0.1f)}},
      {{3, 7, 13, 12},
       {.in_channels = 7,
        .out_channels = 7,
        .kernel = 7,
        .stride = 2,
        .padding = 3,
        .groups = 7,
        .activation = Activation::relu6()}},
      {{1, 33, 8, 8}, {.in_channels = 33, .out_channels = 33, .kernel = 3, .stride = 2, .groups = 33}},
      // Small output maps, where the blas backend may compute C^T with the output channels in the vector lanes
      // (channels_in_lanes_gemm.h; "blas:channels_in_lanes" forces it): 7x7 (49 pixels in 7 panels of 7), 5x5, 3x3
      // and 13x13, pixel runs that cross images (batch 3), channel counts that are no multiple of a panel, stride 2
      // (ResNet-50's 3x3/2 onto 7x7), the 1x1 / 2 shortcut, a deep 3x3 (depth blocks and their last partial one).
      {{3, 37, 7, 7}, {.in_channels = 37, .out_channels = 53, .kernel = 1, .activation = Activation::relu()}},
      {{1, 20, 5, 5}, {.in_channels = 20, .out_channels = 50, .kernel = 3, .padding = 1, .activation = leaky}},
      {{3, 19, 3, 3}, {.in_channels = 19, .out_channels = 100, .kernel = 1, .activation = Activation::swish()}},
      {{1, 24, 13, 13},
       {.in_channels = 24, .out_channels = 49, .kernel = 3, .padding = 1, .activation = Activation::mish()}},
      {{3, 16, 14, 14},
       {.in_channels = 16,
        .out_channels = 60,
        .kernel = 3,
        .stride = 2,
        .padding = 1,
        .activation = Activation::relu6()}},
      {{3, 30, 13, 13}, {.in_channels = 30, .out_channels = 70, .kernel = 1, .stride = 2, .bias = false}},
      {{2, 40, 7, 7},
       {.in_channels = 40, .out_channels = 97, .kernel = 3, .padding = 1, .activation = Activation::tanh()}},
      // Layers of fewer output channels than go round the team in panels, which the channels-in-lanes GEMM splits
      // over pixels instead (DenseNet's 7x7 128 -> 32; channels_in_lanes_splits_pixels): output rows of the taps
      // path at strides 1 and 2, the pointwise path's pixel panels across images, the implicit im2col at stride 3;
      // batch 3, row counts that do not split evenly, channels that fill no panel.
      {{3, 64, 7, 7}, {.in_channels = 64, .out_channels = 32, .kernel = 3, .padding = 1, .activation = leaky}},
      {{3, 48, 13, 11},
       {.in_channels = 48,
        .out_channels = 20,
        .kernel = 3,
        .stride = 2,
        .padding = 1,
        .activation = Activation::swish()}},
      {{3, 96, 7, 7}, {.in_channels = 96, .out_channels = 40, .kernel = 1, .activation = Activation::relu()}},
      {{2, 64, 15, 15}, {.in_channels = 64, .out_channels = 24, .kernel = 3, .stride = 3, .bias = false}},
      // GELU in the epilogues (ConvNeXt's first 1x1 convolution of each block): pointwise with channels that are no
      // multiple of a panel, on a plane of 63 pixels and on a small one (channels in lanes), a 3x3 (Winograd, the
      // implicit GEMM), a depthwise 7x7.
      {{2, 24, 7, 9}, {.in_channels = 24, .out_channels = 52, .kernel = 1, .activation = Activation::gelu()}},
      {{3, 20, 5, 5}, {.in_channels = 20, .out_channels = 44, .kernel = 1, .activation = Activation::gelu()}},
      {{3, 5, 11, 13},
       {.in_channels = 5, .out_channels = 9, .kernel = 3, .padding = 1, .activation = Activation::gelu()}},
      {{2, 17, 10, 11},
       {.in_channels = 17,
        .out_channels = 17,
        .kernel = 7,
        .padding = 3,
        .groups = 17,
        .activation = Activation::gelu()}},
      // Stems: few input channels, which the blas backend may compute by its direct kernel (few_channels_conv.h;
      // "blas:few_channels" forces it): MobileNet's 3x3 / 2 (output channels in two whole blocks and a ragged one, a
      // plane tall enough for several bands at two threads), ResNet's 7x7 / 2, ConvNeXt's 4x4 / 4 patches, a single
      // channel, a band that reads only padding (padding past the window), dilation, batch 3.
      {{1, 3, 37, 41},
       {.in_channels = 3,
        .out_channels = 20,
        .kernel = 3,
        .stride = 2,
        .padding = 1,
        .activation = Activation::relu6()}},
      {{2, 3, 29, 31}, {.in_channels = 3, .out_channels = 13, .kernel = 7, .stride = 2, .padding = 3}},
      {{3, 3, 18, 18},
       {.in_channels = 3, .out_channels = 9, .kernel = 4, .stride = 4, .activation = Activation::gelu()}},
      {{1, 1, 20, 17}, {.in_channels = 1, .out_channels = 5, .kernel = 3, .padding = 1, .activation = leaky}},
      {{2, 2, 6, 7}, {.in_channels = 2, .out_channels = 4, .kernel = 1, .padding = 2, .bias = false}},
      {{3, 4, 16, 13},
       {.in_channels = 4,
        .out_channels = 11,
        .kernel = 3,
        .stride = 3,
        .padding = 2,
        .dilation = 2,
        .activation = Activation::hard_swish()}},
  };
  for (const ConvShape& s : shapes) {
    const Conv2d layer(s.options);
    cases.push_back({layer.describe() + " " + s.input.str(), s.input,
                     [options = s.options](Sequential& model) { model.add(Conv2d(options)); }});
  }
}

void add_pool_cases(std::vector<LayerCase>& cases) {
  const std::vector<std::pair<Shape, PoolOptions>> shapes = {
      {{1, 3, 8, 8}, {.kernel = 2}},
      {{3, 4, 13, 11}, {.kernel = 2}},
      {{2, 5, 15, 15}, {.kernel = 3, .stride = 2, .padding = 1}},
      {{1, 2, 9, 12}, {.kernel = 3, .stride = 1, .padding = 1}},
      {{3, 3, 13, 13}, {.kernel = 2, .stride = 1, .padding = 0, .padding_bottom_right = 1}},
      {{2, 4, 7, 9}, {.kernel = 5, .stride = 3, .padding = 2, .padding_bottom_right = 1}},
      // The blas backend's stride-2 line reductions (separable_pool.cpp): windows of 3 (Inception's unpadded stem
      // pools, odd widths), of 2 with padding (not the unpadded 2x2 / 2 special case) and of 4 (the loop over taps).
      {{2, 3, 15, 17}, {.kernel = 3, .stride = 2}},
      {{2, 3, 9, 10}, {.kernel = 2, .stride = 2, .padding = 1}},
      {{1, 4, 15, 14}, {.kernel = 4, .stride = 2, .padding = 1}},
      {{3, 6, 10, 7}, {.global = true}},
      // Global pools as the Vulkan backend splits them: 128 threads per plane (37 x 41), one per plane and more
      // planes than a workgroup takes (300 planes of 1 x 1).
      {{2, 3, 37, 41}, {.global = true}},
      {{1, 300, 1, 1}, {.global = true}},
  };
  for (const auto& [input, options] : shapes) {
    const MaxPool2d max_layer(options);
    cases.push_back({max_layer.describe() + " " + input.str(), input,
                     [options = options](Sequential& model) { model.add(MaxPool2d(options)); }});
    for (bool include_pad : {true, false}) {
      PoolOptions average = options;
      average.count_include_pad = include_pad;
      const AvgPool2d avg_layer(average);
      cases.push_back({avg_layer.describe() + (include_pad ? " incl pad " : " excl pad ") + input.str(), input,
                       [average](Sequential& model) { model.add(AvgPool2d(average)); }});
    }
  }
  cases.push_back({"maxpool darknet 2/1 (1, 8, 13, 13)", {1, 8, 13, 13}, [](Sequential& model) {
                     model.add(MaxPool2d::darknet(2, 1));
                   }});
  cases.push_back({"maxpool darknet 2/2 (2, 3, 27, 27)", {2, 3, 27, 27}, [](Sequential& model) {
                     model.add(MaxPool2d::darknet(2, 2));
                   }});
}

// A convolution followed by a max pool: Sequential fuses the pair into one conv2d_maxpool operation.
void add_conv_maxpool_cases(std::vector<LayerCase>& cases) {
  struct FusedShape {
    Shape input;
    Conv2dOptions conv;
    MaxPool2d pool;
  };
  const Activation leaky = Activation::leaky_relu(0.1f);
  const std::vector<FusedShape> shapes = {
      {{1, 3, 13, 13},
       {.in_channels = 3, .out_channels = 8, .kernel = 3, .padding = 1, .activation = leaky},
       MaxPool2d({.kernel = 2})},
      {{2, 8, 13, 13}, {.in_channels = 8, .out_channels = 12, .kernel = 3, .padding = 1}, MaxPool2d::darknet(2, 1)},
      {{2, 7, 26, 26},
       {.in_channels = 7, .out_channels = 17, .kernel = 3, .padding = 1, .activation = leaky},
       MaxPool2d::darknet(2, 2)},
      {{3, 5, 17, 15},
       {.in_channels = 5, .out_channels = 6, .kernel = 3, .stride = 2},
       MaxPool2d({.kernel = 3, .stride = 2, .padding = 1})},
      {{2, 3, 29, 27},
       {.in_channels = 3, .out_channels = 11, .kernel = 7, .stride = 2, .padding = 3, .activation = Activation::relu()},
       MaxPool2d({.kernel = 3, .stride = 2, .padding = 1})},
      {{1, 8, 12, 12},
       {.in_channels = 8, .out_channels = 8, .kernel = 3, .padding = 1, .groups = 8},
       MaxPool2d({.kernel = 2})},
      {{3, 6, 10, 10}, {.in_channels = 6, .out_channels = 9, .kernel = 1}, MaxPool2d({.kernel = 2})},
      {{2, 1, 28, 28},
       {.in_channels = 1, .out_channels = 32, .kernel = 5, .padding = 2, .activation = Activation::relu()},
       MaxPool2d({.kernel = 2})},
      {{2, 8, 11, 11},
       {.in_channels = 8, .out_channels = 6, .kernel = 3, .padding = 1, .groups = 2},
       MaxPool2d::darknet(2, 2)},
      {{1, 4, 9, 9}, {.in_channels = 4, .out_channels = 5, .kernel = 3, .dilation = 2}, MaxPool2d({.global = true})},
      // Stems that the direct few-channel kernel pools in bands of pooled rows (few_channels_conv_pooled): several
      // bands at batch 1, a window taller than its stride (rows computed by two bands), padding above the second
      // band's first window (5x5/1 pad 2), darknet's padding below only, output channels not a multiple of 8.
      {{1, 3, 61, 57},
       {.in_channels = 3, .out_channels = 10, .kernel = 7, .stride = 2, .padding = 3, .activation = Activation::relu()},
       MaxPool2d({.kernel = 3, .stride = 2, .padding = 1})},
      {{2, 2, 23, 19},
       {.in_channels = 2, .out_channels = 9, .kernel = 3, .padding = 1, .activation = leaky},
       MaxPool2d({.kernel = 5, .stride = 1, .padding = 2})},
      {{1, 3, 40, 33},
       {.in_channels = 3, .out_channels = 16, .kernel = 5, .stride = 2, .padding = 2},
       MaxPool2d::darknet(2, 1)},
  };
  for (const FusedShape& s : shapes) {
    const Conv2d conv(s.conv);
    cases.push_back({conv.describe() + " + " + s.pool.describe() + " " + s.input.str(), s.input,
                     [options = s.conv, pool = s.pool](Sequential& model) {
                       model.add(Conv2d(options));
                       model.add(MaxPool2d(pool));
                     }});
  }
}

void add_elementwise_cases(std::vector<LayerCase>& cases) {
  for (Shape input : {Shape{1, 3, 7, 5}, Shape{3, 2, 9, 9}}) {
    const std::string shape = fmt::format(" {}", input.str());
    cases.push_back({"relu" + shape, input, [](Sequential& m) { m.add(ReLU()); }});
    cases.push_back({"leaky_relu" + shape, input, [](Sequential& m) { m.add(LeakyReLU(0.2f)); }});
    cases.push_back({"sigmoid" + shape, input, [](Sequential& m) { m.add(Sigmoid()); }});
    cases.push_back({"tanh" + shape, input, [](Sequential& m) { m.add(Tanh()); }});
    cases.push_back({"softmax" + shape, input, [](Sequential& m) { m.add(Softmax()); }});
    cases.push_back({"batchnorm" + shape, input, [c = input.c](Sequential& m) { m.add(BatchNorm(c)); }});
    cases.push_back({"upsample x2" + shape, input, [](Sequential& m) { m.add(Upsample(2)); }});
    cases.push_back({"upsample x3" + shape, input, [](Sequential& m) { m.add(Upsample(3)); }});
    cases.push_back({"channel_affine" + shape, input, [c = input.c](Sequential& m) { m.add(ChannelAffine(c)); }});
    cases.push_back({"channel_affine relu" + shape, input,
                     [c = input.c](Sequential& m) { m.add(ChannelAffine(c, Activation::relu())); }});
    cases.push_back({"channel_affine swish" + shape, input,
                     [c = input.c](Sequential& m) { m.add(ChannelAffine(c, Activation::swish())); }});
    cases.push_back({"prelu" + shape, input, [c = input.c](Sequential& m) { m.add(PReLU(c)); }});
    // Scaled by up to 4 first, so that both clamps of clipped ReLU and hard swish are reached.
    cases.push_back({"clipped_relu(1.5)" + shape, input, [c = input.c](Sequential& m) {
                       m.add(ChannelAffine(c));
                       m.add(ActivationLayer(Activation::clipped_relu(1.5f)));
                     }});
    cases.push_back({"hard_swish" + shape, input, [c = input.c](Sequential& m) {
                       m.add(ChannelAffine(c));
                       m.add(ChannelAffine(c));
                       m.add(ActivationLayer(Activation::hard_swish()));
                     }});
    // Scaled up first too: GELU's tails (x < -3, where it is tiny and negative; x > 3) and its middle.
    cases.push_back({"gelu" + shape, input, [c = input.c](Sequential& m) {
                       m.add(ChannelAffine(c));
                       m.add(ChannelAffine(c));
                       m.add(ActivationLayer(Activation::gelu()));
                     }});
    cases.push_back({"channel_affine gelu" + shape, input,
                     [c = input.c](Sequential& m) { m.add(ChannelAffine(c, Activation::gelu())); }});
  }
  cases.push_back({"softmax (3, 10, 1, 1)", {3, 10, 1, 1}, [](Sequential& m) { m.add(Softmax()); }});
}

void add_normalization_cases(std::vector<LayerCase>& cases) {
  // A constant offset on the input checks that the variance is taken around the mean, without cancellation.
  for (Shape input : {Shape{3, 5, 7, 9}, Shape{1, 4, 1, 13}, Shape{2, 3, 33, 31}, Shape{3, 2, 1, 1}}) {
    cases.push_back({"instance_norm" + std::string(" ") + input.str(), input,
                     [c = input.c](Sequential& m) { m.add(InstanceNorm(c)); }});
  }
  cases.push_back({"instance_norm eps 1e-3 relu (3, 6, 11, 5)", {3, 6, 11, 5}, [](Sequential& m) {
                     m.add(InstanceNorm(6, 1e-3f, Activation::relu()));
                   }});
  // Planes larger than one workgroup's share on the GPU (vulkan_instance_norm.cpp: two passes over chunks of the
  // plane, the last one shorter).
  cases.push_back({"instance_norm large planes leaky (1, 2, 193, 181)", {1, 2, 193, 181}, [](Sequential& m) {
                     m.add(InstanceNorm(2, 1e-5f, Activation::leaky_relu(0.1f)));
                   }});
  cases.push_back({"conv + batchnorm + instance_norm leaky (3, 3, 9, 8)", {3, 3, 9, 8}, [](Sequential& m) {
                     Conv2d conv({.in_channels = 3, .out_channels = 4, .kernel = 3, .padding = 1});
                     m.add(std::move(conv));
                     m.add(BatchNorm(4));  // random scale and shift: planes of mean up to a few units
                     m.add(InstanceNorm(4, 1e-5f, Activation::leaky_relu(0.2f)));
                   }});
}

void add_conditional_instance_norm_cases(std::vector<LayerCase>& cases) {
  // randomize_parameters gives each norm random per-style gammas and betas and a random style mix.
  cases.push_back({"conditional_instance_norm 1 style (2, 3, 5, 7)", {2, 3, 5, 7}, [](Sequential& m) {
                     m.add(ConditionalInstanceNorm(3, 1));
                   }});
  cases.push_back({"conditional_instance_norm 4 styles relu (3, 5, 9, 6)", {3, 5, 9, 6}, [](Sequential& m) {
                     m.add(ConditionalInstanceNorm(5, 4, 1e-5f, Activation::relu()));
                   }});
  cases.push_back(
      {"conv + conditional_instance_norm 3 styles sigmoid (2, 4, 17, 13)", {2, 4, 17, 13}, [](Sequential& m) {
         m.add(Conv2d({.in_channels = 4, .out_channels = 6, .kernel = 3, .padding = 1}));
         m.add(ConditionalInstanceNorm(6, 3, 1e-3f, Activation::sigmoid()));
       }});
}

// Reflect and edge padded convolutions run as Pad + an unpadded convolution (corgy/model/padded_conv.h).
void add_padded_conv_cases(std::vector<LayerCase>& cases) {
  const std::vector<std::pair<Shape, Conv2dOptions>> shapes = {
      {{2, 3, 13, 11},
       {.in_channels = 3, .out_channels = 5, .kernel = 9, .padding = 4, .padding_mode = PadMode::reflect}},
      {{3, 4, 16, 15},
       {.in_channels = 4, .out_channels = 6, .kernel = 3, .stride = 2, .padding = 1, .padding_mode = PadMode::reflect}},
      {{1, 6, 9, 9},
       {.in_channels = 6,
        .out_channels = 6,
        .kernel = 3,
        .padding = 1,
        .padding_mode = PadMode::reflect,
        .groups = 3,
        .activation = Activation::relu()}},
      {{2, 2, 7, 8}, {.in_channels = 2, .out_channels = 3, .kernel = 5, .padding = 2, .padding_mode = PadMode::edge}},
  };
  for (const auto& [input, options] : shapes) {
    cases.push_back({Conv2d(options).describe() + " " + input.str(), input,
                     [options = options](Sequential& m) { m.add(Conv2d(options)); }});
  }
  // Two padded convolutions in a row with a max pool after: the temporaries share memory, and the pool must not
  // be fused with a reflect padded convolution.
  cases.push_back(
      {"conv reflect + conv reflect + maxpool (2, 3, 12, 10)", {2, 3, 12, 10}, [](Sequential& m) {
         m.add(Conv2d({.in_channels = 3,
                       .out_channels = 4,
                       .kernel = 3,
                       .padding = 1,
                       .padding_mode = PadMode::reflect,
                       .activation = Activation::relu()}));
         m.add(Conv2d(
             {.in_channels = 4, .out_channels = 5, .kernel = 3, .padding = 1, .padding_mode = PadMode::reflect}));
         m.add(MaxPool2d({.kernel = 2}));
       }});
}

void add_pad_cases(std::vector<LayerCase>& cases) {
  struct PadCase {
    Shape input;
    PadDesc desc;
  };
  const std::vector<PadCase> pads = {
      {{3, 2, 7, 9}, {.mode = PadMode::constant, .top = 1, .left = 1, .bottom = 1, .right = 1}},
      {{1, 3, 5, 6}, {.mode = PadMode::constant, .top = 0, .left = 2, .bottom = 3, .right = 0, .value = -1.5f}},
      {{3, 2, 7, 9}, {.mode = PadMode::reflect, .top = 1, .left = 1, .bottom = 1, .right = 1}},
      {{2, 3, 9, 5}, {.mode = PadMode::reflect, .top = 4, .left = 0, .bottom = 2, .right = 4}},
      {{3, 1, 6, 7}, {.mode = PadMode::edge, .top = 2, .left = 3, .bottom = 1, .right = 5}},
      {{1, 4, 1, 1}, {.mode = PadMode::edge, .top = 3, .left = 2, .bottom = 2, .right = 3}},
      {{2, 5, 11, 13}, {.mode = PadMode::reflect, .top = 4, .left = 4, .bottom = 4, .right = 4}},
  };
  for (const PadCase& p : pads) {
    cases.push_back(
        {Pad(p.desc).describe() + " " + p.input.str(), p.input, [desc = p.desc](Sequential& m) { m.add(Pad(desc)); }});
  }
}

// Transposed convolutions: stride 2 with output padding, asymmetric pads with groups and no bias, unequal strides and
// dilations with a rectangular kernel, stride 1 (as a "same" convolution); odd sizes, batch 3.
void add_conv_transpose_cases(std::vector<LayerCase>& cases) {
  struct Deconv {
    Shape input;
    ConvTranspose2dDesc desc;
    bool bias;
  };
  const std::vector<Deconv> deconvs = {
      {{3, 5, 4, 5},
       {.in_channels = 5,
        .out_channels = 6,
        .kernel_h = 3,
        .kernel_w = 3,
        .stride_h = 2,
        .stride_w = 2,
        .pad_top = 1,
        .pad_left = 1,
        .pad_bottom = 1,
        .pad_right = 1,
        .output_padding_h = 1,
        .output_padding_w = 1},
       true},
      {{1, 4, 5, 3},
       {.in_channels = 4,
        .out_channels = 6,
        .kernel_h = 4,
        .kernel_w = 4,
        .stride_h = 2,
        .stride_w = 2,
        .pad_top = 1,
        .pad_left = 0,
        .pad_bottom = 2,
        .pad_right = 1,
        .groups = 2},
       false},
      {{2, 6, 3, 4},
       {.in_channels = 6,
        .out_channels = 9,
        .kernel_h = 3,
        .kernel_w = 2,
        .stride_h = 3,
        .stride_w = 1,
        .output_padding_h = 2,
        .dilation_h = 2,
        .groups = 3},
       true},
      {{1, 3, 2, 3},
       {.in_channels = 3,
        .out_channels = 2,
        .kernel_h = 5,
        .kernel_w = 5,
        .pad_top = 2,
        .pad_left = 2,
        .pad_bottom = 2,
        .pad_right = 2},
       true},
  };
  for (const Deconv& d : deconvs) {
    cases.push_back({ConvTranspose2d(d.desc, d.bias).describe() + " " + d.input.str(), d.input,
                     [desc = d.desc, bias = d.bias](Sequential& m) { m.add(ConvTranspose2d(desc, bias)); }});
  }
}

// Resize: every mode, coordinate transformation and rounding, by scales (up, down, unequal) and by sizes.
void add_resize_cases(std::vector<LayerCase>& cases) {
  using enum ResizeMode;
  using enum ResizeCoordinates;
  using enum NearestRounding;
  const std::vector<std::pair<Shape, ResizeOptions>> resizes = {
      {{3, 2, 5, 7},
       {.mode = nearest, .coordinates = half_pixel, .rounding = round_prefer_ceil, .height = 8, .width = 4}},
      {{1, 3, 5, 6},
       {.mode = nearest, .coordinates = asymmetric, .rounding = floor, .scale_h = 1.5f, .scale_w = 0.75f}},
      {{2, 2, 4, 5},
       {.mode = nearest, .coordinates = align_corners, .rounding = round_prefer_floor, .height = 9, .width = 4}},
      {{1, 2, 3, 4},
       {.mode = nearest, .coordinates = tf_half_pixel_for_nn, .rounding = ceil, .scale_h = 2.5f, .scale_w = 2}},
      {{3, 2, 5, 6}, {.mode = linear, .coordinates = pytorch_half_pixel, .scale_h = 2, .scale_w = 2}},
      {{1, 3, 4, 5}, {.mode = linear, .coordinates = align_corners, .height = 7, .width = 3}},
      {{2, 1, 9, 4}, {.mode = linear, .coordinates = half_pixel, .scale_h = 0.6f, .scale_w = 1.7f}},
      {{2, 2, 4, 5}, {.mode = cubic, .coordinates = half_pixel, .scale_h = 2, .scale_w = 2}},
      {{1, 3, 5, 4},
       {.mode = cubic,
        .coordinates = align_corners,
        .cubic_a = -0.5f,
        .exclude_outside = true,
        .height = 8,
        .width = 3}},
      {{3, 1, 6, 5},
       {.mode = cubic, .coordinates = asymmetric, .exclude_outside = true, .scale_h = 1.3f, .scale_w = 0.8f}},
  };
  for (const auto& [input, options] : resizes) {
    cases.push_back({Resize(options).describe() + " " + input.str(), input,
                     [options = options](Sequential& m) { m.add(Resize(options)); }});
  }
}

void add_linear_cases(std::vector<LayerCase>& cases) {
  cases.push_back({"linear 30->7 (1, 30, 1, 1)", {1, 30, 1, 1}, [](Sequential& m) {
                     m.add(Linear({.in_features = 30, .out_features = 7}));
                   }});
  cases.push_back({"flatten + linear 96->10 relu (3, 6, 4, 4)", {3, 6, 4, 4}, [](Sequential& m) {
                     m.add(Flatten());
                     m.add(Linear({.in_features = 96, .out_features = 10, .activation = Activation::relu()}));
                   }});
  cases.push_back({"linear unflattened 3136->10 no bias (2, 64, 7, 7)", {2, 64, 7, 7}, [](Sequential& m) {
                     m.add(Linear({.in_features = 3136, .out_features = 10, .bias = false}));
                   }});
  // Either side of the Vulkan backend's switch from matrix-vector products to a tiled GEMM (batch 8).
  cases.push_back({"linear 1280->1000 sigmoid (8, 1280, 1, 1)", {8, 1280, 1, 1}, [](Sequential& m) {
                     m.add(Linear({.in_features = 1280, .out_features = 1000, .activation = Activation::sigmoid()}));
                   }});
  cases.push_back({"linear 45->33 (9, 45, 1, 1)", {9, 45, 1, 1}, [](Sequential& m) {
                     m.add(Linear({.in_features = 45, .out_features = 33}));
                   }});
  // Past it, the Vulkan backend plans a batch of rows as a 1x1 convolution of 1x1 images (split K included).
  cases.push_back({"linear unflattened 784->21 relu (12, 16, 7, 7)", {12, 16, 7, 7}, [](Sequential& m) {
                     m.add(Linear({.in_features = 784, .out_features = 21, .activation = Activation::relu()}));
                   }});
}

// Concat and Add take their inputs from convolutions of the model input, so they see distinct tensors.
void add_multi_input_cases(std::vector<LayerCase>& cases) {
  cases.push_back({"concat of 2 (3, 4, 9, 7)", {3, 4, 9, 7}, [](Sequential& m) {
                     const int a =
                         m.add(Conv2d({.in_channels = 4, .out_channels = 3, .kernel = 1}), {Sequential::model_input});
                     const int b = m.add(Conv2d({.in_channels = 4, .out_channels = 5, .kernel = 3, .padding = 1}),
                                         {Sequential::model_input});
                     m.add(Concat(), {a, b});
                   }});
  cases.push_back({"concat of 3 with the model input (1, 2, 6, 6)", {1, 2, 6, 6}, [](Sequential& m) {
                     const int a =
                         m.add(Conv2d({.in_channels = 2, .out_channels = 3, .kernel = 1}), {Sequential::model_input});
                     m.add(Concat(), {a, Sequential::model_input, a});
                   }});
  cases.push_back({"concat of 1 (route copy) (2, 3, 5, 5)", {2, 3, 5, 5}, [](Sequential& m) {
                     m.add(Concat(), {Sequential::model_input});
                   }});
  // A pointwise convolution of a per-channel affine and activation of a concatenation (DenseNet's BN-ReLU-Conv),
  // fused into a PreactivatedConv2d: the blas backend applies the affine while it packs the convolution's input.
  // Channel counts no multiple of 8 or 16, batch 3 and 8 (columns of one GEMM panel from two images), maps of 7x7
  // and 14x14, the model input among the concatenated tensors, one input without a concatenation, every kind of
  // activation on the affine, convolutions with and without bias and activation.
  cases.push_back(
      {"preactivated conv of a concat of 3, relu -> 1x1 relu (3, 5, 7, 9)", {3, 5, 7, 9}, [](Sequential& m) {
         const int a =
             m.add(Conv2d({.in_channels = 5, .out_channels = 6, .kernel = 3, .padding = 1}), {Sequential::model_input});
         const int b = m.add(Conv2d({.in_channels = 5, .out_channels = 3, .kernel = 1}), {Sequential::model_input});
         m.add(Concat(), {a, Sequential::model_input, b});
         m.add(ChannelAffine(14, Activation::relu()));
         m.add(Conv2d({.in_channels = 14, .out_channels = 13, .kernel = 1, .activation = Activation::relu()}));
       }});
  cases.push_back(
      {"preactivated conv, leaky affine -> 1x1 no bias (2, 19, 14, 14)", {2, 19, 14, 14}, [](Sequential& m) {
         m.add(ChannelAffine(19, Activation::leaky_relu(0.1f)));
         m.add(Conv2d({.in_channels = 19, .out_channels = 40, .kernel = 1, .bias = false}));
       }});
  cases.push_back(
      {"preactivated conv of a concat, batch 8 (8, 64, 7, 7)", {8, 64, 7, 7}, [](Sequential& m) {
         const int a = m.add(Conv2d({.in_channels = 64, .out_channels = 32, .kernel = 3, .padding = 1}),
                             {Sequential::model_input});
         m.add(Concat(), {Sequential::model_input, a});
         m.add(ChannelAffine(96, Activation::relu()));
         m.add(Conv2d({.in_channels = 96, .out_channels = 128, .kernel = 1, .activation = Activation::relu()}));
       }});
  // DenseNet's transitions: the average pool after such a convolution (pointwise, no activation) joins it, pooling
  // the normalised input first; odd sizes (the last row and column dropped), batch 3, a 3x3/2 window (overlapping),
  // a global pool, and a convolution with an activation (which must not take the pool).
  cases.push_back({"preactivated conv -> avgpool 2x2/2 (3, 6, 13, 11)", {3, 6, 13, 11}, [](Sequential& m) {
                     const int a =
                         m.add(Conv2d({.in_channels = 6, .out_channels = 5, .kernel = 1}), {Sequential::model_input});
                     m.add(Concat(), {Sequential::model_input, a});
                     m.add(ChannelAffine(11, Activation::relu()));
                     m.add(Conv2d({.in_channels = 11, .out_channels = 9, .kernel = 1}));
                     m.add(AvgPool2d({.kernel = 2}));
                   }});
  cases.push_back({"preactivated conv -> avgpool 3x3/2 (2, 17, 15, 14)", {2, 17, 15, 14}, [](Sequential& m) {
                     m.add(ChannelAffine(17, Activation::leaky_relu(0.1f)));
                     m.add(Conv2d({.in_channels = 17, .out_channels = 20, .kernel = 1, .bias = false}));
                     m.add(AvgPool2d({.kernel = 3, .stride = 2}));
                   }});
  cases.push_back({"preactivated conv -> global avgpool (2, 8, 7, 9)", {2, 8, 7, 9}, [](Sequential& m) {
                     m.add(ChannelAffine(8, Activation::swish()));
                     m.add(Conv2d({.in_channels = 8, .out_channels = 12, .kernel = 1}));
                     m.add(AvgPool2d::global());
                   }});
  cases.push_back({"preactivated conv relu -> avgpool 2x2/2 (1, 8, 10, 10)", {1, 8, 10, 10}, [](Sequential& m) {
                     m.add(ChannelAffine(8, Activation::relu()));
                     m.add(
                         Conv2d({.in_channels = 8, .out_channels = 6, .kernel = 1, .activation = Activation::relu()}));
                     m.add(AvgPool2d({.kernel = 2}));
                   }});
  for (const Activation activation :
       {Activation::none(), Activation::swish(), Activation::hard_swish(), Activation::clipped_relu(0.5f),
        Activation::sigmoid(), Activation::tanh(), Activation::mish(), Activation::gelu()}) {
    cases.push_back(
        {fmt::format("preactivated conv, {} affine (3, 17, 14, 13)", activation.str()),
         {3, 17, 14, 13},
         [activation](Sequential& m) {
           const int a = m.add(Conv2d({.in_channels = 17, .out_channels = 16, .kernel = 1}), {Sequential::model_input});
           m.add(Concat(), {Sequential::model_input, a});
           m.add(ChannelAffine(33, activation));
           m.add(Conv2d(
               {.in_channels = 33, .out_channels = 100, .kernel = 1, .activation = Activation::leaky_relu(0.2f)}));
         }});
  }
  // Channel copies: a slice (every other channel, a range at the end) and shuffles; convolutions after them so the
  // copies feed computed layers, as in ShuffleNet.
  cases.push_back({"channel slices (3, 9, 5, 7)", {3, 9, 5, 7}, [](Sequential& m) {
                     const int odd = m.add(ChannelSlice(1, 9, 2), {Sequential::model_input});
                     const int tail = m.add(ChannelSlice(6, 9), {Sequential::model_input});
                     m.add(Concat(), {odd, tail});
                     m.add(Conv2d({.in_channels = 7, .out_channels = 4, .kernel = 1}));
                   }});
  cases.push_back({"channel shuffle 3 groups (3, 12, 7, 5)", {3, 12, 7, 5}, [](Sequential& m) {
                     m.add(Conv2d({.in_channels = 12, .out_channels = 12, .kernel = 3, .padding = 1}));
                     m.add(ChannelShuffle(3));
                   }});
  cases.push_back({"channel shuffle 2 groups (1, 10, 4, 9)", {1, 10, 4, 9}, [](Sequential& m) {
                     m.add(ChannelShuffle(2), {Sequential::model_input});
                     m.add(Conv2d({.in_channels = 10, .out_channels = 3, .kernel = 1}));
                   }});
  // A pointwise convolution whose output only an add reads (ResNet's expansions): one GEMM over the batch's pixels
  // ("blas:batch", and "blas" where it measures faster) adds the residual in its epilogue, also in the tiles that
  // cross an image boundary or end the matrix.
  cases.push_back({"1x1 conv + add, relu (3, 40, 14, 13)", {3, 40, 14, 13}, [](Sequential& m) {
                     const int shortcut =
                         m.add(Conv2d({.in_channels = 40, .out_channels = 36, .kernel = 3, .padding = 1}),
                               {Sequential::model_input});
                     const int conv =
                         m.add(Conv2d({.in_channels = 40, .out_channels = 36, .kernel = 1}), {Sequential::model_input});
                     m.add(Add(Activation::relu()), {conv, shortcut});
                   }});
  cases.push_back({"1x1 conv + add (8, 64, 7, 7)", {8, 64, 7, 7}, [](Sequential& m) {
                     const int conv =
                         m.add(Conv2d({.in_channels = 64, .out_channels = 64, .kernel = 1}), {Sequential::model_input});
                     m.add(Add(), {conv, Sequential::model_input});
                   }});
  cases.push_back({"add (3, 4, 8, 6)", {3, 4, 8, 6}, [](Sequential& m) {
                     const int a = m.add(Conv2d({.in_channels = 4, .out_channels = 4, .kernel = 3, .padding = 1}),
                                         {Sequential::model_input});
                     m.add(Add(), {a, Sequential::model_input});
                   }});
  cases.push_back({"add leaky (1, 5, 7, 7)", {1, 5, 7, 7}, [](Sequential& m) {
                     const int a =
                         m.add(Conv2d({.in_channels = 5, .out_channels = 5, .kernel = 1}), {Sequential::model_input});
                     const int b = m.add(Conv2d({.in_channels = 5, .out_channels = 5, .kernel = 3, .padding = 1}),
                                         {Sequential::model_input});
                     m.add(Add(Activation::leaky_relu(0.1f)), {a, b});
                   }});
}

// Elementwise a op b: b of a's shape (a convolution of the input; a sigmoid for divide, so no quotient explodes),
// or one value per plane (a global average of a convolution, as a squeeze-and-excitation gate).
void add_elementwise_binary_cases(std::vector<LayerCase>& cases) {
  for (ElementwiseOp op :
       {ElementwiseOp::add, ElementwiseOp::subtract, ElementwiseOp::multiply, ElementwiseOp::divide}) {
    for (bool per_plane : {false, true}) {
      const Shape input = per_plane ? Shape{3, 5, 9, 7} : Shape{2, 4, 7, 11};
      const std::string name =
          fmt::format("elementwise {}{} {}", elementwise_op_name(op), per_plane ? " per plane" : "", input.str());
      cases.push_back({name, input, [op, per_plane, c = input.c](Sequential& m) {
                         int b = m.add(Conv2d({.in_channels = c, .out_channels = c, .kernel = 3, .padding = 1}),
                                       {Sequential::model_input});
                         if (op == ElementwiseOp::divide) b = m.add(Sigmoid());
                         if (per_plane) b = m.add(AvgPool2d::global());
                         m.add(Elementwise(op), {Sequential::model_input, b});
                       }});
    }
  }
}

// The model-level rewrites of corgy/model/fusion.h (Sequential applies them on every backend, the naive one
// included): a convolution with a residual add and the activation after it, for each algorithm of the blas backend
// (1x1 packed GEMM, 3x3 Winograd, strided, depthwise); x * sigmoid(x); squeeze-and-excitation blocks.
void add_fused_block_cases(std::vector<LayerCase>& cases) {
  const std::vector<std::pair<Shape, Conv2dOptions>> residual_convs = {
      {{3, 13, 9, 11}, {.in_channels = 13, .out_channels = 13, .kernel = 1, .activation = Activation::relu()}},
      {{2, 12, 13, 10},
       {.in_channels = 12, .out_channels = 12, .kernel = 3, .padding = 1, .activation = Activation::leaky_relu(0.1f)}},
      {{1, 9, 12, 12}, {.in_channels = 9, .out_channels = 9, .kernel = 3, .stride = 2, .padding = 1}},
      // ResNet's downsampling shortcut: a 1x1/2 convolution (pointwise on the subsampled input) + add.
      {{3, 12, 11, 9},
       {.in_channels = 12, .out_channels = 12, .kernel = 1, .stride = 2, .activation = Activation::relu()}},
      {{3, 7, 8, 5},
       {.in_channels = 7,
        .out_channels = 7,
        .kernel = 3,
        .padding = 1,
        .groups = 7,
        .activation = Activation::swish()}},
      // Small maps, where the residual is added in the channels-in-lanes GEMM's write-out: 7x7 pixel runs across
      // images (batch 3), 5x5 by implicit im2col, ResNet-50's 3x3/2 onto 7x7, 13x13.
      {{3, 21, 7, 7}, {.in_channels = 21, .out_channels = 21, .kernel = 1, .activation = Activation::relu()}},
      {{1, 18, 5, 5},
       {.in_channels = 18, .out_channels = 18, .kernel = 3, .padding = 1, .activation = Activation::hard_swish()}},
      {{3, 10, 14, 14}, {.in_channels = 10, .out_channels = 10, .kernel = 3, .stride = 2, .padding = 1}},
      {{2, 19, 13, 13}, {.in_channels = 19, .out_channels = 19, .kernel = 1, .activation = Activation::sigmoid()}},
      // One panel of output channels, large enough for two threads: the channels-in-lanes GEMM splits the pixels,
      // each member adding the residual to its own rows (taps path) and pixel panels (pointwise path).
      {{3, 40, 7, 7},
       {.in_channels = 40, .out_channels = 40, .kernel = 3, .padding = 1, .activation = Activation::relu()}},
      {{3, 48, 10, 10}, {.in_channels = 48, .out_channels = 48, .kernel = 1, .activation = Activation::relu6()}},
  };
  for (const auto& [input, options] : residual_convs) {
    cases.push_back(
        {"residual " + Conv2d(options).describe() + " " + input.str(), input, [options = options](Sequential& m) {
           Conv2dOptions conv = options;
           conv.activation = Activation::none();
           // The residual: the model input, or a pooled copy of it when the convolution is strided.
           int residual = Sequential::model_input;
           if (conv.stride > 1) residual = m.add(MaxPool2d({.kernel = 3, .stride = 2, .padding = 1}));
           const int c = m.add(Conv2d(conv), {Sequential::model_input});
           m.add(Add(options.activation), {c, residual});
         }});
  }
  cases.push_back({"conv x * sigmoid(x) (2, 5, 11, 7)", {2, 5, 11, 7}, [](Sequential& m) {
                     const int x = m.add(Conv2d({.in_channels = 5, .out_channels = 6, .kernel = 3, .padding = 1}));
                     const int gate = m.add(Sigmoid());
                     m.add(Elementwise(ElementwiseOp::multiply), {gate, x});
                   }});
  const std::vector<std::tuple<Shape, int, Activation, Activation>> blocks = {
      {{3, 13, 7, 9}, 5, Activation::relu(), Activation::clipped_relu(1.0f)},
      {{2, 24, 5, 5}, 6, Activation::swish(), Activation::sigmoid()},
      {{1, 40, 1, 1}, 10, Activation::relu(), Activation::sigmoid()},
      // 112 x 112 planes (EfficientNet's first block; the pool's widest split); more squeeze channels than the
      // Vulkan gates kernel holds (its two products then run as 1x1 convolutions).
      {{2, 4, 112, 112}, 2, Activation::swish(), Activation::sigmoid()},
      {{1, 12, 3, 2}, 1030, Activation::relu(), Activation::sigmoid()},
  };
  for (const auto& [input, squeeze, reduce_activation, gate] : blocks) {
    cases.push_back(
        {fmt::format("squeeze_excite {} -> {} ({}, {}) {}", input.c, squeeze, reduce_activation.str(), gate.str(),
                     input.str()),
         input, [c = input.c, squeeze = squeeze, reduce_activation = reduce_activation, gate = gate](Sequential& m) {
           m.add(AvgPool2d::global());
           m.add(Conv2d({.in_channels = c, .out_channels = squeeze, .kernel = 1, .activation = reduce_activation}));
           m.add(Conv2d({.in_channels = squeeze, .out_channels = c, .kernel = 1, .activation = gate}));
           m.add(Elementwise(ElementwiseOp::multiply), {Sequential::model_input, 2});
         }});
  }
}

// A squeeze-and-excitation block and the projection after it (corgy/model/fusion.h rule 9), as MobileNetV3 and
// EfficientNet have them: "blas" (and the forced algorithms but im2col) applies the gates while it packs the
// projection's input. Channel counts no multiple of 8 or 16, batch 3 and 8 (a GEMM panel's columns from two images,
// each with its own gates), with and without the residual add, every activation the projection can carry (its own,
// or the add's after the residual).
void add_squeeze_excite_conv_cases(std::vector<LayerCase>& cases) {
  // The block's input: an expansion of the model input (N, out, H, W) to `channels`, as the block's depthwise
  // convolution would give it.
  const auto block = [](int out, int channels, int squeeze, Activation activation, bool residual) {
    return [=](Sequential& m) {
      const int x =
          m.add(Conv2d({.in_channels = out, .out_channels = channels, .kernel = 1, .activation = Activation::relu()}),
                {Sequential::model_input});
      m.add(AvgPool2d::global());
      m.add(Conv2d({.in_channels = channels, .out_channels = squeeze, .kernel = 1, .activation = Activation::relu()}));
      const int gates = m.add(
          Conv2d({.in_channels = squeeze, .out_channels = channels, .kernel = 1, .activation = Activation::sigmoid()}));
      const int excited = m.add(Elementwise(ElementwiseOp::multiply), {x, gates});
      if (!residual) {
        m.add(Conv2d({.in_channels = channels, .out_channels = out, .kernel = 1, .activation = activation}), {excited});
        return;
      }
      const int projection = m.add(Conv2d({.in_channels = channels, .out_channels = out, .kernel = 1}), {excited});
      m.add(Add(activation), {projection, Sequential::model_input});
    };
  };
  for (const Activation activation :
       {Activation::none(), Activation::relu(), Activation::leaky_relu(0.1f), Activation::relu6(),
        Activation::sigmoid(), Activation::tanh(), Activation::mish(), Activation::swish(), Activation::hard_swish(),
        Activation::gelu()}) {
    for (const bool residual : {false, true}) {
      cases.push_back(
          {fmt::format("squeeze_excite -> 1x1 conv{}, {} (3, 13, 7, 9)", residual ? " + add" : "", activation.str()),
           {3, 13, 7, 9},
           block(13, 37, 5, activation, residual)});
    }
  }
  cases.push_back(
      {"squeeze_excite -> 1x1 conv + add (8, 24, 7, 7)", {8, 24, 7, 7}, block(24, 72, 18, Activation::none(), true)});
  cases.push_back(
      {"squeeze_excite -> 1x1 conv (1, 17, 14, 13)", {1, 17, 14, 13}, block(17, 40, 10, Activation::none(), false)});
  cases.push_back(
      {"squeeze_excite -> 1x1 conv, 1x1 map (3, 20, 1, 1)", {3, 20, 1, 1}, block(20, 9, 3, Activation::relu(), false)});
}

// MobileNetV2's inverted residual blocks (corgy/model/fusion.h rule 6): odd sizes, stride 2, a 5x5 depthwise kernel,
// with and without the residual, and without the projection; "blas:bands" runs them in bands of two rows (every kind
// of band edge), "blas" as its tuner finds faster.
void add_inverted_residual_cases(std::vector<LayerCase>& cases) {
  struct Block {
    Shape input;
    int expanded, kernel, stride, out;  // expanded 0: no expansion; out 0: no projection
    Activation activation;
    bool residual;
  };
  const std::vector<Block> blocks = {
      {{2, 8, 11, 13}, 48, 3, 1, 12, Activation::relu6(), false},
      {{1, 12, 13, 10}, 72, 3, 2, 16, Activation::relu6(), false},
      {{2, 12, 9, 12}, 72, 3, 1, 12, Activation::relu6(), true},
      {{1, 10, 12, 9}, 30, 5, 1, 10, Activation::hard_swish(), true},
      {{1, 10, 15, 14}, 36, 5, 2, 14, Activation::swish(), false},
      {{3, 8, 9, 11}, 48, 3, 1, 8, Activation::relu(), true},
      // Outputs 12 and more wide at stride 2: the depthwise plane kernel's direct blocks, in bands of rows (each
      // band's own rows of zeros above and below), register columns inside and at both ends of the row.
      {{1, 8, 9, 26}, 24, 3, 2, 8, Activation::relu6(), false},
      {{2, 6, 11, 31}, 20, 5, 2, 6, Activation::hard_swish(), false},
      // Without the projection (its squeeze-and-excitation reads the depthwise output): the block's first half.
      {{1, 8, 14, 15}, 48, 3, 2, 0, Activation::swish(), false},
      {{2, 12, 10, 9}, 36, 5, 1, 0, Activation::hard_swish(), false},
      // Images of at most two output rows: "blas:bands" runs them in bands of whole images, whose depthwise
      // convolution runs by channel blocks (channels not a multiple of the register's 16, batch 3, stride 2).
      {{3, 8, 4, 9}, 40, 3, 2, 12, Activation::relu6(), false},
      {{3, 12, 2, 7}, 20, 5, 1, 12, Activation::hard_swish(), true},
      {{2, 8, 3, 5}, 24, 3, 2, 0, Activation::swish(), false},
      // Without the expansion (MobileNetV2's and V3's first blocks): the depthwise convolution reads the input rows
      // in place; channels not a multiple of 16, batch 3, stride 2, a residual, bands of whole images.
      {{1, 32, 14, 13}, 0, 3, 1, 16, Activation::relu6(), false},
      {{3, 12, 11, 9}, 0, 3, 2, 20, Activation::hard_swish(), false},
      {{2, 16, 12, 10}, 0, 3, 1, 16, Activation::relu(), true},
      {{1, 24, 9, 12}, 0, 5, 2, 8, Activation::swish(), false},
      {{3, 20, 2, 7}, 0, 3, 1, 20, Activation::relu6(), true},
  };
  for (const Block& b : blocks) {
    cases.push_back(
        {fmt::format("inverted residual {} -> {} dw {}x{}/{} -> {}{} {}", b.input.c, b.expanded, b.kernel, b.kernel,
                     b.stride, b.out, b.residual ? " + add" : "", b.input.str()),
         b.input, [b](Sequential& m) {
           const int expanded = b.expanded > 0 ? b.expanded : b.input.c;
           if (b.expanded > 0) {
             m.add(
                 Conv2d({.in_channels = b.input.c, .out_channels = expanded, .kernel = 1, .activation = b.activation}),
                 {Sequential::model_input});
           }
           m.add(Conv2d({.in_channels = expanded,
                         .out_channels = expanded,
                         .kernel = b.kernel,
                         .stride = b.stride,
                         .padding = b.kernel / 2,
                         .groups = expanded,
                         .activation = b.activation}));
           if (b.out == 0) {
             // A second reader of the depthwise output, as a squeeze-and-excitation would be.
             const int depthwise = m.size() - 1;
             m.add(AvgPool2d::global());
             m.add(Elementwise(ElementwiseOp::multiply), {depthwise, m.size() - 1});
             return;
           }
           const int project = m.add(Conv2d({.in_channels = expanded, .out_channels = b.out, .kernel = 1}));
           if (b.residual) m.add(Add(), {project, Sequential::model_input});
         }});
  }
}

// MobileNetV3's and EfficientNet's blocks: expansion, depthwise convolution, squeeze-and-excitation, projection (and
// the residual add), which fusion rules 6, 9 and 13 make one InvertedResidual. Channel counts no multiple of 16 or of
// a GEMM panel, strides 1 and 2, 3x3 and 5x5, batch 1 (the blas backend then splits an image among its members)
// and 2 and 3.
void add_excited_inverted_residual_cases(std::vector<LayerCase>& cases) {
  struct Block {
    Shape input;
    int expanded, kernel, stride, out, squeeze;
    Activation activation;
    bool residual;
  };
  const std::vector<Block> blocks = {
      {{2, 16, 14, 14}, 96, 3, 1, 16, 4, Activation::swish(), true},
      {{1, 24, 7, 7}, 144, 5, 1, 24, 6, Activation::hard_swish(), true},
      {{3, 12, 13, 11}, 40, 5, 2, 20, 10, Activation::relu(), false},
      {{1, 10, 15, 12}, 100, 3, 2, 24, 8, Activation::swish(), false},
      {{2, 20, 9, 9}, 120, 3, 1, 20, 5, Activation::relu6(), true},
  };
  for (const Block& b : blocks) {
    cases.push_back(
        {fmt::format("inverted residual {} -> {} dw {}x{}/{} squeeze_excite {} -> {}{} {}", b.input.c, b.expanded,
                     b.kernel, b.kernel, b.stride, b.squeeze, b.out, b.residual ? " + add" : "", b.input.str()),
         b.input, [b](Sequential& m) {
           m.add(
               Conv2d({.in_channels = b.input.c, .out_channels = b.expanded, .kernel = 1, .activation = b.activation}),
               {Sequential::model_input});
           const int depthwise = m.add(Conv2d({.in_channels = b.expanded,
                                               .out_channels = b.expanded,
                                               .kernel = b.kernel,
                                               .stride = b.stride,
                                               .padding = b.kernel / 2,
                                               .groups = b.expanded,
                                               .activation = b.activation}));
           m.add(AvgPool2d::global());
           m.add(
               Conv2d({.in_channels = b.expanded, .out_channels = b.squeeze, .kernel = 1, .activation = b.activation}));
           const int gates = m.add(Conv2d({.in_channels = b.squeeze,
                                           .out_channels = b.expanded,
                                           .kernel = 1,
                                           .activation = Activation::sigmoid()}));
           const int excited = m.add(Elementwise(ElementwiseOp::multiply), {depthwise, gates});
           const int project =
               m.add(Conv2d({.in_channels = b.expanded, .out_channels = b.out, .kernel = 1}), {excited});
           if (b.residual) m.add(Add(), {project, Sequential::model_input});
         }});
  }
}

// Convolutions whose window differs between height and width (Conv2dDesc::general: Inception's 1x7 and 7x1, strides
// and dilations per axis, four pads): every backend's general path (im2col + GEMM), also inside the fused layers
// that take any window (an activation, a residual add, a max pool) and next to the patterns that must stay unfused
// (an inverted residual whose depthwise window is 3x1).
void add_general_window_conv_cases(std::vector<LayerCase>& cases) {
  struct WindowShape {
    Shape input;
    int in_channels;
    int out_channels;
    Conv2dWindow window;
    int groups = 1;
    Activation activation{};
  };
  const auto window = [](int kernel_h, int kernel_w, std::array<int, 2> stride, std::array<int, 2> dilation,
                         std::array<int, 4> pads) {
    return Conv2dWindow{kernel_h,    kernel_w, stride[0], stride[1], dilation[0],
                        dilation[1], pads[0],  pads[1],   pads[2],   pads[3]};
  };
  const std::vector<WindowShape> shapes = {
      {{3, 5, 11, 13}, 5, 7, window(1, 7, {1, 1}, {1, 1}, {0, 3, 0, 3}), 1, Activation::relu()},
      {{1, 7, 9, 8}, 7, 6, window(7, 1, {1, 1}, {1, 1}, {3, 0, 3, 0})},
      {{2, 3, 13, 10}, 3, 5, window(3, 1, {2, 1}, {1, 1}, {1, 0, 1, 0}), 1, Activation::leaky_relu(0.1f)},
      {{1, 4, 12, 11}, 4, 6, window(3, 3, {1, 1}, {2, 1}, {2, 1, 2, 1})},
      {{3, 5, 9, 14}, 5, 3, window(1, 3, {1, 2}, {1, 1}, {1, 0, 0, 2})},
      {{2, 6, 10, 10}, 6, 4, window(3, 3, {2, 2}, {1, 1}, {0, 0, 1, 1})},
      {{1, 6, 8, 9}, 6, 9, window(1, 5, {1, 1}, {1, 1}, {0, 2, 0, 2}), 3},
      {{2, 7, 6, 10}, 7, 7, window(1, 3, {1, 1}, {1, 1}, {0, 1, 0, 1}), 7, Activation::swish()},
      {{1, 33, 17, 17}, 33, 19, window(7, 1, {1, 1}, {1, 1}, {3, 0, 3, 0}), 1, Activation::relu()},
      {{3, 64, 14, 13}, 64, 48, window(1, 7, {1, 1}, {1, 1}, {0, 3, 0, 3})},
      {{1, 3, 15, 12}, 3, 8, window(5, 3, {2, 3}, {1, 2}, {2, 0, 1, 3})},
      // At stride 1 the padded rows share their horizontal padding (conv_gemm.cpp's PaddedRowsLayout): padding
      // wider on the right, wider on the left with dilation, padding past the window's halo (each row still as wide
      // as the output), and wider still (not shared).
      {{2, 6, 7, 11}, 6, 5, window(1, 5, {1, 1}, {1, 1}, {0, 1, 0, 3})},
      {{1, 5, 6, 9}, 5, 4, window(3, 5, {1, 1}, {1, 2}, {1, 4, 1, 2}), 1, Activation::relu()},
      {{1, 4, 5, 6}, 4, 3, window(1, 3, {1, 1}, {1, 1}, {0, 3, 0, 2})},
      {{3, 4, 5, 6}, 4, 3, window(1, 3, {1, 1}, {1, 1}, {0, 4, 0, 4})},
      // Weights above L2's share (0.5 MB) on images too small for a band per thread: the blas backend splits them
      // over output channels (conv_padded_rows_by_channels), here in uneven shares of the panels (150 channels),
      // and at stride 2 from phase planes.
      {{1, 192, 9, 8}, 192, 160, window(1, 7, {1, 1}, {1, 1}, {0, 3, 0, 3}), 1, Activation::relu()},
      {{1, 160, 8, 9}, 160, 150, window(7, 1, {1, 1}, {1, 1}, {3, 0, 3, 0})},
      {{1, 256, 10, 9}, 256, 64, window(3, 3, {2, 2}, {1, 1}, {1, 1, 1, 1}), 1, Activation::leaky_relu(0.1f)},
  };
  for (const WindowShape& s : shapes) {
    const Conv2dOptions options{.in_channels = s.in_channels,
                                .out_channels = s.out_channels,
                                .window = s.window,
                                .groups = s.groups,
                                .activation = s.activation};
    cases.push_back({Conv2d(options).describe() + " " + s.input.str(), s.input,
                     [options](Sequential& model) { model.add(Conv2d(options)); }});
  }
  const Conv2dOptions seven_by_one{
      .in_channels = 6, .out_channels = 6, .window = window(7, 1, {1, 1}, {1, 1}, {3, 0, 3, 0})};
  cases.push_back({"general conv 7x1 + relu layer (2, 6, 9, 7)", {2, 6, 9, 7}, [seven_by_one](Sequential& m) {
                     m.add(Conv2d(seven_by_one));
                     m.add(ReLU());
                   }});
  cases.push_back({"general conv 7x1 + residual add (3, 6, 9, 7)", {3, 6, 9, 7}, [seven_by_one](Sequential& m) {
                     const int c = m.add(Conv2d(seven_by_one), {Sequential::model_input});
                     m.add(Add(Activation::relu()), {c, Sequential::model_input});
                   }});
  cases.push_back({"general conv 1x7 + maxpool 3/2 (2, 5, 13, 12)", {2, 5, 13, 12}, [window](Sequential& m) {
                     m.add(Conv2d({.in_channels = 5,
                                   .out_channels = 8,
                                   .window = window(1, 7, {1, 2}, {1, 1}, {0, 3, 0, 3}),
                                   .activation = Activation::relu()}));
                     m.add(MaxPool2d({.kernel = 3, .stride = 2}));
                   }});
  cases.push_back(
      {"expand 1x1, depthwise 3x1, project 1x1 (2, 4, 9, 8)", {2, 4, 9, 8}, [window](Sequential& m) {
         m.add(Conv2d({.in_channels = 4, .out_channels = 12, .kernel = 1, .activation = Activation::relu6()}));
         m.add(Conv2d({.in_channels = 12,
                       .out_channels = 12,
                       .window = window(3, 1, {2, 1}, {1, 1}, {1, 0, 1, 0}),
                       .groups = 12,
                       .activation = Activation::relu6()}));
         m.add(Conv2d({.in_channels = 12, .out_channels = 5, .kernel = 1}));
       }});
}

// Arithmetic on tensors of any rank (corgy/tensor_math.h): tensors of rank 3, 5 and 6 stored folded in the model's
// 4-D input, broadcasting on either side and on both, constants on either side, reductions and softmax on the
// first, a middle and the last axis, batched products with a broadcast batch, and a constant matrix on the last axis.
void add_tensor_math_cases(std::vector<LayerCase>& cases) {
  const auto values = [](std::size_t count, float low, float high) {
    std::mt19937 rng(static_cast<unsigned>(count));
    std::uniform_real_distribution<float> value(low, high);
    std::vector<float> v(count);
    for (float& x : v) x = value(rng);
    return v;
  };
  const TensorDims r5{2, 3, 4, 5, 6};     // stored as (2, 12, 5, 6)
  const TensorDims r6{2, 2, 3, 2, 3, 5};  // stored as (2, 12, 3, 5)
  const TensorDims r3{3, 7, 11};          // stored as (3, 7, 1, 11)
  // Two activations broadcast against each other: x minus its mean over an axis (LayerNorm's centring), and two
  // reductions of x over different axes, each broadcast along the other's.
  cases.push_back(
      {"broadcast subtract rank 5 (2, 3, 4, 5, 6) - (2, 3, 4, 5, 1)", r5.folded(), [r5](Sequential& m) {
         const int mean = m.add(ReduceAxis(ReduceOp::mean, r5, 4, 4, true));
         m.add(BroadcastBinary(BinaryOp::subtract, r5, TensorDims{2, 3, 4, 5, 1}), {Sequential::model_input, mean});
       }});
  cases.push_back({"broadcast both sides rank 5 (2, 3, 4, 1, 6) / (2, 3, 1, 5, 6)", r5.folded(), [r5](Sequential& m) {
                     const TensorDims a{2, 3, 4, 1, 6}, b{2, 3, 1, 5, 6};
                     const int left = m.add(ReduceAxis(ReduceOp::max, r5, 3, 3, true), {Sequential::model_input});
                     const int right = m.add(ReduceAxis(ReduceOp::sum, r5, 2, 2, true), {Sequential::model_input});
                     m.add(BroadcastBinary(BinaryOp::maximum, a, b), {left, right});
                   }});
  cases.push_back(
      {"broadcast both sides rank 6 (2, 1, 3, 2, 3, 5) - (2, 2, 3, 1, 3, 1)", r6.folded(), [r6](Sequential& m) {
         const TensorDims a{2, 1, 3, 2, 3, 5}, b{2, 2, 3, 1, 3, 1};
         const int left = m.add(ReduceAxis(ReduceOp::min, r6, 1, 1, true), {Sequential::model_input});
         const int mid = m.add(ReduceAxis(ReduceOp::mean, r6, 5, 5, true), {Sequential::model_input});
         const int right = m.add(ReduceAxis(ReduceOp::mean, TensorDims{2, 2, 3, 2, 3, 1}, 3, 3, true), {mid});
         m.add(BroadcastBinary(BinaryOp::subtract, a, b), {left, right});
       }});
  struct ConstantCase {
    BinaryOp op;
    TensorDims x, constant;
    bool constant_first;
  };
  for (const ConstantCase& c : std::vector<ConstantCase>{
           {BinaryOp::add, r3, {11}, false},
           {BinaryOp::subtract, r3, {7, 1}, true},
           {BinaryOp::multiply, r5, {1, 3, 1, 5, 1}, false},
           {BinaryOp::divide, r5, {4, 1, 6}, true},
           {BinaryOp::minimum, r6, {3, 1, 3, 1}, false},
           {BinaryOp::maximum, {2, 4, 6, 8}, {1}, true},
       }) {
    cases.push_back({fmt::format("broadcast {} {} {} constant {}", binary_op_name(c.op), c.x.str(),
                                 c.constant_first ? "after" : "before", c.constant.str()),
                     c.x.folded(), [c, values](Sequential& m) {
                       // Divisors away from 0.
                       const float low = c.op == BinaryOp::divide ? 0.5f : -2.0f;
                       m.add(BroadcastBinary::with_constant(c.op, c.x, c.constant,
                                                            values(c.constant.count(), low, 2.0f), c.constant_first));
                     }});
  }
  // pow of |x| by exponents that broadcast (a negative base has no real power for most exponents).
  cases.push_back({"broadcast power |x| ^ constant (3, 7, 11) ^ (7, 1)", r3.folded(), [r3, values](Sequential& m) {
                     m.add(Unary(UnaryOp::abs));
                     m.add(BroadcastBinary::with_constant(BinaryOp::power, r3, {7, 1}, values(7, 0.5f, 3.0f), false));
                   }});
  for (UnaryOp op : {UnaryOp::erf, UnaryOp::exp, UnaryOp::neg, UnaryOp::abs, UnaryOp::floor, UnaryOp::ceil,
                     UnaryOp::square, UnaryOp::gelu, UnaryOp::gelu_tanh}) {
    cases.push_back({fmt::format("unary {} (3, 7, 1, 11)", unary_op_name(op)), r3.folded(),
                     [op](Sequential& m) { m.add(Unary(op)); }});
  }
  // The functions of positive values, of exp(x).
  for (UnaryOp op : {UnaryOp::sqrt, UnaryOp::log, UnaryOp::reciprocal}) {
    cases.push_back({fmt::format("unary {} of exp (2, 12, 5, 6)", unary_op_name(op)), r5.folded(), [op](Sequential& m) {
                       m.add(Unary(UnaryOp::exp));
                       m.add(Unary(op));
                     }});
  }
  struct ReduceCase {
    ReduceOp op;
    TensorDims dims;
    int first, last;
    bool keep;
  };
  for (const ReduceCase& c : std::vector<ReduceCase>{
           {ReduceOp::mean, r5, 1, 1, true},
           {ReduceOp::sum, r5, 2, 3, false},
           {ReduceOp::max, r5, 4, 4, false},
           {ReduceOp::min, r6, 3, 3, true},
           {ReduceOp::mean, r6, 1, 5, false},
           {ReduceOp::sum, r3, 2, 2, true},
           {ReduceOp::max, r3, 1, 1, false},
       }) {
    cases.push_back({fmt::format("reduce {} {} axes {}..{}{}", reduce_op_name(c.op), c.dims.str(), c.first, c.last,
                                 c.keep ? " keepdims" : ""),
                     c.dims.folded(),
                     [c](Sequential& m) { m.add(ReduceAxis(c.op, c.dims, c.first, c.last, c.keep)); }});
  }
  for (const auto& [dims, axis, log] : std::vector<std::tuple<TensorDims, int, bool>>{
           {r5, 1, false}, {r5, 2, false}, {r5, 4, true}, {r3, 2, false}, {r6, 3, true}, {{2, 16, 4, 9}, 1, false}}) {
    cases.push_back({fmt::format("{} {} axis {}", log ? "log_softmax" : "softmax", dims.str(), axis), dims.folded(),
                     [dims = dims, axis = axis, log = log](Sequential& m) { m.add(SoftmaxAxis(dims, axis, log)); }});
  }
  // LayerNorm over the last axis, the channels (inner H * W) and a middle axis of a rank-5 tensor; lines longer than
  // a Vulkan workgroup (600 > 256 threads), and inner extents that leave the last workgroup of 32, 16 or 8 neighbouring
  // lines part empty (4200, 2100, 49 and 6 lines; kernels/layer_norm.comp).
  for (const auto& [dims, axis] : std::vector<std::pair<TensorDims, int>>{{r3, 2},
                                                                          {{2, 8, 5, 6}, 1},
                                                                          {r5, 2},
                                                                          {{1, 5, 5, 48}, 3},
                                                                          {{3, 600}, 1},
                                                                          {{1, 3, 70, 60}, 1},
                                                                          {{1, 2, 42, 50}, 1},
                                                                          {{2, 40, 7, 7}, 1},
                                                                          {{1, 300, 2, 3}, 1}}) {
    cases.push_back({fmt::format("layer_norm {} axis {}", dims.str(), axis), dims.folded(),
                     [dims = dims, axis = axis, values](Sequential& m) {
                       LayerNorm norm(dims, axis, 1e-5f);
                       const auto length = static_cast<std::size_t>(dims[axis]);
                       std::vector<float> shift = values(length + 1, -0.5f, 0.5f);  // another seed than the scale's
                       shift.pop_back();
                       norm.set_parameters(values(length, 0.5f, 1.5f), shift);
                       m.add(std::move(norm));
                     }});
  }
  // x @ x of square matrices with the batch axis 1 broadcast on one side, and rectangular products of rank 5.
  cases.push_back({"batched matmul (2, 3, 4, 4) x (2, 1, 4, 4)", {2, 3, 4, 4}, [](Sequential& m) {
                     const int b = m.add(ReduceAxis(ReduceOp::mean, {2, 3, 4, 4}, 1, 1, true));
                     m.add(BatchedMatmul({2, 3, 4, 4}, {2, 1, 4, 4}), {Sequential::model_input, b});
                   }});
  cases.push_back({"batched matmul rank 5 (2, 2, 3, 6, 6) x (2, 2, 3, 6, 4)", TensorDims{2, 2, 3, 6, 4}.folded(),
                   [values](Sequential& m) {
                     TensorLinear projection({2, 2, 3, 6, 4}, {.in_features = 4, .out_features = 6, .bias = false});
                     projection.linear().set_weights(values(24, -1.0f, 1.0f));
                     const int a = m.add(std::move(projection));
                     m.add(BatchedMatmul({2, 2, 3, 6, 6}, {2, 2, 3, 6, 4}), {a, Sequential::model_input});
                   }});
  for (const auto& [dims, out] : std::vector<std::pair<TensorDims, int>>{{r3, 9}, {r5, 10}, {{1, 5, 5, 48}, 96}}) {
    cases.push_back({fmt::format("tensor linear {} -> {}", dims.str(), out), dims.folded(),
                     [dims = dims, out = out, values](Sequential& m) {
                       const int in = dims[dims.rank - 1];
                       TensorLinear linear(dims,
                                           {.in_features = in, .out_features = out, .activation = Activation::relu()});
                       linear.linear().set_weights(values(static_cast<std::size_t>(in * out), -0.5f, 0.5f));
                       linear.linear().set_bias(values(static_cast<std::size_t>(out), -0.5f, 0.5f));
                       m.add(std::move(linear));
                     }});
  }
}

// Data movement of tensors of rank 1 to 6 (Backend::copy_strided): transposes, slices with steps (reversed too),
// concatenations along any axis, broadcasts and reshapes, at ranks 3 to 6; the model input is each tensor's fold
// (TensorDims::folded). Some feed a convolution or come from one, so that the copies read and write intermediates;
// the large ones run long runs and many runs on the blas backend's team.
void add_tensor_movement_cases(std::vector<LayerCase>& cases) {
  const auto folded = [](std::initializer_list<int> dims) { return TensorDims(dims).folded(); };
  cases.push_back(
      {"transpose (0, 2, 3, 1) to NHWC and back around a conv (2, 6, 5, 7)", {2, 6, 5, 7}, [](Sequential& m) {
         m.add(Transpose({2, 6, 5, 7}, {0, 2, 3, 1}));
         m.add(Transpose({2, 5, 7, 6}, {0, 3, 1, 2}));
         m.add(Conv2d({.in_channels = 6, .out_channels = 4, .kernel = 3, .padding = 1}));
         m.add(Transpose({2, 4, 5, 7}, {0, 3, 2, 1}));
       }});
  cases.push_back({"transpose (0, 2, 1) of (3, 6, 11)", folded({3, 6, 11}), [](Sequential& m) {
                     m.add(Transpose({3, 6, 11}, {0, 2, 1}));
                   }});
  cases.push_back({"transpose (0, 3, 1, 4, 2) of (2, 3, 4, 5, 6)", folded({2, 3, 4, 5, 6}), [](Sequential& m) {
                     m.add(Transpose({2, 3, 4, 5, 6}, {0, 3, 1, 4, 2}));
                   }});
  cases.push_back({"transpose (0, 5, 3, 1, 4, 2) of (2, 2, 3, 2, 4, 3)", folded({2, 2, 3, 2, 4, 3}), [](Sequential& m) {
                     m.add(Transpose({2, 2, 3, 2, 4, 3}, {0, 5, 3, 1, 4, 2}));
                   }});
  cases.push_back({"transpose (0, 2, 3, 1) of (1, 64, 56, 56)", {1, 64, 56, 56}, [](Sequential& m) {
                     m.add(Transpose({1, 64, 56, 56}, {0, 2, 3, 1}));
                   }});
  // Blocks of runs that start inside the outer axes and carry from one image to the next.
  cases.push_back({"transpose (0, 3, 1, 2) of (2, 40, 30, 24)", {2, 40, 30, 24}, [](Sequential& m) {
                     m.add(Transpose({2, 40, 30, 24}, {0, 3, 1, 2}));
                   }});
  // YOLOv8's DFL: (N, 64, A) viewed as (N, 4, 16, A), the 16 bins moved to the channels.
  cases.push_back(
      {"reshape (2, 64, 9) to (2, 4, 16, 9), transpose (0, 2, 1, 3)", folded({2, 64, 9}), [](Sequential& m) {
         m.add(Reshape({2, 64, 9}, {2, 4, 16, 9}));
         m.add(Transpose({2, 4, 16, 9}, {0, 2, 1, 3}));
       }});
  cases.push_back({"tensor_slice of (2, 6, 11) axis 2 [1, 11) step 3, axis 1 [4, -1) step -2", folded({2, 6, 11}),
                   [](Sequential& m) {
                     m.add(TensorSlice({2, 6, 11}, {{.axis = 2, .start = 1, .stop = 11, .step = 3},
                                                    {.axis = 1, .start = 4, .stop = -1, .step = -2}}));
                   }});
  cases.push_back(
      {"tensor_slice of (3, 4, 5, 6, 7) reversed axis 4, axis 2 [1, 4)", folded({3, 4, 5, 6, 7}), [](Sequential& m) {
         m.add(TensorSlice({3, 4, 5, 6, 7},
                           {{.axis = 4, .start = 6, .stop = -1, .step = -1}, {.axis = 2, .start = 1, .stop = 4}}));
       }});
  cases.push_back({"tensor_slice of (2, 3, 4, 3, 5, 4) axes 1, 3, 5", folded({2, 3, 4, 3, 5, 4}), [](Sequential& m) {
                     m.add(TensorSlice({2, 3, 4, 3, 5, 4}, {{.axis = 1, .start = 1, .stop = 3},
                                                            {.axis = 3, .start = 2, .stop = 0, .step = -2},
                                                            {.axis = 5, .start = 0, .stop = 4, .step = 2}}));
                   }});
  cases.push_back({"tensor_slice of (1, 4, 20000) axis 1 [1, 3) (long runs)", folded({1, 4, 20000}), [](Sequential& m) {
                     m.add(TensorSlice({1, 4, 20000}, {{.axis = 1, .start = 1, .stop = 3}}));
                   }});
  cases.push_back({"tensor_concat axis 2 of (2, 5, 12), its slice and a conv", folded({2, 5, 12}), [](Sequential& m) {
                     const int part = m.add(TensorSlice({2, 5, 12}, {{.axis = 2, .start = 11, .stop = 3, .step = -2}}),
                                            {Sequential::model_input});
                     const int conv =
                         m.add(Conv2d({.in_channels = 5, .out_channels = 5, .kernel = 1}), {Sequential::model_input});
                     m.add(TensorConcat({{2, 5, 12}, {2, 5, 4}, {2, 5, 12}}, 2), {Sequential::model_input, part, conv});
                     m.add(Conv2d({.in_channels = 5, .out_channels = 3, .kernel = 1}));
                   }});
  cases.push_back({"tensor_concat axis 3 of (3, 4, 6, 5) and (3, 4, 6, 2)", {3, 4, 6, 5}, [](Sequential& m) {
                     const int part = m.add(TensorSlice({3, 4, 6, 5}, {{.axis = 3, .start = 1, .stop = 3}}),
                                            {Sequential::model_input});
                     m.add(TensorConcat({{3, 4, 6, 5}, {3, 4, 6, 2}}, 3), {Sequential::model_input, part});
                   }});
  cases.push_back({"tensor_concat axis 2 of rank 5 (2, 3, 4, 2, 3) x 3", folded({2, 3, 4, 2, 3}), [](Sequential& m) {
                     const int part =
                         m.add(TensorSlice({2, 3, 4, 2, 3}, {{.axis = 2, .start = 3, .stop = 1, .step = -1}}),
                               {Sequential::model_input});
                     m.add(TensorConcat({{2, 3, 4, 2, 3}, {2, 3, 2, 2, 3}, {2, 3, 4, 2, 3}}, 2),
                           {Sequential::model_input, part, Sequential::model_input});
                   }});
  cases.push_back({"expand (2, 3, 1, 5) to (2, 3, 4, 5)", {2, 3, 1, 5}, [](Sequential& m) {
                     m.add(Expand({2, 3, 1, 5}, {1, 3, 4, 5}));
                   }});
  cases.push_back({"expand (2, 1, 7) to (2, 6, 7)", folded({2, 1, 7}), [](Sequential& m) {
                     m.add(Expand({2, 1, 7}, {2, 6, 1}));
                   }});
  cases.push_back({"expand (2, 1, 3, 1, 2, 1) to (2, 2, 3, 4, 2, 3)", folded({2, 1, 3, 1, 2, 1}), [](Sequential& m) {
                     m.add(Expand({2, 1, 3, 1, 2, 1}, {1, 2, 3, 4, 2, 3}));
                   }});
}

std::vector<LayerCase> all_cases() {
  std::vector<LayerCase> cases;
  for (const auto add : {&add_conv_cases,
                         &add_pool_cases,
                         &add_conv_maxpool_cases,
                         &add_elementwise_cases,
                         &add_normalization_cases,
                         &add_pad_cases,
                         &add_conv_transpose_cases,
                         &add_resize_cases,
                         &add_conditional_instance_norm_cases,
                         &add_padded_conv_cases,
                         &add_linear_cases,
                         &add_multi_input_cases,
                         &add_elementwise_binary_cases,
                         &add_fused_block_cases,
                         &add_squeeze_excite_conv_cases,
                         &add_inverted_residual_cases,
                         &add_excited_inverted_residual_cases,
                         &add_general_window_conv_cases,
                         &add_tensor_math_cases,
                         &add_tensor_movement_cases}) {
    const std::size_t first = cases.size();
    add(cases);
    if (first < cases.size()) cases[first].first_of_its_kind = true;
  }
  for (std::size_t i = 0; i < cases.size(); ++i) cases[i].index = static_cast<int>(i);
  return cases;
}

class LayerHarness : public ::testing::TestWithParam<std::tuple<LayerCase, std::string>> {};

TEST_P(LayerHarness, MatchesNaiveBackend) {
  const auto& [layer_case, backend] = GetParam();
  // The sanitized build runs the Vulkan column on every fourth case: there each costs 0.13-0.6 s (a Vulkan instance,
  // lavapipe's compile of the layer's pipelines); on every other case it was still about 45 s of CPU time in CI's
  // largest step (CI passed in 1745 s of its 1800), on every fourth 24 s. The Release run takes every case on Vulkan
  // with the validation layer, and the sanitized run every case on the CPU backends. The first case of each kind
  // (each add_*_cases) runs too, so the sanitizers see the Vulkan backend's host code for every kind of layer; the
  // other Vulkan tests run as they are.
  if (CORGY_TESTS_SANITIZED && backend.starts_with("vulkan") && layer_case.index % 4 != 0 &&
      !layer_case.first_of_its_kind) {
    GTEST_SKIP() << "sanitized build: the Vulkan column takes every fourth case and the first of each kind";
  }
  std::mt19937 rng(1234);
  Sequential model;
  layer_case.build(model);
  randomize_parameters(model, rng);
  const Variable input = random_variable(layer_case.input, rng, 2.0f);

  model.set_backend("naive");
  const Variable expected = model.forward(input).clone();
  // With the backend's debug checks (Vulkan: the validation layer; a message makes forward() throw).
  model.set_backend(make_backend(backend, {.validation = kSweepValidation}));
  // Twice: reusing the planned intermediates must not change the result.
  for (int run = 0; run < 2; ++run) {
    EXPECT_TRUE(outputs_match(model.forward(input), expected))
        << layer_case.name << " on " << backend << ", run " << run;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryLayer, LayerHarness,
                         ::testing::Combine(::testing::ValuesIn(all_cases()),
                                            ::testing::ValuesIn(backends_under_test())),
                         [](const ::testing::TestParamInfo<LayerHarness::ParamType>& param_info) {
                           return fmt::format("{}_{}_{}", param_info.index, sanitize(std::get<1>(param_info.param)),
                                              sanitize(std::get<0>(param_info.param).name));
                         });

class MatmulHarness : public ::testing::TestWithParam<std::string> {};

TEST_P(MatmulHarness, AllTransposesMatchNaive) {
  std::mt19937 rng(7);
  NaiveBackend naive;
  std::unique_ptr<Backend> backend = make_backend(GetParam(), {.validation = kSweepValidation});
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const int m = 13, n = 17, k = 29;
      const Variable a = random_variable(ta ? Shape::matrix(k, m) : Shape::matrix(m, k), rng);
      const Variable b = random_variable(tb ? Shape::matrix(n, k) : Shape::matrix(k, n), rng);
      const Variable expected = matmul(naive, a, b, ta, tb);
      EXPECT_TRUE(outputs_match(matmul(*backend, a, b, ta, tb), expected)) << "ta " << ta << " tb " << tb;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryBackend, MatmulHarness, ::testing::ValuesIn(backends_under_test()));

}  // namespace
}  // namespace corgy::testing
