// Internal to the ONNX loader (corgy/io/onnx*.cpp), not installed: the state of a graph while its nodes become
// corgy layers, and the helpers the operator functions of onnx_ops.cpp share.
//
// Every value of the graph is a constant (an initializer, a Constant node, or a node folded at load time) or a
// tensor: the output of a corgy layer. A layer is first *pending*: kept aside until something needs its index, so
// that the node after it can still change it when it is its only reader (fold a batch norm or a constant scale into
// a convolution, fuse an activation). Pending layers are added to the Sequential in an order that keeps every
// layer after its inputs.
#pragma once

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "corgy/io/load_limits.h"
#include "corgy/layers/layer.h"
#include "corgy/model/sequential.h"

namespace corgy::onnx_import {

/// What Shape gives for the batch of a tensor whose batch is free (an export with `dynamic_axes` on the batch): the
/// shape computations of such exports (ShuffleNet's channel shuffle, YOLOv8's head, `x.view(x.size(0), -1)`) carry
/// it through Gather, Slice, Concat, Squeeze, Unsqueeze, Identity and integer Casts of constants to the first
/// dimension of a Reshape target, where it means "the batch". Any other use of it fails (Graph::constant_input).
/// A value no exporter writes (they use INT64_MIN and -INT64_MAX for open slice ends); a file that holds it anyway
/// gets no more than those two meanings of its own batch.
inline constexpr std::int64_t free_batch = std::numeric_limits<std::int64_t>::min() + 0x5eedba7c4;

/// A constant tensor: floats, or integers (int64 / int32 / bool index tensors: shapes, axes, pads).
struct Constant {
  std::vector<std::int64_t> dims;
  bool integer = false;
  std::vector<float> floats;
  std::vector<std::int64_t> integers;

  std::size_t count() const { return integer ? integers.size() : floats.size(); }
  /// Whether a value is `free_batch` (a free batch read by Shape).
  bool holds_free_batch() const {
    return integer && std::find(integers.begin(), integers.end(), free_batch) != integers.end();
  }
  double at(std::size_t i) const { return integer ? static_cast<double>(integers[i]) : floats[i]; }
  /// The values as integers / floats, whatever the stored type.
  std::vector<std::int64_t> as_integers() const;
  std::vector<float> as_floats() const;
};

/// A non-constant value: the output of a corgy layer (or the model input), with its ONNX dimensions.
struct Tensor {
  /// ONNX dimensions, the batch first; -1 where unknown (a free batch, a free image size).
  std::vector<std::int64_t> dims;
  /// The Sequential layer that computes it (Sequential::model_input for the graph input), once added.
  int layer = no_layer;
  /// While its layer is pending: the index of that layer in Graph's pending list.
  int pending = -1;

  static constexpr int no_layer = -100;
};

struct Value {
  std::optional<Constant> constant;
  Tensor tensor;
};

/// "(1, 3, 224, 224)" with "?" for unknown dimensions.
std::string dims_text(std::span<const std::int64_t> dims);

/// The graph while it is turned into layers; onnx_ops.cpp's functions see it through the node being mapped.
class Graph {
 public:
  Graph(Sequential& model, std::string source, int opset, const LoadLimits& limits);

  // --- set up by load_onnx -------------------------------------------------------------------------------------
  void add_constant(const std::string& name, Constant constant) { values_[name].constant = std::move(constant); }
  void add_input(const std::string& name, std::vector<std::int64_t> dims);
  /// How often each value is read by the nodes that will be mapped and by the graph outputs (outputs count forever).
  void set_use_counts(std::unordered_map<std::string, int> counts) { remaining_uses_ = std::move(counts); }
  /// Maps `node` through its operator function; afterwards its inputs have one reader fewer.
  void map_node(const onnx::NodeProto& node);
  /// The layer of graph output `name`, added to the model if still pending.
  int output_layer(const std::string& name, std::vector<std::int64_t>& dims);
  const Value* find(const std::string& name) const;

  // --- for the operator functions: the node being mapped ---------------------------------------------------------
  const onnx::NodeProto& node() const { return *node_; }
  int opset() const { return opset_; }
  const LoadLimits& limits() const { return limits_; }
  /// Throws corgy::Error "<file>: node '<name>' (<op>, opset <n>): <message>".
  [[noreturn]] void fail(std::string_view message) const;

  /// Input i is given (present and not an empty name).
  bool has_input(int i) const;
  bool input_is_constant(int i) const;
  /// Input i as a constant; fails saying `what` it should be when it is missing or computed at run time, and when
  /// it holds `free_batch` (the batch of a free-batch export is not known at load time).
  const Constant& constant_input(int i, std::string_view what) const;
  /// The same, `free_batch` allowed: for the operators that carry it to a Reshape target (see free_batch).
  const Constant& constant_input_with_free_batch(int i, std::string_view what) const;
  /// Input i as a tensor (a layer output); fails when it is a constant or missing.
  const Tensor& tensor_input(int i) const;
  /// Output k is read by some node or is a graph output.
  bool output_used(int k) const;
  /// Fails when an output from `first` on is read (MaxPool's indices, BatchNormalization's training outputs).
  void require_unused_outputs_from(int first) const;

  std::int64_t attribute_int(std::string_view name, std::int64_t fallback) const;
  float attribute_float(std::string_view name, float fallback) const;
  std::string attribute_string(std::string_view name, std::string_view fallback) const;
  /// Empty when the attribute is absent.
  std::vector<std::int64_t> attribute_ints(std::string_view name) const;
  std::vector<float> attribute_floats(std::string_view name) const;
  const onnx::AttributeProto* attribute(std::string_view name) const;
  /// Fails when an integer attribute is too large for shape arithmetic (|value| > 2^30).
  void check_attribute_integer(std::string_view name, std::int64_t value) const;

  // --- results ------------------------------------------------------------------------------------------------
  void set_constant_output(Constant constant, int k = 0);
  /// Output 0 is input `i`'s tensor seen with other dimensions (same memory: Identity, Squeeze, a Reshape that
  /// keeps corgy's layout).
  void set_alias_output(int i, std::vector<std::int64_t> dims);
  /// Output 0 is computed by `layer` from `inputs` (tensors); the layer stays pending.
  void add_layer(std::unique_ptr<Layer> layer, const std::vector<Tensor>& inputs, std::vector<std::int64_t> dims);
  /// The same for a layer given by value (`g.add_layer(Softmax(), {x}, dims)`).
  template <class L>
  requires std::derived_from<std::remove_cvref_t<L>, Layer>
  void add_layer(L&& layer, const std::vector<Tensor>& inputs, std::vector<std::int64_t> dims) {
    add_layer(std::make_unique<std::remove_cvref_t<L>>(std::forward<L>(layer)), inputs, std::move(dims));
  }
  /// A tensor computed by `layer` from `inputs`, pending, read by `uses` later steps of this same node (for
  /// operators that become several layers).
  Tensor intermediate(std::unique_ptr<Layer> layer, const std::vector<Tensor>& inputs, std::vector<std::int64_t> dims);
  void set_tensor_output(const Tensor& tensor, int k = 0);

  /// The pending layer that computes input i when this node is its only reader, else null: the caller may change
  /// it (fold, fuse) and pass it on as its own output with set_tensor_output.
  Layer* fusible_producer(int i) const;
  Layer* fusible_producer(const Tensor& tensor) const;
  void replace_pending(const Tensor& tensor, std::unique_ptr<Layer> layer);

  /// `x` * scale[c] + shift[c], folded into the layer before when it is x's only reader (a convolution or linear
  /// layer without activation, another affine), else a ChannelAffine layer. Returns the result.
  Tensor channel_affine(const Tensor& x, std::vector<float> scale, std::vector<float> shift);
  /// activation(x), fused into the layer before when it can take one and x is its only output read, else an
  /// ActivationLayer.
  Tensor activate(const Tensor& x, Activation activation);

  /// `c` broadcast against `x` (NumPy rules) as one value per channel (axis 1), or nullopt when it varies along
  /// another axis. A scalar gives the same value for every channel. Fails when x's channel count is unknown.
  std::optional<std::vector<float>> per_channel(const Constant& c, const Tensor& x) const;
  /// The Sequential index of `tensor`'s layer, adding it (and what it waits for) when pending.
  int layer_index(const Tensor& tensor);

 private:
  struct Pending {
    std::unique_ptr<Layer> layer;
    std::vector<int> inputs;
    int index = Tensor::no_layer;    // the Sequential index once added
    std::vector<std::string> names;  // the graph values that are this layer's output (aliases included)
  };

  Value& output_value(int k);
  int remaining_uses(const std::string& name) const;
  void track(const Tensor& tensor, const std::string& name);
  const Value& input_value(int i) const;

  Sequential& model_;
  std::string source_;
  int opset_;
  LoadLimits limits_;
  std::unordered_map<std::string, Value> values_;
  std::unordered_map<std::string, int> remaining_uses_;
  std::vector<Pending> pending_;
  const onnx::NodeProto* node_ = nullptr;
};

/// One supported operator: the function that maps a node of it, for opsets [first_opset, last_opset].
struct OperatorMapping {
  std::string_view op_type;
  int first_opset;
  int last_opset;
  void (*map)(Graph& graph);
  std::string_view becomes;
};

/// The table of onnx_ops.cpp, sorted by op type.
std::span<const OperatorMapping> operator_table();
const OperatorMapping* find_operator(std::string_view op_type, int opset);

/// Reads an initializer or a Constant node's tensor, after checking its declared size against its data and the
/// limits. `what` names it in messages ("initializer 'conv1.weight'").
Constant read_tensor(const onnx::TensorProto& tensor, const LoadLimits& limits, const std::string& what);

}  // namespace corgy::onnx_import
