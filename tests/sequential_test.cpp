// Sequential: shape inference, errors that name the layer, routes, memory reuse, backend switching.
#include <cmath>
#include <limits>

#include "corgy/model/memory_plan.h"
#include "test_util.h"

namespace corgy::testing {
namespace {

TEST(Sequential, InfersShapesThroughEveryLayer) {
  Sequential model;
  model.add(Conv2d({.in_channels = 1, .out_channels = 32, .kernel = 5, .padding = 2}));
  model.add(MaxPool2d({.kernel = 2}));
  model.add(Conv2d({.in_channels = 32, .out_channels = 64, .kernel = 5, .padding = 2}));
  model.add(MaxPool2d({.kernel = 2}));
  model.add(Flatten());
  model.add(Linear({.in_features = 3136, .out_features = 10}));
  const std::vector<Shape> shapes = model.infer_shapes({5, 1, 28, 28});
  EXPECT_EQ(shapes[0], (Shape{5, 32, 28, 28}));
  EXPECT_EQ(shapes[1], (Shape{5, 32, 14, 14}));
  EXPECT_EQ(shapes[3], (Shape{5, 64, 7, 7}));
  EXPECT_EQ(shapes[4], (Shape{5, 3136, 1, 1}));
  EXPECT_EQ(shapes[5], (Shape{5, 10, 1, 1}));
}

TEST(Sequential, ShapeErrorsNameTheLayerAndBothShapes) {
  Sequential model;
  model.add(Conv2d({.in_channels = 3, .out_channels = 8, .kernel = 3}));
  model.add(Linear({.in_features = 100, .out_features = 2}));
  const std::string channels = error_of([&] { model.infer_shapes({1, 4, 10, 10}); });
  EXPECT_NE(channels.find("layer 0 (conv2d 3x3/1 pad 0, 3->8)"), std::string::npos) << channels;
  EXPECT_NE(channels.find("expects (N, 3, H, W), got input (1, 4, 10, 10)"), std::string::npos) << channels;
  const std::string features = error_of([&] { model.infer_shapes({1, 3, 10, 10}); });
  EXPECT_NE(features.find("layer 1 (linear 100->2)"), std::string::npos) << features;
  EXPECT_NE(features.find("(1, 8, 8, 8)"), std::string::npos) << features;
  const std::string small = error_of([&] { model.infer_shapes({1, 3, 2, 2}); });
  EXPECT_NE(small.find("at least 3 x 3 pixels"), std::string::npos) << small;
  EXPECT_NE(error_of([&] { model.infer_shapes({1, 3, 0, 10}); }).find("zero"), std::string::npos);
  Variable empty;
  EXPECT_THROW(model.forward(empty), Error);
}

TEST(Sequential, InvalidLayerParametersAreRejected) {
  EXPECT_THROW(Conv2d({.in_channels = 0, .out_channels = 8}), Error);
  EXPECT_THROW(Conv2d({.in_channels = 3, .out_channels = 8, .stride = 0}), Error);
  EXPECT_THROW(Conv2d({.in_channels = 6, .out_channels = 8, .groups = 4}), Error);
  EXPECT_THROW(Conv2d({.in_channels = 3, .out_channels = 8, .padding = -1}), Error);
  // Windows beyond 65536 would overflow int in output_size(); dilation counts (effective kernel 2 * 40000 + 1).
  const std::string window = error_of([] { Conv2d({.in_channels = 1, .out_channels = 1, .stride = 2147483647}); });
  EXPECT_NE(window.find("stride (2147483647, 2147483647)"), std::string::npos) << window;
  EXPECT_NE(window.find("each extent, stride and pad must be at most 65536"), std::string::npos) << window;
  // A per-axis window is checked per axis, and reflect or edge padding needs a square one.
  EXPECT_THROW(Conv2d({.in_channels = 1, .out_channels = 1, .window = Conv2dWindow{1, 0}}), Error);
  EXPECT_THROW(Conv2d({.in_channels = 1, .out_channels = 1, .window = Conv2dWindow{1, 7, 1, 1, 1, 1, 0, -1, 0, 3}}),
               Error);
  const std::string reflect = error_of([] {
    Conv2d({.in_channels = 1,
            .out_channels = 1,
            .padding_mode = PadMode::reflect,
            .window = Conv2dWindow{1, 7, 1, 1, 1, 1, 0, 3, 0, 3}});
  });
  EXPECT_NE(reflect.find("reflect padding needs a square window with equal pads"), std::string::npos) << reflect;
  EXPECT_THROW(Conv2d({.in_channels = 1, .out_channels = 1, .kernel = 3, .dilation = 40000}), Error);
  EXPECT_THROW(Conv2d({.in_channels = 1, .out_channels = 1, .padding = 65537}), Error);
  EXPECT_NO_THROW(Conv2d({.in_channels = 1, .out_channels = 1, .kernel = 3, .stride = 65536, .dilation = 32767}));
  EXPECT_THROW(MaxPool2d({.kernel = 0}), Error);
  EXPECT_THROW(MaxPool2d({.kernel = 2, .padding = 2}), Error);
  EXPECT_THROW(AvgPool2d({.kernel = 3, .stride = -1}), Error);
  EXPECT_THROW(Linear({.in_features = 0, .out_features = 3}), Error);
  EXPECT_THROW(Upsample(0), Error);
  EXPECT_THROW(BatchNorm(0), Error);
  EXPECT_THROW(InstanceNorm(0), Error);
  EXPECT_THROW(InstanceNorm(3, -1.0f), Error);
  EXPECT_THROW(Pad({.top = -1}), Error);
  EXPECT_THROW(Pad({.right = 65537}), Error);
  InstanceNorm norm(3);
  const std::string parameters = error_of([&] { norm.set_parameters(std::vector<float>(3), std::vector<float>(2)); });
  EXPECT_NE(parameters.find("need 3 values each, got 3 and 2"), std::string::npos) << parameters;
  Conv2d conv({.in_channels = 2, .out_channels = 2, .kernel = 3});
  const std::string weights = error_of([&] { conv.set_weights(std::vector<float>(35)); });
  EXPECT_NE(weights.find("weights need 36 values"), std::string::npos) << weights;
  EXPECT_NE(weights.find("got 35"), std::string::npos) << weights;
}

TEST(Sequential, ReflectPadMustBeSmallerThanTheInput) {
  Sequential model;
  model.add(Pad({.mode = PadMode::reflect, .top = 1, .left = 3, .bottom = 1, .right = 0}));
  EXPECT_EQ(model.infer_shapes({2, 3, 2, 4})[0], (Shape{2, 3, 4, 7}));
  const std::string error = error_of([&] { model.infer_shapes({2, 3, 2, 3}); });
  EXPECT_NE(error.find("layer 0 (pad reflect t1 l3 b1 r0)"), std::string::npos) << error;
  EXPECT_NE(error.find("more than 1 rows and 3 columns"), std::string::npos) << error;
}

TEST(Sequential, TransposedConvolutionParametersAndShapesAreChecked) {
  const ConvTranspose2dDesc up{.in_channels = 4,
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
                               .output_padding_w = 1,
                               .groups = 2};
  Sequential model;
  model.add(ConvTranspose2d(up));
  EXPECT_EQ(model.infer_shapes({3, 4, 5, 7})[0], (Shape{3, 6, 10, 14}));
  const std::string channels = error_of([&] { model.infer_shapes({1, 3, 5, 5}); });
  EXPECT_NE(channels.find("layer 0 (conv_transpose2d 3x3/2 pad 1 output_padding 1x1, 4->6, groups 2)"),
            std::string::npos)
      << channels;
  EXPECT_NE(channels.find("expects (N, 4, H, W), got input (1, 3, 5, 5)"), std::string::npos) << channels;
  // Pads that crop more than the full output leaves.
  Sequential cropped;
  cropped.add(ConvTranspose2d({.in_channels = 1, .out_channels = 1, .kernel_h = 1, .kernel_w = 1, .pad_top = 2}));
  const std::string crop = error_of([&] { cropped.infer_shapes({1, 1, 2, 2}); });
  EXPECT_NE(crop.find("this one gives 0 x 2"), std::string::npos) << crop;
  EXPECT_THROW(ConvTranspose2d({.in_channels = 0, .out_channels = 2}), Error);
  EXPECT_THROW(ConvTranspose2d({.in_channels = 2, .out_channels = 2, .stride_w = 0}), Error);
  EXPECT_THROW(ConvTranspose2d({.in_channels = 6, .out_channels = 4, .groups = 4}), Error);
  EXPECT_THROW(ConvTranspose2d({.in_channels = 2, .out_channels = 2, .pad_right = -1}), Error);
  EXPECT_THROW(ConvTranspose2d({.in_channels = 2, .out_channels = 2, .output_padding_h = 65537}), Error);
  ConvTranspose2d deconv(up);
  const std::string weights = error_of([&] { deconv.set_weights(std::vector<float>(35)); });
  EXPECT_NE(weights.find("weights need 108 values ((4, 3, 3, 3) as (in, out / groups, kH, kW)), got 35"),
            std::string::npos)
      << weights;
  EXPECT_THROW(deconv.set_bias(std::vector<float>(4)), Error);
}

TEST(Sequential, ResizeScalesAndSizesAreChecked) {
  const std::string both = error_of([] { Resize({.scale_h = 2, .scale_w = 2, .height = 4, .width = 4}); });
  EXPECT_NE(both.find("resize: needs either scales or a size"), std::string::npos) << both;
  EXPECT_THROW(Resize(ResizeOptions{}), Error);
  for (float bad : {0.0f, -1.0f, 1e9f, std::numeric_limits<float>::infinity(), std::nanf("")}) {
    EXPECT_THROW(Resize({.scale_h = 2, .scale_w = bad}), Error) << bad;
  }
  EXPECT_THROW(Resize({.height = 0, .width = 3}), Error);
  EXPECT_THROW(Resize({.height = 3, .width = 65537}), Error);
  Sequential model;
  model.add(Resize({.mode = ResizeMode::linear, .scale_h = 0.25f, .scale_w = 1.5f}));
  EXPECT_EQ(model.infer_shapes({2, 3, 9, 5})[0], (Shape{2, 3, 2, 7}));
  const std::string empty = error_of([&] { model.infer_shapes({1, 1, 3, 5}); });
  EXPECT_NE(empty.find("layer 0 (resize linear half_pixel x0.25 x1.5)"), std::string::npos) << empty;
  EXPECT_NE(empty.find("this one gives 0 x 7"), std::string::npos) << empty;
  Sequential huge;
  huge.add(Resize({.scale_h = 60000, .scale_w = 1}));
  EXPECT_NE(error_of([&] { huge.infer_shapes({1, 1, 3, 3}); }).find("between 1 and 65536"), std::string::npos);
}

TEST(Sequential, RoutesMustNameEarlierLayersAndFitTheLayer) {
  Sequential model;
  model.add(ReLU());
  EXPECT_THROW(model.add(Concat(), {0, 1}), Error);
  EXPECT_THROW(model.add(Concat(), {-2}), Error);
  EXPECT_THROW(model.add(Add(), {0}), Error);
  Sequential shapes;
  const int a = shapes.add(Conv2d({.in_channels = 3, .out_channels = 4, .kernel = 3}));
  shapes.add(Add(), {a, Sequential::model_input});
  const std::string mismatch = error_of([&] { shapes.infer_shapes({1, 3, 8, 8}); });
  EXPECT_NE(mismatch.find("both inputs of shape (1, 4, 6, 6)"), std::string::npos) << mismatch;
}

TEST(Sequential, IntermediatesShareBuffersWhenLifetimesDoNotOverlap) {
  // A chain of 6 layers needs two buffers for its intermediates (ping-pong), not five, and one of its own for
  // the output the caller reads.
  std::vector<PlanEntry> chain;
  for (int i = 0; i < 6; ++i) chain.push_back({100, {i - 1}});
  const MemoryPlan plan = plan_memory(chain);
  EXPECT_EQ(plan.buffer_sizes.size(), 3u);
  for (int i = 1; i < 6; ++i) EXPECT_NE(plan.buffer_of_layer[i], plan.buffer_of_layer[i - 1]);
  for (int i = 0; i < 5; ++i) EXPECT_NE(plan.buffer_of_layer[i], plan.buffer_of_layer[5]);
  // A skip connection keeps layer 0 alive until layer 3 reads it.
  const MemoryPlan skip = plan_memory({{10, {-1}}, {10, {0}}, {10, {1}}, {10, {2, 0}}});
  EXPECT_NE(skip.buffer_of_layer[2], skip.buffer_of_layer[0]);
  EXPECT_NE(skip.buffer_of_layer[3], skip.buffer_of_layer[0]);
  // A view shares its source's buffer, and keeps it alive.
  const MemoryPlan view = plan_memory({{10, {-1}}, {10, {0}, true}, {10, {1}}, {10, {2}}});
  EXPECT_EQ(view.buffer_of_layer[1], view.buffer_of_layer[0]);
  EXPECT_NE(view.buffer_of_layer[2], view.buffer_of_layer[0]);
}

TEST(Sequential, MarkedOutputsSurviveAndBatchesAreIndependent) {
  std::mt19937 rng(3);
  Sequential model;
  const int head = model.add(Conv2d({.in_channels = 2, .out_channels = 3, .kernel = 3, .padding = 1}));
  model.add(ReLU());
  model.add(Sigmoid());
  model.add(Tanh());
  model.mark_output(head);
  randomize_parameters(model, rng);
  EXPECT_THROW(model.output(1), Error);
  Variable batch = random_variable({3, 2, 5, 5}, rng);
  const Variable all = model.forward(batch).clone();
  const Variable head_all = model.output(head).clone();
  for (int n = 0; n < 3; ++n) {
    Variable single(Shape{1, 2, 5, 5}, std::span<const float>(batch.data() + n * 50, 50));
    const Variable& out = model.forward(single);
    for (std::size_t i = 0; i < out.count(); ++i) EXPECT_FLOAT_EQ(out.data()[i], all.data()[n * out.count() + i]);
    const Variable& head_out = model.output(head);
    for (std::size_t i = 0; i < head_out.count(); ++i) {
      EXPECT_FLOAT_EQ(head_out.data()[i], head_all.data()[n * head_out.count() + i]);
    }
  }
}

TEST(Sequential, WeightsChangedAfterAForwardAreUsed) {
  for (const std::string& backend : all_backends()) {
    Sequential model;
    model.add(Conv2d({.in_channels = 1, .out_channels = 1, .kernel = 1}));
    model.set_backend(backend);
    Variable input(Shape{1, 1, 2, 2}, std::vector<float>{1, 2, 3, 4});
    model.layer_as<Conv2d>(0).set_weights(std::vector<float>{2});
    EXPECT_FLOAT_EQ(model.forward(input).data()[3], 8) << backend;
    model.layer_as<Conv2d>(0).set_weights(std::vector<float>{3});
    model.weights_changed();
    EXPECT_FLOAT_EQ(model.forward(input).data()[3], 12) << backend;
  }
}

// Passes its input on, counting the shapes it is asked for: a plan made for an input shape asks every layer.
class ShapeCountingLayer final : public Layer {
 public:
  explicit ShapeCountingLayer(int& count) : count_(&count) {}
  std::string_view type() const override { return "shape counting"; }
  Shape output_shape(std::span<const Shape> inputs) const override {
    ++*count_;
    return inputs[0];
  }
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override {
    backend.activation(Activation::none(), *inputs[0], output);
  }

 private:
  int* count_;
};

TEST(Sequential, KeptPlansServeAlternatingBatchSizes) {
  // A server runs batches of a few sizes in turn; with the plans of those sizes kept, a change of size reuses the
  // plan instead of planning again, the kept plans' intermediates are one set of buffers (as large as the largest
  // plan needs), and every output, the kept one too, equals a model that plans afresh.
  std::mt19937 rng(11);
  for (const std::string& backend : all_backends()) {
    Sequential model;
    // A reflect-padded convolution (a step with a temporary slot), one fused with its activation and max pool, a
    // kept output.
    model.add(
        Conv2d({.in_channels = 2, .out_channels = 4, .kernel = 3, .padding = 1, .padding_mode = PadMode::reflect}));
    const int middle = model.add(Conv2d({.in_channels = 4, .out_channels = 3, .kernel = 3, .padding = 1}));
    model.add(ReLU());
    model.add(MaxPool2d({.kernel = 2}));
    int shapes_asked = 0;
    model.add(std::make_unique<ShapeCountingLayer>(shapes_asked));
    model.mark_output(middle);
    randomize_parameters(model, rng);
    model.set_backend(backend);
    model.set_kept_plans(2);
    EXPECT_EQ(model.kept_plans(), 2);
    EXPECT_THROW(model.set_kept_plans(0), Error);

    const Variable one = random_variable({1, 2, 6, 6}, rng);
    const Variable three = random_variable({3, 2, 6, 6}, rng);
    const Variable five = random_variable({5, 2, 6, 6}, rng);
    // The last and the middle layer's outputs of a model that plans afresh.
    const auto fresh = [&](const Variable& input) {
      Sequential reference;
      reference.add(
          Conv2d({.in_channels = 2, .out_channels = 4, .kernel = 3, .padding = 1, .padding_mode = PadMode::reflect}));
      reference.add(Conv2d({.in_channels = 4, .out_channels = 3, .kernel = 3, .padding = 1}));
      reference.add(ReLU());
      reference.add(MaxPool2d({.kernel = 2}));
      reference.mark_output(1);
      for (int i = 0; i < 2; ++i) {
        reference.layer_as<Conv2d>(i).set_weights(model.layer_as<Conv2d>(i).weights().values());
        reference.layer_as<Conv2d>(i).set_bias(model.layer_as<Conv2d>(i).bias().values());
      }
      std::pair<Variable, Variable> outputs{reference.forward(input).clone(), Variable()};
      outputs.second = reference.output(1).clone();
      return outputs;
    };
    const auto expect_fresh = [&](const Variable& input, bool planned) {
      const int asked = shapes_asked;
      const Variable& out = model.forward(input);
      const auto [expected, expected_middle] = fresh(input);
      EXPECT_TRUE(outputs_match(out, expected, 1e-5)) << backend << " at batch " << input.shape().n;
      EXPECT_TRUE(outputs_match(model.output(middle), expected_middle, 1e-5)) << backend;
      EXPECT_EQ(shapes_asked != asked, planned)
          << backend << " at batch " << input.shape().n << (planned ? ": not planned" : ": planned again");
    };
    expect_fresh(one, true);
    expect_fresh(three, true);
    for (const Variable* input : {&one, &three, &one}) expect_fresh(*input, false);
    // The two kept plans hold their intermediates in the same buffers (batch 1 is again the most recently used).
    const auto storage_of_three = model.forward(three).storage();
    EXPECT_EQ(model.forward(one).storage(), storage_of_three) << backend;
    // A third size drops the least recently used plan (batch 3's), not batch 1's.
    expect_fresh(five, true);
    expect_fresh(one, false);
    expect_fresh(three, true);
    // Fewer kept plans drop the older ones; the model still runs every shape.
    model.set_kept_plans(1);
    expect_fresh(one, true);
  }
}

TEST(Sequential, UnknownBackendIsAClearError) {
  const std::string message = error_of([] { make_backend("cuda"); });
  EXPECT_NE(message.find("unknown backend 'cuda'"), std::string::npos) << message;
}

}  // namespace
}  // namespace corgy::testing
