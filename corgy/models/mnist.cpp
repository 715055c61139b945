#include "corgy/models/mnist.h"

#include <fmt/format.h>

#include <utility>

#include "corgy/error.h"
#include "corgy/io/image.h"
#include "corgy/io/npy.h"
#include "corgy/layers/conv2d.h"
#include "corgy/layers/flatten.h"
#include "corgy/layers/linear.h"
#include "corgy/layers/maxpool2d.h"
#include "corgy/layers/softmax.h"

namespace corgy {

namespace {

constexpr int conv1_channels = 32;
constexpr int conv2_channels = 64;
// Spatial size after the two 2x2 poolings: the input of fc1 is (64, 7, 7).
constexpr int fc1_input_side = mnist_side / 4;

std::string file_in(const std::string& directory, const std::string& name) {
  return directory.empty() || directory.back() == '/' ? directory + name : directory + "/" + name;
}

/// A PyTorch tensor from a .npy file into a layer, whose weight shape it must have (a matching count is not enough:
/// a transposed file would load as garbage).
template <class LayerWithWeights>
void load_npy_parameters(LayerWithWeights& layer, const std::string& directory, const std::string& name) {
  const std::string weight_path = file_in(directory, name + ".weight.npy");
  const Variable weights = load_npy(weight_path);
  if (weights.shape() != layer.weights().shape()) {
    throw Error(fmt::format("{}: {} needs weights of shape {}, the file has {}", weight_path, layer.describe(),
                            layer.weights().shape().str(), weights.shape().str()));
  }
  layer.set_weights(weights.values());
  const std::string bias_path = file_in(directory, name + ".bias.npy");
  const Variable bias = load_npy(bias_path);
  if (bias.shape() != layer.bias().shape()) {
    throw Error(fmt::format("{}: {} needs a bias of shape {}, the file has {}", bias_path, layer.describe(),
                            layer.bias().shape().str(), bias.shape().str()));
  }
  layer.set_bias(bias.values());
}

void load_raw_parameters(Sequential& model, const std::string& directory, const MnistWeightOptions& options) {
  for (const auto& [index, name] : {std::pair{MnistLayers::conv1, "conv1"}, std::pair{MnistLayers::conv2, "conv2"}}) {
    auto& conv = model.layer_as<Conv2d>(index);
    load_raw_weights(conv, file_in(directory, fmt::format("weights_{}.dat", name)), options.conv_layout);
    load_raw_bias(conv, file_in(directory, fmt::format("bias_{}.dat", name)));
  }
  auto& fc1 = model.layer_as<Linear>(MnistLayers::fc1);
  load_raw_weights(fc1, file_in(directory, "weights_fc1.dat"), options.linear_layout,
                   Shape{1, conv2_channels, fc1_input_side, fc1_input_side});
  load_raw_bias(fc1, file_in(directory, "bias_fc1.dat"));
}

}  // namespace

Sequential build_mnist_model() {
  const Activation relu = Activation::relu();
  Sequential model;
  model.add(Conv2d({.in_channels = 1, .out_channels = conv1_channels, .kernel = 5, .padding = 2, .activation = relu}));
  model.add(MaxPool2d({.kernel = 2}));
  model.add(Conv2d(
      {.in_channels = conv1_channels, .out_channels = conv2_channels, .kernel = 5, .padding = 2, .activation = relu}));
  model.add(MaxPool2d({.kernel = 2}));
  model.add(Flatten());
  model.add(Linear({.in_features = conv2_channels * fc1_input_side * fc1_input_side, .out_features = mnist_classes}));
  model.add(Softmax());
  model.mark_output(MnistLayers::fc1);
  return model;
}

void load_mnist_weights(Sequential& model, const std::string& directory, const MnistWeightOptions& options) {
  if (options.format == MnistWeightFormat::raw) {
    load_raw_parameters(model, directory, options);
    return;
  }
  load_npy_parameters(model.layer_as<Conv2d>(MnistLayers::conv1), directory, "conv1");
  load_npy_parameters(model.layer_as<Conv2d>(MnistLayers::conv2), directory, "conv2");
  load_npy_parameters(model.layer_as<Linear>(MnistLayers::fc1), directory, "fc1");
}

Sequential load_mnist_model(const std::string& directory, const MnistWeightOptions& options) {
  Sequential model = build_mnist_model();
  load_mnist_weights(model, directory, options);
  return model;
}

Variable load_mnist_digit(const std::string& path, bool resize) {
  Variable image = load_image(path, 1);
  const Shape& s = image.shape();
  if (s.h == mnist_side && s.w == mnist_side) return image;
  if (!resize) {
    throw Error(
        fmt::format("{}: an MNIST digit must be {} x {} pixels, the image is {} x {} (width x height); "
                    "resize it, or ask for resizing",
                    path, mnist_side, mnist_side, s.w, s.h));
  }
  return resize_image(image, mnist_side, mnist_side);
}

}  // namespace corgy
