#include "corgy/io/onnx_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "corgy/error.h"
#include "corgy/layers/activation_layer.h"
#include "corgy/layers/add.h"
#include "corgy/layers/batchnorm.h"
#include "corgy/layers/channel_affine.h"
#include "corgy/layers/conv2d.h"
#include "corgy/layers/instance_norm.h"
#include "corgy/layers/linear.h"

namespace corgy::onnx_import {

static_assert(std::endian::native == std::endian::little, "ONNX raw_data is little-endian, as this host must be");

std::vector<std::int64_t> Constant::as_integers() const {
  if (integer) return integers;
  std::vector<std::int64_t> values(floats.size());
  // Saturating (NaN as 0): a float outside int64's range must not reach an undefined conversion.
  constexpr float bound = 9.2e18f;
  for (std::size_t i = 0; i < floats.size(); ++i) {
    const float v = floats[i];
    values[i] = std::isnan(v) ? 0 : static_cast<std::int64_t>(std::clamp(v, -bound, bound));
  }
  return values;
}

std::vector<float> Constant::as_floats() const {
  if (!integer) return floats;
  std::vector<float> values(integers.size());
  for (std::size_t i = 0; i < integers.size(); ++i) values[i] = static_cast<float>(integers[i]);
  return values;
}

std::string dims_text(std::span<const std::int64_t> dims) {
  std::string text = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) text += ", ";
    text += dims[i] < 0 ? std::string("?") : std::to_string(dims[i]);
  }
  return text + (dims.size() == 1 ? ",)" : ")");
}

// --- tensors of the file --------------------------------------------------------------------------------------------

namespace {

/// The element size of the data types read here; 0 for the others.
std::size_t element_size(int data_type) {
  switch (data_type) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::INT32: return 4;
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::DOUBLE: return 8;
    case onnx::TensorProto::BOOL:
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::INT8: return 1;
    default: return 0;
  }
}

template <typename T>
T read_raw(const std::string& raw, std::size_t i) {
  T value;
  std::memcpy(&value, raw.data() + i * sizeof(T), sizeof(T));
  return value;
}

}  // namespace

Constant read_tensor(const onnx::TensorProto& tensor, const LoadLimits& limits, const std::string& what) {
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL || tensor.external_data_size() > 0) {
    throw Error(
        fmt::format("{}: its data is stored in an external file, which corgy does not read (models over "
                    "2 GB): re-export the model with its weights inside",
                    what));
  }
  const int type = tensor.data_type();
  const std::size_t size = element_size(type);
  if (size == 0) {
    throw Error(
        fmt::format("{}: data type {} is not supported (float, double, int64, int32, int8, uint8 and bool "
                    "are)",
                    what, onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(type))));
  }
  Constant constant;
  std::uint64_t count = 1;
  for (std::int64_t dim : tensor.dims()) {
    if (dim < 0) throw Error(fmt::format("{}: negative dimension {}", what, dim));
    constant.dims.push_back(dim);
    if (__builtin_mul_overflow(count, static_cast<std::uint64_t>(dim), &count)) count = UINT64_MAX;
  }
  check_tensor_bytes(limits, "", what, float32_bytes(constant.dims));
  // What the file holds: raw little-endian bytes, or one of the typed repeated fields.
  std::uint64_t stored = 0;
  if (tensor.has_raw_data()) {
    stored = tensor.raw_data().size() / size;
    if (tensor.raw_data().size() % size != 0) stored = UINT64_MAX;
  } else if (type == onnx::TensorProto::FLOAT) {
    stored = static_cast<std::uint64_t>(tensor.float_data_size());
  } else if (type == onnx::TensorProto::INT64) {
    stored = static_cast<std::uint64_t>(tensor.int64_data_size());
  } else if (type == onnx::TensorProto::DOUBLE) {
    stored = static_cast<std::uint64_t>(tensor.double_data_size());
  } else {
    stored = static_cast<std::uint64_t>(tensor.int32_data_size());  // int32, int8, uint8 and bool live here
  }
  if (stored != count) {
    throw Error(fmt::format("{}: declares shape {} = {} values, but its data holds {}", what, dims_text(constant.dims),
                            count,
                            stored == UINT64_MAX ? fmt::format("{} bytes, not whole values", tensor.raw_data().size())
                                                 : std::to_string(stored)));
  }
  const auto n = static_cast<std::size_t>(count);
  const std::string& raw = tensor.raw_data();
  const bool is_raw = tensor.has_raw_data();
  switch (type) {
    case onnx::TensorProto::FLOAT:
      constant.floats.resize(n);
      for (std::size_t i = 0; i < n; ++i)
        constant.floats[i] = is_raw ? read_raw<float>(raw, i) : tensor.float_data(static_cast<int>(i));
      break;
    case onnx::TensorProto::DOUBLE:
      constant.floats.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        constant.floats[i] =
            static_cast<float>(is_raw ? read_raw<double>(raw, i) : tensor.double_data(static_cast<int>(i)));
      }
      break;
    case onnx::TensorProto::INT64:
      constant.integer = true;
      constant.integers.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        constant.integers[i] = is_raw ? read_raw<std::int64_t>(raw, i) : tensor.int64_data(static_cast<int>(i));
      }
      break;
    case onnx::TensorProto::INT32:
      constant.integer = true;
      constant.integers.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        constant.integers[i] = is_raw ? read_raw<std::int32_t>(raw, i) : tensor.int32_data(static_cast<int>(i));
      }
      break;
    default:  // one byte: bool, int8, uint8
      constant.integer = true;
      constant.integers.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        if (!is_raw) {
          constant.integers[i] = tensor.int32_data(static_cast<int>(i));
        } else if (type == onnx::TensorProto::INT8) {
          constant.integers[i] = read_raw<std::int8_t>(raw, i);
        } else {
          constant.integers[i] = read_raw<std::uint8_t>(raw, i);
        }
      }
  }
  return constant;
}

// --- the graph ------------------------------------------------------------------------------------------------------

Graph::Graph(Sequential& model, std::string source, int opset, const LoadLimits& limits)
    : model_(model), source_(std::move(source)), opset_(opset), limits_(limits) {}

void Graph::add_input(const std::string& name, std::vector<std::int64_t> dims) {
  Value& value = values_[name];
  value.tensor.dims = std::move(dims);
  value.tensor.layer = Sequential::model_input;
}

const Value* Graph::find(const std::string& name) const {
  const auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

int Graph::remaining_uses(const std::string& name) const {
  const auto it = remaining_uses_.find(name);
  return it == remaining_uses_.end() ? 0 : it->second;
}

void Graph::map_node(const onnx::NodeProto& node) {
  node_ = &node;
  const OperatorMapping* mapping = find_operator(node.op_type(), opset_);
  if (!mapping) fail("not supported");  // load_onnx reports these before mapping; kept as a guard
  mapping->map(*this);
  for (int k = 0; k < node.output_size(); ++k) {
    if (output_used(k) && !find(node.output(k))) fail(fmt::format("output {} is read but was not computed", k));
  }
  for (const std::string& name : node.input()) {
    if (name.empty() || --remaining_uses_[name] > 0) continue;
    // A constant nobody reads any more (its layers took copies): freed now, so that the weights are not held twice
    // while the rest of the graph is built.
    const auto value = values_.find(name);
    if (value != values_.end() && value->second.constant) values_.erase(value);
  }
  node_ = nullptr;
}

void Graph::fail(std::string_view message) const {
  throw Error(
      fmt::format("{}: node '{}' ({}, opset {}): {}", source_, node_->name(), node_->op_type(), opset_, message));
}

bool Graph::has_input(int i) const { return i < node_->input_size() && !node_->input(i).empty(); }

const Value& Graph::input_value(int i) const {
  if (!has_input(i)) fail(fmt::format("input {} is missing", i));
  const Value* value = find(node_->input(i));
  if (!value) fail(fmt::format("input '{}' has no value", node_->input(i)));  // load_onnx checks this first
  return *value;
}

bool Graph::input_is_constant(int i) const { return has_input(i) && input_value(i).constant.has_value(); }

const Constant& Graph::constant_input(int i, std::string_view what) const {
  const Constant& c = constant_input_with_free_batch(i, what);
  if (c.holds_free_batch()) {
    fail(
        fmt::format("{} (input {}, '{}') holds the batch size, which this export leaves free (it read it with "
                    "Shape); corgy keeps a free batch only as the first dimension of a Reshape: export with a fixed "
                    "batch",
                    what, i, node_->input(i)));
  }
  return c;
}

const Constant& Graph::constant_input_with_free_batch(int i, std::string_view what) const {
  if (!has_input(i)) fail(fmt::format("{} (input {}) is missing", what, i));
  const Value& value = input_value(i);
  if (!value.constant) {
    fail(
        fmt::format("{} (input {}, '{}') must be a constant (an initializer or a Constant node), not computed "
                    "at run time",
                    what, i, node_->input(i)));
  }
  return *value.constant;
}

const Tensor& Graph::tensor_input(int i) const {
  const Value& value = input_value(i);
  if (value.constant) {
    fail(fmt::format("input {} ('{}') is a constant; corgy runs this operator on computed tensors only", i,
                     node_->input(i)));
  }
  return value.tensor;
}

bool Graph::output_used(int k) const { return k < node_->output_size() && remaining_uses(node_->output(k)) > 0; }

void Graph::require_unused_outputs_from(int first) const {
  for (int k = first; k < node_->output_size(); ++k) {
    if (output_used(k))
      fail(fmt::format("output {} ('{}') is read, and corgy computes output 0 only", k, node_->output(k)));
  }
}

const onnx::AttributeProto* Graph::attribute(std::string_view name) const {
  for (const onnx::AttributeProto& attribute : node_->attribute()) {
    if (attribute.name() == name) return &attribute;
  }
  return nullptr;
}

std::int64_t Graph::attribute_int(std::string_view name, std::int64_t fallback) const {
  const onnx::AttributeProto* a = attribute(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::INT) fail(fmt::format("attribute {} must be an integer", name));
  check_attribute_integer(name, a->i());
  return a->i();
}

float Graph::attribute_float(std::string_view name, float fallback) const {
  const onnx::AttributeProto* a = attribute(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::FLOAT) fail(fmt::format("attribute {} must be a float", name));
  return a->f();
}

std::string Graph::attribute_string(std::string_view name, std::string_view fallback) const {
  const onnx::AttributeProto* a = attribute(name);
  if (!a) return std::string(fallback);
  if (a->type() != onnx::AttributeProto::STRING) fail(fmt::format("attribute {} must be a string", name));
  return a->s();
}

std::vector<std::int64_t> Graph::attribute_ints(std::string_view name) const {
  const onnx::AttributeProto* a = attribute(name);
  if (!a) return {};
  if (a->type() != onnx::AttributeProto::INTS) fail(fmt::format("attribute {} must be a list of integers", name));
  for (std::int64_t value : a->ints()) check_attribute_integer(name, value);
  return {a->ints().begin(), a->ints().end()};
}

void Graph::check_attribute_integer(std::string_view name, std::int64_t value) const {
  // Sizes, pads, strides and axes of real models are far smaller; larger values would overflow shape arithmetic.
  constexpr std::int64_t largest = std::int64_t{1} << 30;
  if (value < -largest || value > largest) {
    fail(fmt::format("attribute {} holds {}, outside [-2^30, 2^30]", name, value));
  }
}

std::vector<float> Graph::attribute_floats(std::string_view name) const {
  const onnx::AttributeProto* a = attribute(name);
  if (!a) return {};
  if (a->type() != onnx::AttributeProto::FLOATS) fail(fmt::format("attribute {} must be a list of floats", name));
  return {a->floats().begin(), a->floats().end()};
}

Value& Graph::output_value(int k) {
  if (k >= node_->output_size() || node_->output(k).empty()) fail(fmt::format("output {} is missing", k));
  return values_[node_->output(k)];
}

void Graph::set_constant_output(Constant constant, int k) {
  check_tensor_bytes(limits_, source_, fmt::format("constant '{}'", node_->output(k)), float32_bytes(constant.dims));
  Value& value = output_value(k);
  value.constant = std::move(constant);
  value.tensor = {};
}

void Graph::track(const Tensor& tensor, const std::string& name) {
  if (tensor.pending >= 0) pending_[tensor.pending].names.push_back(name);
}

void Graph::set_tensor_output(const Tensor& tensor, int k) {
  Value& value = output_value(k);
  value.constant.reset();
  value.tensor = tensor;
  track(tensor, node_->output(k));
}

void Graph::set_alias_output(int i, std::vector<std::int64_t> dims) {
  Tensor tensor = tensor_input(i);
  tensor.dims = std::move(dims);
  set_tensor_output(tensor);
}

Tensor Graph::intermediate(std::unique_ptr<Layer> layer, const std::vector<Tensor>& inputs,
                           std::vector<std::int64_t> dims) {
  // Every layer output at batch 1 (unknown sizes as 1) must fit the tensor limit, as for darknet cfgs: a graph
  // that upsamples or pads a small input into gigabytes gets an error here, not an allocation at forward time.
  std::vector<std::int64_t> one(dims.size());
  for (std::size_t a = 0; a < dims.size(); ++a) one[a] = a == 0 ? 1 : std::max<std::int64_t>(dims[a], 1);
  check_tensor_bytes(limits_, "",
                     fmt::format("{}: node '{}' ({}, opset {}): output {}", source_, node_->name(), node_->op_type(),
                                 opset_, dims_text(dims)),
                     float32_bytes(one));
  std::vector<int> indices;
  for (const Tensor& input : inputs) indices.push_back(layer_index(input));
  pending_.push_back({std::move(layer), std::move(indices), Tensor::no_layer, {}});
  return {std::move(dims), Tensor::no_layer, static_cast<int>(pending_.size()) - 1};
}

void Graph::add_layer(std::unique_ptr<Layer> layer, const std::vector<Tensor>& inputs, std::vector<std::int64_t> dims) {
  set_tensor_output(intermediate(std::move(layer), inputs, std::move(dims)));
}

int Graph::layer_index(const Tensor& tensor) {
  if (tensor.layer != Tensor::no_layer) return tensor.layer;
  Pending& pending = pending_.at(static_cast<std::size_t>(tensor.pending));
  if (pending.index == Tensor::no_layer) pending.index = model_.add(std::move(pending.layer), pending.inputs);
  return pending.index;
}

int Graph::output_layer(const std::string& name, std::vector<std::int64_t>& dims) {
  const Value* value = find(name);
  if (!value) throw Error(fmt::format("{}: graph output '{}' is computed by no node", source_, name));
  if (value->constant) {
    throw Error(
        fmt::format("{}: graph output '{}' is a constant; corgy computes outputs from the input", source_, name));
  }
  if (value->tensor.layer == Sequential::model_input) {
    throw Error(fmt::format("{}: graph output '{}' is the graph input itself", source_, name));
  }
  dims = value->tensor.dims;
  return layer_index(value->tensor);
}

// --- fusion ---------------------------------------------------------------------------------------------------------

Layer* Graph::fusible_producer(const Tensor& tensor) const {
  if (tensor.layer != Tensor::no_layer || tensor.pending < 0) return nullptr;
  const Pending& pending = pending_[tensor.pending];
  if (pending.index != Tensor::no_layer) return nullptr;
  // Readers still to come: every name that refers to this layer's output, less this node's own reads of them (they
  // are what is being mapped). Graph outputs count as readers that never go away.
  int readers = 0;
  for (const std::string& name : pending.names) readers += remaining_uses(name);
  if (node_) {
    for (const std::string& input : node_->input()) {
      if (std::find(pending.names.begin(), pending.names.end(), input) != pending.names.end()) --readers;
    }
  }
  return readers == 0 ? pending.layer.get() : nullptr;
}

Layer* Graph::fusible_producer(int i) const {
  // Operators that read this tensor twice (Mul(x, x)) must not change its producer.
  const std::string& name = node_->input(i);
  if (std::count(node_->input().begin(), node_->input().end(), name) != 1) return nullptr;
  return fusible_producer(tensor_input(i));
}

void Graph::replace_pending(const Tensor& tensor, std::unique_ptr<Layer> layer) {
  pending_.at(static_cast<std::size_t>(tensor.pending)).layer = std::move(layer);
}

namespace {

/// A copy of `conv` with `activation` fused (its weights and bias copied).
std::unique_ptr<Conv2d> conv_with(const Conv2d& conv, Activation activation) {
  const Conv2dDesc& d = conv.desc();
  auto fused = std::make_unique<Conv2d>(Conv2dOptions{.in_channels = d.in_channels,
                                                      .out_channels = d.out_channels,
                                                      .window = d.window(),
                                                      .groups = d.groups,
                                                      .bias = conv.has_bias(),
                                                      .activation = activation});
  fused->set_weights(conv.weights().values());
  if (conv.has_bias()) fused->set_bias(conv.bias().values());
  return fused;
}

std::unique_ptr<Linear> linear_with(const Linear& linear, Activation activation) {
  LinearOptions options = linear.options();
  options.activation = activation;
  auto fused = std::make_unique<Linear>(options);
  fused->set_weights(linear.weights().values());
  if (linear.has_bias()) fused->set_bias(linear.bias().values());
  return fused;
}

bool is_identity(const std::vector<float>& scale, const std::vector<float>& shift) {
  return std::all_of(scale.begin(), scale.end(), [](float s) { return s == 1.0f; }) &&
         std::all_of(shift.begin(), shift.end(), [](float t) { return t == 0.0f; });
}

}  // namespace

Tensor Graph::activate(const Tensor& x, Activation activation) {
  if (activation.kind == ActivationKind::none) return x;
  if (Layer* producer = fusible_producer(x)) {
    if (auto* conv = dynamic_cast<Conv2d*>(producer); conv && conv->desc().activation.kind == ActivationKind::none) {
      replace_pending(x, conv_with(*conv, activation));
      return x;
    }
    if (auto* linear = dynamic_cast<Linear*>(producer);
        linear && linear->options().activation.kind == ActivationKind::none) {
      replace_pending(x, linear_with(*linear, activation));
      return x;
    }
    if (auto* add = dynamic_cast<Add*>(producer); add && add->activation().kind == ActivationKind::none) {
      replace_pending(x, std::make_unique<Add>(activation));
      return x;
    }
    if (auto* affine = dynamic_cast<ChannelAffine*>(producer);
        affine && affine->activation().kind == ActivationKind::none) {
      // DenseNet's batch norm + ReLU before each convolution: one pass over the concatenated features, not two.
      auto fused = std::make_unique<ChannelAffine>(affine->channels(), activation);
      fused->set_parameters(affine->scale().values(), affine->shift().values());
      replace_pending(x, std::move(fused));
      return x;
    }
    if (auto* norm = dynamic_cast<InstanceNorm*>(producer); norm && norm->activation().kind == ActivationKind::none) {
      auto fused = std::make_unique<InstanceNorm>(norm->channels(), norm->epsilon(), activation);
      fused->set_parameters(norm->scale().values(), norm->shift().values());
      replace_pending(x, std::move(fused));
      return x;
    }
  }
  return intermediate(std::make_unique<ActivationLayer>(activation), {x}, x.dims);
}

Tensor Graph::channel_affine(const Tensor& x, std::vector<float> scale, std::vector<float> shift) {
  if (is_identity(scale, shift)) return x;
  const auto channels = static_cast<int>(scale.size());
  if (Layer* producer = fusible_producer(x)) {
    // A convolution or linear layer followed by y = x * s + t is the same layer with its output rows scaled by s
    // and its bias scaled by s and shifted by t: the batch-norm fold with mean 0, variance 1 and epsilon 0.
    if (auto* conv = dynamic_cast<Conv2d*>(producer); conv && conv->desc().activation.kind == ActivationKind::none) {
      const std::vector<float> zeros(scale.size(), 0.0f), ones(scale.size(), 1.0f);
      conv->fold_batch_norm({scale, shift, zeros, ones, 0.0f});
      return x;
    }
    if (auto* linear = dynamic_cast<Linear*>(producer);
        linear && linear->options().activation.kind == ActivationKind::none) {
      const int in = linear->options().in_features;
      std::vector<float> bias(scale.size(), 0.0f);
      if (linear->has_bias()) bias.assign(linear->bias().values().begin(), linear->bias().values().end());
      float* weights = linear->weights().data();
      for (std::size_t o = 0; o < scale.size(); ++o) {
        for (int i = 0; i < in; ++i)
          weights[o * static_cast<std::size_t>(in) + static_cast<std::size_t>(i)] *= scale[o];
        bias[o] = bias[o] * scale[o] + shift[o];
      }
      linear->set_bias(bias);
      return x;
    }
    if (auto* affine = dynamic_cast<ChannelAffine*>(producer);
        affine && affine->activation().kind == ActivationKind::none) {
      std::vector<float> s(affine->scale().values().begin(), affine->scale().values().end());
      std::vector<float> t(affine->shift().values().begin(), affine->shift().values().end());
      for (std::size_t c = 0; c < s.size(); ++c) {
        s[c] *= scale[c];
        t[c] = t[c] * scale[c] + shift[c];
      }
      affine->set_parameters(s, t);
      return x;
    }
  }
  auto layer = std::make_unique<ChannelAffine>(channels);
  layer->set_parameters(scale, shift);
  return intermediate(std::move(layer), {x}, x.dims);
}

std::optional<std::vector<float>> Graph::per_channel(const Constant& c, const Tensor& x) const {
  const auto rank = x.dims.size();
  if (c.dims.size() > rank) return std::nullopt;
  if (rank < 2 || x.dims[1] < 0) fail(fmt::format("needs the channel count of its input {}", dims_text(x.dims)));
  const auto channels = static_cast<std::size_t>(x.dims[1]);
  // Right-aligned (NumPy broadcasting): the constant's axis j lines up with x's axis j + rank - c.rank.
  std::size_t channel_extent = 1;
  for (std::size_t j = 0; j < c.dims.size(); ++j) {
    const std::size_t axis = j + rank - c.dims.size();
    if (c.dims[j] == 1) continue;
    if (axis != 1 || static_cast<std::size_t>(c.dims[j]) != channels) return std::nullopt;
    channel_extent = channels;
  }
  const std::vector<float> values = c.as_floats();
  if (values.empty()) return std::nullopt;
  std::vector<float> result(channels);
  for (std::size_t k = 0; k < channels; ++k) result[k] = values[channel_extent == 1 ? 0 : k];
  return result;
}

}  // namespace corgy::onnx_import
