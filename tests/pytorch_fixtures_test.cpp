// Layers and a small network against outputs computed by PyTorch (tools/make_fixtures.py writes the fixtures
// under tests/fixtures/pytorch; cases.json there lists each case's PyTorch call). Every case runs on every
// backend, naive included: this is what checks the naive reference against an independent implementation.
// The layer options below are the ones each case's PyTorch call uses.
#include <fmt/format.h>

#include <functional>
#include <optional>
#include <tuple>

#include "test_util.h"

namespace corgy::testing {
namespace {

/// The .npy files of one case: tests/fixtures/pytorch/<directory>/<file>.npy.
class CaseFiles {
 public:
  explicit CaseFiles(std::string directory) : directory_(std::move(directory)) {}

  Variable load(const std::string& file) const {
    return load_npy(fixture_path(fmt::format("pytorch/{}/{}.npy", directory_, file)));
  }
  /// A PyTorch (N, features) matrix, which load_npy reads as (1, 1, N, features), as corgy's batch of
  /// vectors (N, features, 1, 1).
  Variable load_vectors(const std::string& file) const {
    Variable matrix = load(file);
    const Shape s = matrix.shape();
    if (!s.is_matrix()) throw Error(fmt::format("{}/{}.npy: expected a 2-D array, got {}", directory_, file, s.str()));
    matrix.reshape({s.rows(), s.cols(), 1, 1});
    return matrix;
  }

 private:
  std::string directory_;
};

/// A layer output to compare besides the model's output: layer `layer` against `file`.
struct IntermediateCheck {
  int layer;
  std::string file;
  bool vectors;
};

struct FixtureCase {
  std::string name;
  std::string directory;
  /// Builds the corgy model of the case from its parameter files; returns intermediate outputs to check.
  std::function<std::vector<IntermediateCheck>(Sequential&, const CaseFiles&)> build;
  /// PyTorch's input / output are (N, features) matrices.
  bool vector_input = false;
  bool vector_output = false;
  /// Tensors of another rank than 4: the dims of PyTorch's input and output, read into their fold.
  std::optional<TensorDims> input_dims{};
  std::optional<TensorDims> output_dims{};
};

void PrintTo(const FixtureCase& fixture, std::ostream* os) { *os << fixture.name; }

/// A case whose model is one layer without parameters.
template <class MakeLayer>
FixtureCase layer_case(std::string name, MakeLayer make_layer) {
  return {name, name, [make_layer](Sequential& model, const CaseFiles&) {
            model.add(make_layer());
            return std::vector<IntermediateCheck>{};
          }};
}

/// A layer's weights read from `file`, which must have the layer's weight shape: a case whose hard-coded
/// options differ from the script's then fails at once instead of computing with shuffled weights.
template <class LayerWithWeights>
void load_weights(LayerWithWeights& layer, const CaseFiles& files, const std::string& file) {
  const Variable weights = files.load(file);
  if (weights.shape() != layer.weights().shape()) {
    throw Error(fmt::format("{}: {}.npy has shape {}, the layer's weights {}", layer.describe(), file,
                            weights.shape().str(), layer.weights().shape().str()));
  }
  layer.set_weights(weights.values());
}

Conv2d load_conv(const CaseFiles& files, const Conv2dOptions& options, const std::string& prefix = "") {
  Conv2d conv(options);
  load_weights(conv, files, prefix + "weight");
  if (options.bias) conv.set_bias(files.load(prefix + "bias").values());
  return conv;
}

Linear load_linear(const CaseFiles& files, const LinearOptions& options, const std::string& prefix = "") {
  Linear linear(options);
  load_weights(linear, files, prefix + "weight");
  if (options.bias) linear.set_bias(files.load(prefix + "bias").values());
  return linear;
}

/// PyTorch's BatchNorm2d weight, bias, running_mean and running_var.
struct BatchNormFiles {
  Variable gamma;
  Variable beta;
  Variable mean;
  Variable variance;

  BatchNormFiles(const CaseFiles& files, const std::string& prefix)
      : gamma(files.load(prefix + "weight")),
        beta(files.load(prefix + "bias")),
        mean(files.load(prefix + "running_mean")),
        variance(files.load(prefix + "running_var")) {}

  BatchNormParams params(float epsilon) const {
    return {gamma.values(), beta.values(), mean.values(), variance.values(), epsilon};
  }
};

void add_conv_cases(std::vector<FixtureCase>& cases) {
  const Activation leaky = Activation::leaky_relu(0.1f);
  const std::vector<std::pair<std::string, Conv2dOptions>> convs = {
      {"conv2d_3x3_pad1", {.in_channels = 3, .out_channels = 8, .kernel = 3, .padding = 1}},
      {"conv2d_5x5_pad2", {.in_channels = 4, .out_channels = 6, .kernel = 5, .padding = 2}},
      {"conv2d_3x3_stride2_pad1", {.in_channels = 5, .out_channels = 7, .kernel = 3, .stride = 2, .padding = 1}},
      {"conv2d_3x3_stride2_nopad", {.in_channels = 3, .out_channels = 4, .kernel = 3, .stride = 2}},
      {"conv2d_3x3_dilation2", {.in_channels = 4, .out_channels = 5, .kernel = 3, .padding = 2, .dilation = 2}},
      {"conv2d_3x3_stride2_dilation2_groups2",
       {.in_channels = 4, .out_channels = 6, .kernel = 3, .stride = 2, .padding = 1, .dilation = 2, .groups = 2}},
      {"conv2d_3x3_groups2", {.in_channels = 6, .out_channels = 8, .kernel = 3, .padding = 1, .groups = 2}},
      {"conv2d_depthwise_3x3", {.in_channels = 8, .out_channels = 8, .kernel = 3, .padding = 1, .groups = 8}},
      {"conv2d_depthwise_3x3_stride2",
       {.in_channels = 6, .out_channels = 6, .kernel = 3, .stride = 2, .padding = 1, .groups = 6}},
      {"conv2d_depthwise_multiplier2", {.in_channels = 4, .out_channels = 8, .kernel = 3, .padding = 1, .groups = 4}},
      {"conv2d_1x1_batch3", {.in_channels = 16, .out_channels = 10, .kernel = 1}},
      {"conv2d_7x7_stride2_batch3", {.in_channels = 3, .out_channels = 4, .kernel = 7, .stride = 2, .padding = 3}},
      {"conv2d_no_bias", {.in_channels = 5, .out_channels = 4, .kernel = 3, .padding = 1, .bias = false}},
      {"conv2d_leaky", {.in_channels = 3, .out_channels = 6, .kernel = 3, .padding = 1, .activation = leaky}},
      // Windows per axis: kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w, pads top, left, bottom,
      // right (the script's F.pad gives the per-side ones).
      {"conv2d_1x7_pad0x3",
       {.in_channels = 5, .out_channels = 6, .window = Conv2dWindow{1, 7, 1, 1, 1, 1, 0, 3, 0, 3}}},
      {"conv2d_7x1_pad3x0_batch3",
       {.in_channels = 4, .out_channels = 5, .window = Conv2dWindow{7, 1, 1, 1, 1, 1, 3, 0, 3, 0}}},
      {"conv2d_3x1_stride2x1",
       {.in_channels = 3, .out_channels = 4, .window = Conv2dWindow{3, 1, 2, 1, 1, 1, 1, 0, 1, 0}}},
      {"conv2d_3x3_dilation2x1",
       {.in_channels = 4, .out_channels = 5, .window = Conv2dWindow{3, 3, 1, 1, 2, 1, 2, 1, 2, 1}}},
      {"conv2d_1x5_groups3_asymmetric_pads",
       {.in_channels = 6, .out_channels = 9, .window = Conv2dWindow{1, 5, 1, 1, 1, 1, 1, 2, 0, 1}, .groups = 3}},
      {"conv2d_3x3_stride2_asymmetric_pads",
       {.in_channels = 3, .out_channels = 4, .window = Conv2dWindow{3, 3, 2, 2, 1, 1, 0, 1, 2, 1}}},
  };
  for (const auto& [name, options] : convs) {
    cases.push_back({name, name, [options = options](Sequential& model, const CaseFiles& files) {
                       model.add(load_conv(files, options));
                       return std::vector<IntermediateCheck>{};
                     }});
  }
}

/// Each conv + batch norm case twice: folded into the convolution (Conv2d::fold_batch_norm), and as a
/// BatchNorm layer (with a LeakyReLU layer where PyTorch applies one).
void add_batch_norm_cases(std::vector<FixtureCase>& cases) {
  struct ConvBatchNorm {
    std::string directory;
    Conv2dOptions options;
    float epsilon;
  };
  const std::vector<ConvBatchNorm> convs = {
      {"conv2d_batchnorm", {.in_channels = 3, .out_channels = 6, .kernel = 3, .padding = 1}, 1e-5f},
      {"conv2d_no_bias_batchnorm_eps1e3_leaky",
       {.in_channels = 4,
        .out_channels = 5,
        .kernel = 3,
        .padding = 1,
        .bias = false,
        .activation = Activation::leaky_relu(0.1f)},
       1e-3f},
  };
  for (const ConvBatchNorm& c : convs) {
    cases.push_back({c.directory + "_folded", c.directory, [c](Sequential& model, const CaseFiles& files) {
                       Conv2d conv = load_conv(files, c.options);
                       conv.fold_batch_norm(BatchNormFiles(files, "bn_").params(c.epsilon));
                       model.add(std::move(conv));
                       return std::vector<IntermediateCheck>{};
                     }});
    cases.push_back({c.directory + "_layers", c.directory, [c](Sequential& model, const CaseFiles& files) {
                       Conv2dOptions plain = c.options;
                       plain.activation = Activation::none();
                       model.add(load_conv(files, plain));
                       BatchNorm batch_norm(plain.out_channels);
                       batch_norm.set_parameters(BatchNormFiles(files, "bn_").params(c.epsilon));
                       model.add(std::move(batch_norm));
                       if (c.options.activation.kind != ActivationKind::none) {
                         model.add(ActivationLayer(c.options.activation));
                       }
                       return std::vector<IntermediateCheck>{};
                     }});
  }
  cases.push_back({"batchnorm", "batchnorm", [](Sequential& model, const CaseFiles& files) {
                     BatchNorm batch_norm(6);
                     batch_norm.set_parameters(BatchNormFiles(files, "bn_").params(1e-5f));
                     model.add(std::move(batch_norm));
                     return std::vector<IntermediateCheck>{};
                   }});
}

void add_pool_cases(std::vector<FixtureCase>& cases) {
  cases.push_back(layer_case("maxpool_2x2_stride2", [] { return MaxPool2d({.kernel = 2}); }));
  cases.push_back(
      layer_case("maxpool_3x3_stride2_pad1", [] { return MaxPool2d({.kernel = 3, .stride = 2, .padding = 1}); }));
  cases.push_back(layer_case("maxpool_darknet_2x2_stride1", [] { return MaxPool2d::darknet(2, 1); }));
  cases.push_back(layer_case("maxpool_global", [] { return MaxPool2d({.global = true}); }));
  cases.push_back(layer_case("avgpool_2x2_stride2", [] { return AvgPool2d({.kernel = 2}); }));
  cases.push_back(layer_case("avgpool_3x3_stride2_pad1_include_pad",
                             [] { return AvgPool2d({.kernel = 3, .stride = 2, .padding = 1}); }));
  cases.push_back(layer_case("avgpool_3x3_stride2_pad1_exclude_pad", [] {
    return AvgPool2d({.kernel = 3, .stride = 2, .padding = 1, .count_include_pad = false});
  }));
  cases.push_back(layer_case("avgpool_3x3_stride1_pad1_exclude_pad", [] {
    return AvgPool2d({.kernel = 3, .stride = 1, .padding = 1, .count_include_pad = false});
  }));
  // adaptive_avg_pool2d to 2 x 2 on 8 x 8 has the windows of a 4x4 stride-4 pooling.
  cases.push_back(layer_case("avgpool_adaptive_2x2", [] { return AvgPool2d({.kernel = 4}); }));
  cases.push_back(layer_case("avgpool_global", [] { return AvgPool2d::global(); }));
}

void add_elementwise_cases(std::vector<FixtureCase>& cases) {
  const std::vector<std::pair<std::string, Activation>> activations = {
      {"leaky_relu", Activation::leaky_relu(0.1f)},
      {"sigmoid", Activation::sigmoid()},
      {"tanh", Activation::tanh()},
      {"mish", Activation::mish()},
      {"swish", Activation::swish()},
  };
  for (const auto& [name, activation] : activations) {
    for (const char* suffix : {"", "_wide"}) {
      cases.push_back(layer_case(name + suffix, [activation = activation] { return ActivationLayer(activation); }));
    }
  }
  FixtureCase softmax_2d = layer_case("softmax_2d", [] { return Softmax(); });
  softmax_2d.vector_input = softmax_2d.vector_output = true;
  cases.push_back(softmax_2d);
  cases.push_back(layer_case("softmax_4d", [] { return Softmax(); }));
  cases.push_back(layer_case("upsample_nearest_x2", [] { return Upsample(2); }));
  cases.push_back(layer_case("upsample_nearest_x3", [] { return Upsample(3); }));
}

/// InstanceNorm with PyTorch's weight and bias; Pad in each mode, with F.pad's (left, right, top, bottom) below.
void add_instance_norm_and_pad_cases(std::vector<FixtureCase>& cases) {
  const std::vector<std::tuple<std::string, int, float, Activation>> norms = {
      {"instance_norm", 4, 1e-5f, Activation::none()},
      {"instance_norm_eps1e3_relu", 3, 1e-3f, Activation::relu()},
  };
  for (const auto& [name, channels, epsilon, activation] : norms) {
    cases.push_back(
        {name, name,
         [channels = channels, epsilon = epsilon, activation = activation](Sequential& model, const CaseFiles& files) {
           InstanceNorm norm(channels, epsilon, activation);
           norm.set_parameters(files.load("weight").values(), files.load("bias").values());
           model.add(std::move(norm));
           return std::vector<IntermediateCheck>{};
         }});
  }
  cases.push_back(layer_case("pad_constant", [] {
    return Pad({.mode = PadMode::constant, .top = 3, .left = 1, .bottom = 0, .right = 2, .value = 0.5f});
  }));
  cases.push_back(layer_case(
      "pad_reflect", [] { return Pad({.mode = PadMode::reflect, .top = 0, .left = 2, .bottom = 3, .right = 1}); }));
  cases.push_back(layer_case("pad_reflect_4", [] { return Pad::uniform(4, PadMode::reflect); }));
  cases.push_back(layer_case(
      "pad_replicate", [] { return Pad({.mode = PadMode::edge, .top = 1, .left = 3, .bottom = 2, .right = 0}); }));
}

/// ConvTranspose2d with the weights of nn.ConvTranspose2d; Resize with the mode and coordinates F.interpolate uses
/// (bilinear / bicubic: pytorch_half_pixel, or align_corners; nearest: asymmetric with floor).
void add_conv_transpose_and_resize_cases(std::vector<FixtureCase>& cases) {
  const std::vector<std::tuple<std::string, ConvTranspose2dDesc, bool>> deconvs = {
      {"conv_transpose2d_stride2_output_padding1",
       {.in_channels = 4,
        .out_channels = 3,
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
      {"conv_transpose2d_groups2_dilation2",
       {.in_channels = 4,
        .out_channels = 6,
        .kernel_h = 3,
        .kernel_w = 2,
        .stride_h = 2,
        .stride_w = 1,
        .pad_top = 0,
        .pad_left = 1,
        .pad_bottom = 0,
        .pad_right = 1,
        .output_padding_h = 1,
        .dilation_h = 2,
        .dilation_w = 2,
        .groups = 2},
       false},
      {"conv_transpose2d_4x4_stride4",
       {.in_channels = 3, .out_channels = 5, .kernel_h = 4, .kernel_w = 4, .stride_h = 4, .stride_w = 4},
       true},
  };
  for (const auto& [name, desc, bias] : deconvs) {
    cases.push_back({name, name, [desc = desc, bias = bias](Sequential& model, const CaseFiles& files) {
                       ConvTranspose2d deconv(desc, bias);
                       load_weights(deconv, files, "weight");
                       if (bias) deconv.set_bias(files.load("bias").values());
                       model.add(std::move(deconv));
                       return std::vector<IntermediateCheck>{};
                     }});
  }
  using enum ResizeMode;
  using enum ResizeCoordinates;
  const std::vector<std::pair<std::string, ResizeOptions>> resizes = {
      {"interpolate_bilinear_x2", {.mode = linear, .coordinates = pytorch_half_pixel, .scale_h = 2, .scale_w = 2}},
      {"interpolate_bilinear_align_corners_size",
       {.mode = linear, .coordinates = align_corners, .height = 7, .width = 9}},
      {"interpolate_bilinear_x0_5",
       {.mode = linear, .coordinates = pytorch_half_pixel, .scale_h = 0.5f, .scale_w = 0.5f}},
      {"interpolate_bicubic_x1_5",
       {.mode = cubic, .coordinates = pytorch_half_pixel, .scale_h = 1.5f, .scale_w = 1.5f}},
      {"interpolate_bicubic_align_corners_size",
       {.mode = cubic, .coordinates = align_corners, .height = 6, .width = 3}},
      {"interpolate_nearest_size",
       {.coordinates = asymmetric, .rounding = NearestRounding::floor, .height = 7, .width = 10}},
      {"interpolate_nearest_x0_5",
       {.coordinates = asymmetric, .rounding = NearestRounding::floor, .scale_h = 0.5f, .scale_w = 0.5f}},
  };
  for (const auto& [name, options] : resizes) {
    cases.push_back(layer_case(name, [options = options] { return Resize(options); }));
  }
}

void add_linear_cases(std::vector<FixtureCase>& cases) {
  const LinearOptions options{.in_features = 60, .out_features = 7};
  cases.push_back({"linear_flatten", "linear_flatten",
                   [options = options](Sequential& model, const CaseFiles& files) {
                     model.add(Flatten());
                     model.add(load_linear(files, options));
                     return std::vector<IntermediateCheck>{};
                   },
                   false, true});
  // Linear accepts a 4-D input directly and flattens it the same way.
  cases.push_back({"linear_without_flatten_layer", "linear_flatten",
                   [options = options](Sequential& model, const CaseFiles& files) {
                     model.add(load_linear(files, options));
                     return std::vector<IntermediateCheck>{};
                   },
                   false, true});
}

void add_multi_input_cases(std::vector<FixtureCase>& cases) {
  cases.push_back({"concat", "concat", [](Sequential& model, const CaseFiles& files) {
                     const int conv =
                         model.add(load_conv(files, {.in_channels = 3, .out_channels = 5, .kernel = 1, .bias = false}));
                     model.add(Concat(), {Sequential::model_input, conv});
                     return std::vector<IntermediateCheck>{};
                   }});
  for (const std::string directory : {"residual_add", "residual_add_leaky"}) {
    const Activation activation = directory == "residual_add" ? Activation::none() : Activation::leaky_relu(0.1f);
    cases.push_back({directory, directory, [activation](Sequential& model, const CaseFiles& files) {
                       const int conv = model.add(
                           load_conv(files, {.in_channels = 4, .out_channels = 4, .kernel = 3, .padding = 1}));
                       model.add(Add(activation), {conv, Sequential::model_input});
                       return std::vector<IntermediateCheck>{};
                     }});
  }
}

/// SmallNet of tools/make_fixtures.py. With fold_batch_norm, bn0 is folded into conv0 and the leaky ReLU fused;
/// otherwise they are layers of their own.
std::vector<IntermediateCheck> build_small_net(Sequential& model, const CaseFiles& files, bool fold_batch_norm) {
  const Activation leaky = Activation::leaky_relu(0.1f);
  const BatchNormFiles bn0_files(files, "bn0_");
  const BatchNormParams bn0 = bn0_files.params(1e-5f);
  int x0 = 0;
  if (fold_batch_norm) {
    Conv2d conv0 = load_conv(
        files, {.in_channels = 3, .out_channels = 8, .kernel = 3, .padding = 1, .bias = false, .activation = leaky},
        "conv0_");
    conv0.fold_batch_norm(bn0);
    x0 = model.add(std::move(conv0));
  } else {
    model.add(
        load_conv(files, {.in_channels = 3, .out_channels = 8, .kernel = 3, .padding = 1, .bias = false}, "conv0_"));
    BatchNorm batch_norm(8);
    batch_norm.set_parameters(bn0);
    model.add(std::move(batch_norm));
    x0 = model.add(LeakyReLU(0.1f));
  }
  const int x1 = model.add(MaxPool2d({.kernel = 2}));
  const int x2 = model.add(load_conv(
      files, {.in_channels = 8, .out_channels = 16, .kernel = 3, .padding = 1, .activation = Activation::swish()},
      "conv2_"));
  model.add(Concat(), {x2, x1});
  model.add(load_conv(files, {.in_channels = 24, .out_channels = 8, .kernel = 1, .activation = leaky}, "conv4_"));
  const int x5 = model.add(Upsample(2));
  model.add(Add(), {x5, x0});
  model.add(load_conv(
      files,
      {.in_channels = 8, .out_channels = 16, .kernel = 3, .stride = 2, .padding = 1, .activation = Activation::mish()},
      "conv7_"));
  model.add(AvgPool2d::global());
  model.add(Flatten());
  const int logits = model.add(load_linear(files, {.in_features = 16, .out_features = 10}, "fc_"));
  model.mark_output(logits);
  model.add(Softmax());
  // The softmax squashes errors in the logits; compare them too.
  return {{logits, "logits", true}};
}

void add_net_cases(std::vector<FixtureCase>& cases) {
  for (bool fold : {true, false}) {
    cases.push_back({fold ? "net_folded_batch_norm" : "net_batch_norm_layer", "net",
                     [fold](Sequential& model, const CaseFiles& files) { return build_small_net(model, files, fold); },
                     false, true});
  }
}

/// Arithmetic on tensors of any rank (the script saves input and output in the 4-D shape corgy stores them in).
void add_tensor_math_cases(std::vector<FixtureCase>& cases) {
  /// A case whose model is one layer made from the case's files.
  const auto with_files = [](std::string name, std::function<void(Sequential&, const CaseFiles&)> build) {
    return FixtureCase{name, name, [build](Sequential& model, const CaseFiles& files) {
                         build(model, files);
                         return std::vector<IntermediateCheck>{};
                       }};
  };
  cases.push_back(with_files("broadcast_add_rank5", [](Sequential& m, const CaseFiles& f) {
    m.add(BroadcastBinary::with_constant(BinaryOp::add, {2, 3, 4, 5, 6}, {3, 1, 5, 1}, f.load("b").values(), false));
  }));
  cases.push_back(with_files("broadcast_pow_rank3", [](Sequential& m, const CaseFiles& f) {
    m.add(BroadcastBinary::with_constant(BinaryOp::power, {3, 7, 11}, {7, 1}, f.load("exponent").values(), false));
  }));
  cases.push_back(with_files("broadcast_div_constant_first_rank6", [](Sequential& m, const CaseFiles& f) {
    m.add(BroadcastBinary::with_constant(BinaryOp::divide, {2, 2, 3, 2, 3, 5}, {2, 1, 5}, f.load("c").values(), true));
  }));
  cases.push_back(layer_case("erf_rank3", [] { return Unary(UnaryOp::erf); }));
  cases.push_back(layer_case("reduce_mean_axis2_rank5", [] {
    return ReduceAxis(ReduceOp::mean, {2, 3, 4, 5, 6}, 2, 2, true);
  }));
  cases.push_back(layer_case("reduce_max_axis1_rank3", [] {
    return ReduceAxis(ReduceOp::max, {3, 7, 11}, 1, 1, false);
  }));
  cases.push_back(layer_case("softmax_axis2", [] { return SoftmaxAxis({2, 3, 4, 5}, 2); }));
  cases.push_back(layer_case("log_softmax_last_rank5", [] { return SoftmaxAxis({2, 3, 4, 5, 6}, 4, true); }));
  cases.push_back(with_files("batched_matmul_broadcast", [](Sequential& m, const CaseFiles&) {
    const int mean = m.add(ReduceAxis(ReduceOp::mean, {2, 3, 5, 5}, 1, 1, true));
    m.add(BatchedMatmul({2, 3, 5, 5}, {2, 1, 5, 5}), {Sequential::model_input, mean});
  }));
  cases.push_back(with_files("gelu_exact_and_tanh_rank3", [](Sequential& m, const CaseFiles&) {
    const int exact = m.add(Unary(UnaryOp::gelu), {Sequential::model_input});
    const int tanh_form = m.add(Unary(UnaryOp::gelu_tanh), {Sequential::model_input});
    m.add(Concat(), {exact, tanh_form});
  }));
  for (const auto& [name, dims, axis, epsilon] : std::vector<std::tuple<std::string, TensorDims, int, float>>{
           {"layer_norm_last_axis", {2, 3, 5, 6}, 3, 1e-5f}, {"layer_norm_channels_first", {2, 5, 4, 3}, 1, 1e-6f}}) {
    cases.push_back(with_files(name, [dims = dims, axis = axis, epsilon = epsilon](Sequential& m, const CaseFiles& f) {
      LayerNorm norm(dims, axis, epsilon);
      norm.set_parameters(f.load("weight").values(), f.load("bias").values());
      m.add(std::move(norm));
    }));
  }
  cases.push_back(with_files("tensor_linear_rank4", [](Sequential& m, const CaseFiles& f) {
    TensorLinear layer({2, 5, 5, 8}, {.in_features = 8, .out_features = 6});
    load_weights(layer.linear(), f, "weight");
    layer.linear().set_bias(f.load("bias").values());
    m.add(std::move(layer));
  }));
}

// Data movement of tensors of rank 3 to 5 (Transpose, TensorSlice, TensorConcat, Expand, Reshape) against PyTorch's
// permute, slicing with steps and flips, cat and expand.
void add_tensor_movement_cases(std::vector<FixtureCase>& cases) {
  const auto tensor_case = [&cases](std::string name, TensorDims input, TensorDims output,
                                    std::function<void(Sequential&)> build) {
    cases.push_back({name, name,
                     [build](Sequential& model, const CaseFiles&) {
                       build(model);
                       return std::vector<IntermediateCheck>{};
                     },
                     false, false, input, output});
  };
  tensor_case("permute_0231", {2, 6, 5, 7}, {2, 5, 7, 6}, [](Sequential& m) {
    m.add(Transpose({2, 6, 5, 7}, {0, 2, 3, 1}));
  });
  tensor_case("permute_5d", {2, 3, 4, 5, 6}, {2, 5, 3, 6, 4}, [](Sequential& m) {
    m.add(Transpose({2, 3, 4, 5, 6}, {0, 3, 1, 4, 2}));
  });
  tensor_case("view_transpose_dfl", {2, 64, 9}, {2, 16, 4, 9}, [](Sequential& m) {
    m.add(Reshape({2, 64, 9}, {2, 4, 16, 9}));
    m.add(Transpose({2, 4, 16, 9}, {0, 2, 1, 3}));
  });
  tensor_case("slice_steps_3d", {2, 6, 11}, {2, 3, 4}, [](Sequential& m) {
    m.add(TensorSlice(
        {2, 6, 11}, {{.axis = 1, .start = 4, .stop = -1, .step = -2}, {.axis = 2, .start = 1, .stop = 11, .step = 3}}));
  });
  tensor_case("slice_5d", {2, 3, 6, 4, 5}, {2, 3, 4, 4, 5}, [](Sequential& m) {
    m.add(TensorSlice({2, 3, 6, 4, 5},
                      {{.axis = 2, .start = 1, .stop = 5}, {.axis = 4, .start = 4, .stop = -1, .step = -1}}));
  });
  tensor_case("cat_axis2_3d", {2, 5, 12}, {2, 5, 17}, [](Sequential& m) {
    const int part = m.add(TensorSlice({2, 5, 12}, {{.axis = 2, .start = 3, .stop = 8}}), {Sequential::model_input});
    m.add(TensorConcat({{2, 5, 12}, {2, 5, 5}}, 2), {Sequential::model_input, part});
  });
  tensor_case("cat_axis3", {3, 4, 6, 5}, {3, 4, 6, 10}, [](Sequential& m) {
    const int flipped =
        m.add(TensorSlice({3, 4, 6, 5}, {{.axis = 3, .start = 4, .stop = -1, .step = -1}}), {Sequential::model_input});
    m.add(TensorConcat({{3, 4, 6, 5}, {3, 4, 6, 5}}, 3), {Sequential::model_input, flipped});
  });
  tensor_case("expand_4d", {2, 3, 1, 5}, {2, 3, 4, 5}, [](Sequential& m) {
    m.add(Expand({2, 3, 1, 5}, {2, 3, 4, 5}));
  });
  tensor_case("expand_3d", {2, 1, 7}, {2, 6, 7}, [](Sequential& m) { m.add(Expand({2, 1, 7}, {2, 6, 7})); });
}

std::vector<FixtureCase> all_cases() {
  std::vector<FixtureCase> cases;
  add_conv_cases(cases);
  add_batch_norm_cases(cases);
  add_pool_cases(cases);
  add_elementwise_cases(cases);
  add_instance_norm_and_pad_cases(cases);
  add_conv_transpose_and_resize_cases(cases);
  add_linear_cases(cases);
  add_multi_input_cases(cases);
  add_net_cases(cases);
  add_tensor_math_cases(cases);
  add_tensor_movement_cases(cases);
  return cases;
}

class PyTorchFixture : public ::testing::TestWithParam<std::tuple<FixtureCase, std::string>> {};

TEST_P(PyTorchFixture, MatchesPyTorch) {
  const auto& [fixture, backend] = GetParam();
  const CaseFiles files(fixture.directory);
  Sequential model;
  const std::vector<IntermediateCheck> checks = fixture.build(model, files);
  model.set_backend(backend);
  Variable input = fixture.vector_input ? files.load_vectors("input") : files.load("input");
  Variable expected = fixture.vector_output ? files.load_vectors("output") : files.load("output");
  if (fixture.input_dims) input.reshape(fixture.input_dims->folded());
  if (fixture.output_dims) expected.reshape(fixture.output_dims->folded());
  EXPECT_TRUE(outputs_match(model.forward(input), expected)) << fixture.name << " on " << backend;
  for (const IntermediateCheck& check : checks) {
    const Variable expected_layer = check.vectors ? files.load_vectors(check.file) : files.load(check.file);
    EXPECT_TRUE(outputs_match(model.output(check.layer), expected_layer))
        << fixture.name << " on " << backend << ", layer " << check.layer << " vs " << check.file;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryCase, PyTorchFixture,
                         ::testing::Combine(::testing::ValuesIn(all_cases()), ::testing::ValuesIn(all_backends())),
                         [](const ::testing::TestParamInfo<PyTorchFixture::ParamType>& param_info) {
                           return fmt::format("{}_on_{}", std::get<0>(param_info.param).name,
                                              std::get<1>(param_info.param));
                         });

}  // namespace
}  // namespace corgy::testing
