// corgy.Sequential's layers: Python objects that own a C++ layer until Sequential.add takes it, and reach it in the
// model afterwards (so weights can be set before or after adding).
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "arrays.h"
#include "bind_models.h"
#include "corgy/layers/activation_layer.h"
#include "corgy/layers/add.h"
#include "corgy/layers/avgpool2d.h"
#include "corgy/layers/batchnorm.h"
#include "corgy/layers/channel_shuffle.h"
#include "corgy/layers/channel_slice.h"
#include "corgy/layers/concat.h"
#include "corgy/layers/conv2d.h"
#include "corgy/layers/flatten.h"
#include "corgy/layers/linear.h"
#include "corgy/layers/maxpool2d.h"
#include "corgy/layers/softmax.h"
#include "corgy/layers/upsample.h"

namespace corgy::python {

namespace py = pybind11;
using namespace pybind11::literals;

namespace {

/// A layer as Python holds it: owned until added to a Sequential, then found in it by index.
class LayerHandle {
 public:
  explicit LayerHandle(std::unique_ptr<Layer> layer) : owned_(std::move(layer)) {}
  virtual ~LayerHandle() = default;

  /// Calls `change(layer)` on the layer, wherever it is: in the model, with the model locked and told that its
  /// weights changed.
  template <class L, class Change>
  void modify(Change&& change) {
    if (owned_) {
      change(static_cast<L&>(*owned_));
      return;
    }
    std::shared_ptr<SequentialHandle> owner = owner_or_throw();
    ModelHandle::Lock lock(*owner);
    Sequential& model = owner->network();
    change(model.layer_as<L>(index_));
    model.weights_changed();
  }
  template <class L>
  const L& get() const {
    if (owned_) return static_cast<const L&>(*owned_);
    return owner_or_throw()->network().template layer_as<L>(index_);
  }
  std::unique_ptr<Layer> take(const std::shared_ptr<SequentialHandle>& owner) {
    if (refused_) throw Error("Sequential.add refused this layer before; make a new one");
    if (!owned_) throw Error(fmt::format("{} is already layer {} of a model; make a new layer", describe(), index_));
    owner_ = owner;
    return std::move(owned_);
  }
  void added_as(int index) { index_ = index; }
  /// Sequential.add threw (and destroyed the layer): the handle holds nothing any more.
  void refused() {
    owner_.reset();
    refused_ = true;
  }
  std::string describe() const {
    if (refused_) return "a layer that Sequential.add refused";
    if (owned_) return owned_->describe();
    auto owner = owner_.lock();
    if (!owner || owner->closed()) return "a layer of a closed model";
    return owner->network().layer(index_).describe();
  }
  int index() const { return index_; }

 private:
  std::shared_ptr<SequentialHandle> owner_or_throw() const {
    if (refused_) throw Error("Sequential.add refused this layer; make a new one");
    auto owner = owner_.lock();
    if (!owner) throw Error("the model this layer was added to no longer exists");
    return owner;
  }
  std::unique_ptr<Layer> owned_;
  std::weak_ptr<SequentialHandle> owner_;
  int index_ = -1;
  bool refused_ = false;
};

// One C++ type per Python layer class, so each has its own methods and isinstance works.
struct Conv2dHandle : LayerHandle {
  using LayerHandle::LayerHandle;
};
struct LinearHandle : LayerHandle {
  using LayerHandle::LayerHandle;
};
struct BatchNormHandle : LayerHandle {
  using LayerHandle::LayerHandle;
};
struct SimpleLayerHandle : LayerHandle {
  using LayerHandle::LayerHandle;
};

Activation parse_activation(const py::object& value) {
  if (value.is_none()) return Activation::none();
  if (py::isinstance<Activation>(value)) return value.cast<Activation>();
  const auto name = value.cast<std::string>();
  if (name == "none" || name.empty()) return Activation::none();
  if (name == "relu") return Activation::relu();
  if (name == "leaky_relu") return Activation::leaky_relu();
  if (name == "sigmoid") return Activation::sigmoid();
  if (name == "tanh") return Activation::tanh();
  if (name == "mish") return Activation::mish();
  if (name == "swish" || name == "silu") return Activation::swish();
  if (name == "relu6") return Activation::relu6();
  if (name == "hard_swish" || name == "hardswish") return Activation::hard_swish();
  if (name == "gelu") return Activation::gelu();
  throw py::value_error(
      fmt::format("unknown activation '{}': use none, relu, leaky_relu, sigmoid, tanh, mish, swish "
                  "(silu), relu6, hard_swish, gelu, or corgy.Activation.leaky_relu(slope) / "
                  "corgy.Activation.clipped_relu(ceiling)",
                  name));
}

PadMode parse_padding_mode(const std::string& mode) {
  if (mode == "zeros") return PadMode::constant;
  if (mode == "reflect") return PadMode::reflect;
  if (mode == "replicate") return PadMode::edge;
  throw py::value_error(
      fmt::format("unknown padding_mode '{}': use zeros, reflect or replicate (PyTorch's names)", mode));
}

template <class L>
std::shared_ptr<SimpleLayerHandle> simple(L layer) {
  return std::make_shared<SimpleLayerHandle>(std::make_unique<L>(std::move(layer)));
}

std::vector<float> flat_values(py::handle x, std::size_t count, const std::string& what) {
  return values_of(x, {static_cast<py::ssize_t>(count)}, what);
}

}  // namespace

void bind_layers(py::module_& m,
                 py::class_<SequentialHandle, ModelHandle, std::shared_ptr<SequentialHandle>>& sequential) {
  py::class_<Activation>(m, "Activation", "An activation fused into a layer's output (or a string: 'relu', ...).")
      .def_static("none", &Activation::none)
      .def_static("relu", &Activation::relu)
      .def_static("leaky_relu", &Activation::leaky_relu, "slope"_a = 0.1f)
      .def_static("sigmoid", &Activation::sigmoid)
      .def_static("tanh", &Activation::tanh)
      .def_static("mish", &Activation::mish)
      .def_static("swish", &Activation::swish)
      .def_static("clipped_relu", &Activation::clipped_relu, "ceiling"_a)
      .def_static("relu6", &Activation::relu6)
      .def_static("hard_swish", &Activation::hard_swish)
      .def_static("gelu", &Activation::gelu)
      .def("__eq__", [](const Activation& a, const Activation& b) { return a == b; })
      .def("__repr__", [](const Activation& a) { return "corgy.Activation(" + a.str() + ")"; });

  py::class_<LayerHandle, std::shared_ptr<LayerHandle>>(m, "Layer", "A layer for corgy.Sequential.add.")
      .def("__repr__", [](const LayerHandle& self) { return "<corgy layer " + self.describe() + ">"; })
      .def_property_readonly("index", &LayerHandle::index, "Its index in the model it was added to (-1 before).");

  py::class_<Conv2dHandle, LayerHandle, std::shared_ptr<Conv2dHandle>>(m, "Conv2d", R"doc(2-D convolution.

Input (N, in_channels, H, W) -> (N, out_channels, Ho, Wo), Ho = (H + 2 padding - dilation (kernel - 1) - 1) / stride
+ 1. Weights (out_channels, in_channels / groups, kernel, kernel) as PyTorch's Conv2d.weight, zero until set;
padding_mode 'zeros', 'reflect' or 'replicate'; activation fused into the output.)doc")
      .def(py::init([](int in_channels, int out_channels, int kernel, int stride, int padding, int dilation, int groups,
                       bool bias, const py::object& activation, const std::string& padding_mode) {
             Conv2dOptions options{.in_channels = in_channels,
                                   .out_channels = out_channels,
                                   .kernel = kernel,
                                   .stride = stride,
                                   .padding = padding,
                                   .padding_mode = parse_padding_mode(padding_mode),
                                   .dilation = dilation,
                                   .groups = groups,
                                   .bias = bias,
                                   .activation = parse_activation(activation)};
             return std::make_shared<Conv2dHandle>(std::make_unique<Conv2d>(options));
           }),
           "in_channels"_a, "out_channels"_a, "kernel"_a = 3, "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1,
           "groups"_a = 1, "bias"_a = true, "activation"_a = py::none(), "padding_mode"_a = "zeros")
      .def(
          "set_weights",
          [](Conv2dHandle& self, py::handle weights) {
            self.modify<Conv2d>([&](Conv2d& conv) {
              const Shape s = conv.weights().shape();
              conv.set_weights(values_of(weights, {s.n, s.c, s.h, s.w}, "Conv2d weights"));
            });
          },
          "Copies OIHW weights in (any numeric array of exactly the weights' shape).", "weights"_a)
      .def(
          "set_bias",
          [](Conv2dHandle& self, py::handle bias) {
            self.modify<Conv2d>([&](Conv2d& conv) {
              conv.set_bias(flat_values(bias, static_cast<std::size_t>(conv.desc().out_channels), "Conv2d bias"));
            });
          },
          "Copies the bias (out_channels,) in.", "bias"_a)
      .def_property_readonly(
          "weights", [](const Conv2dHandle& self) { return array_of(self.get<Conv2d>().weights(), true); },
          "A copy of the weights, OIHW.");

  py::class_<LinearHandle, LayerHandle, std::shared_ptr<LinearHandle>>(m, "Linear", R"doc(Fully connected layer.

Input (N, in_features) (or (N, C, H, W) with C*H*W = in_features, read in NCHW order) -> (N, out_features, 1, 1).
Weights (out_features, in_features) as PyTorch's Linear.weight.)doc")
      .def(py::init([](int in_features, int out_features, bool bias, const py::object& activation) {
             LinearOptions options{.in_features = in_features,
                                   .out_features = out_features,
                                   .bias = bias,
                                   .activation = parse_activation(activation)};
             return std::make_shared<LinearHandle>(std::make_unique<Linear>(options));
           }),
           "in_features"_a, "out_features"_a, "bias"_a = true, "activation"_a = py::none())
      .def(
          "set_weights",
          [](LinearHandle& self, py::handle weights) {
            self.modify<Linear>([&](Linear& linear) {
              const auto& o = linear.options();
              linear.set_weights(values_of(weights, {o.out_features, o.in_features}, "Linear weights"));
            });
          },
          "Copies the (out_features, in_features) weights in.", "weights"_a)
      .def(
          "set_bias",
          [](LinearHandle& self, py::handle bias) {
            self.modify<Linear>([&](Linear& linear) {
              linear.set_bias(
                  flat_values(bias, static_cast<std::size_t>(linear.options().out_features), "Linear bias"));
            });
          },
          "Copies the bias (out_features,) in.", "bias"_a)
      .def_property_readonly(
          "weights",
          [](const LinearHandle& self) {
            const Linear& linear = self.get<Linear>();
            return array_of(linear.weights(), {linear.options().out_features, linear.options().in_features}, true);
          },
          "A copy of the weights, (out_features, in_features).");

  py::class_<BatchNormHandle, LayerHandle, std::shared_ptr<BatchNormHandle>>(
      m, "BatchNorm2d", "Inference batch norm per channel: gamma * (x - mean) / sqrt(variance + epsilon) + beta.")
      .def(py::init(
               [](int channels) { return std::make_shared<BatchNormHandle>(std::make_unique<BatchNorm>(channels)); }),
           "channels"_a)
      .def(
          "set_parameters",
          [](BatchNormHandle& self, py::handle gamma, py::handle beta, py::handle mean, py::handle variance,
             float epsilon) {
            self.modify<BatchNorm>([&](BatchNorm& bn) {
              const auto c = static_cast<std::size_t>(bn.scale().count());
              const auto g = flat_values(gamma, c, "BatchNorm2d gamma"), b = flat_values(beta, c, "BatchNorm2d beta"),
                         mu = flat_values(mean, c, "BatchNorm2d mean"),
                         var = flat_values(variance, c, "BatchNorm2d variance");
              bn.set_parameters({.gamma = g, .beta = b, .mean = mu, .variance = var, .epsilon = epsilon});
            });
          },
          "Sets the (channels,) parameters, as PyTorch's weight, bias, running_mean, running_var, eps.", "gamma"_a,
          "beta"_a, "mean"_a, "variance"_a, "epsilon"_a = 1e-5f);

  py::class_<SimpleLayerHandle, LayerHandle, std::shared_ptr<SimpleLayerHandle>> simple_layer(
      m, "SimpleLayer", "A layer without weights (made by corgy.MaxPool2d, corgy.ReLU, ...).");

  m.def(
      "MaxPool2d",
      [](int kernel, int stride, int padding) {
        return simple(MaxPool2d({.kernel = kernel, .stride = stride, .padding = padding}));
      },
      "Max pooling: (N, C, H, W) -> (N, C, Ho, Wo); stride 0 means stride = kernel.", "kernel"_a = 2, "stride"_a = 0,
      "padding"_a = 0);
  m.def(
      "AvgPool2d",
      [](int kernel, int stride, int padding, bool count_include_pad) {
        return simple(AvgPool2d(
            {.kernel = kernel, .stride = stride, .padding = padding, .count_include_pad = count_include_pad}));
      },
      "Average pooling; padded cells count as zeros unless count_include_pad=False.", "kernel"_a = 2, "stride"_a = 0,
      "padding"_a = 0, "count_include_pad"_a = true);
  m.def(
      "GlobalAvgPool2d", [] { return simple(AvgPool2d::global()); },
      "(N, C, H, W) -> (N, C, 1, 1), the mean of each plane.");
  m.def("ReLU", [] { return simple(ActivationLayer(Activation::relu())); });
  m.def(
      "LeakyReLU", [](float slope) { return simple(ActivationLayer(Activation::leaky_relu(slope))); },
      "slope"_a = 0.1f);
  m.def("Sigmoid", [] { return simple(ActivationLayer(Activation::sigmoid())); });
  m.def("Tanh", [] { return simple(ActivationLayer(Activation::tanh())); });
  m.def(
      "ActivationLayer",
      [](const py::object& activation) { return simple(ActivationLayer(parse_activation(activation))); },
      "An activation as a layer of its own.", "activation"_a);
  m.def(
      "Softmax", [] { return simple(Softmax()); },
      "Softmax over C*H*W of each sample ((N, classes, 1, 1) after Linear).");
  m.def(
      "Flatten", [] { return simple(Flatten()); }, "(N, C, H, W) -> (N, C*H*W, 1, 1), no copy.");
  m.def(
      "Add", [](const py::object& activation) { return simple(Add(parse_activation(activation))); },
      "Element-wise sum of two inputs of one shape, then the activation; add it with inputs=[a, b].",
      "activation"_a = py::none());
  m.def(
      "Concat", [] { return simple(Concat()); }, "Concatenation along channels of any number of inputs.");
  m.def(
      "Upsample", [](int scale) { return simple(Upsample(scale)); },
      "Nearest-neighbour upsampling by an integer scale.", "scale"_a = 2);
  m.def(
      "ChannelShuffle", [](int groups) { return simple(ChannelShuffle(groups)); },
      "ShuffleNet's channel shuffle: (N, C, H, W) -> the same shape, output channel j * groups + i is input channel "
      "i * (C / groups) + j.",
      "groups"_a);
  m.def(
      "ChannelSlice", [](int start, int stop, int step) { return simple(ChannelSlice(start, stop, step)); },
      "Input channels start, start + step, ... below stop: (N, C, H, W) -> (N, ceil((stop - start) / step), H, W).",
      "start"_a, "stop"_a, "step"_a = 1);

  sequential
      .def(
          "add",
          [](std::shared_ptr<SequentialHandle> self, LayerHandle& layer, std::optional<std::vector<int>> inputs) {
            ModelHandle::Lock lock(*self);
            Sequential& model = self->network();
            std::unique_ptr<Layer> owned = layer.take(self);
            try {
              layer.added_as(model.add(std::move(owned), inputs.value_or(std::vector<int>{})));
            } catch (...) {
              layer.refused();  // Sequential::add destroyed the layer it took
              throw;
            }
            return layer.index();
          },
          "Appends a layer fed by the layers at `inputs` (indices returned by earlier add calls; -1 is the model's\n"
          "input), by default by the previous layer. Returns the new layer's index.",
          "layer"_a, "inputs"_a = py::none())
      .def(
          "mark_output",
          [](SequentialHandle& self, int layer) {
            ModelHandle::Lock lock(self);
            self.network().mark_output(layer);
          },
          "Keeps a layer's output readable after a forward (output(layer)).", "layer"_a)
      .def(
          "output",
          [](SequentialHandle& self, int layer, bool copy) {
            ModelHandle::Lock lock(self);
            return array_of(self.network().output(layer), copy);
          },
          "The output of `layer` from the last forward (the last layer's, or one marked with mark_output).", "layer"_a,
          py::kw_only(), "copy"_a = false)
      .def("__len__", [](SequentialHandle& self) { return self.network().size(); })
      .def_readonly_static("model_input", &Sequential::model_input);
}

}  // namespace corgy::python
