// The ONNX operators on tensors of any rank: NumPy-broadcasting arithmetic, element-wise functions, reductions and
// softmax along any axes but the batch, MatMul of any rank (onnx_math_ops.h).
#include "corgy/io/onnx_math_ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "corgy/error.h"
#include "corgy/layers/batched_matmul.h"
#include "corgy/layers/broadcast_binary.h"
#include "corgy/layers/layer_norm.h"
#include "corgy/layers/reduce_axis.h"
#include "corgy/layers/softmax_axis.h"
#include "corgy/layers/tensor_linear.h"
#include "corgy/layers/unary.h"

namespace corgy::onnx_import {

namespace {

using Dims = std::vector<std::int64_t>;

/// The node's dims of a layer's output: `dims` with the batch of `x` (free when x's is).
Dims with_batch_of(const TensorDims& dims, const Tensor& x) {
  Dims result(dims.extent.begin(), dims.extent.begin() + dims.rank);
  result[0] = x.dims[0];
  return result;
}

/// A constant's dims as TensorDims (a scalar as (1)); fails for a rank above 6.
TensorDims constant_dims(const Graph& g, const Constant& c) {
  if (c.dims.empty()) return TensorDims{1};
  try {
    return TensorDims::from(c.dims);
  } catch (const Error& e) {
    g.fail(fmt::format("constant operand {}: {}", dims_text(c.dims), e.what()));
  }
}

/// a op b of two constants with NumPy broadcasting, computed now.
Constant fold(const Graph& g, BinaryOp op, const Constant& a, const Constant& b) {
  std::vector<int> ea, eb;
  for (const auto& [source, target] : {std::pair{&a, &ea}, std::pair{&b, &eb}}) {
    for (std::int64_t d : source->dims) {
      if (d < 0 || d > (std::int64_t{1} << 30))
        g.fail(fmt::format("constant {} is too large", dims_text(source->dims)));
      target->push_back(static_cast<int>(d));
    }
  }
  BroadcastDesc desc;
  try {
    desc = BroadcastDesc::of(ea, eb);
  } catch (const Error& e) {
    g.fail(e.what());
  }
  Constant c;
  const std::size_t rank = std::max(a.dims.size(), b.dims.size());
  for (std::size_t k = 0; k < rank; ++k) {
    const std::int64_t da = k + a.dims.size() >= rank ? a.dims[k + a.dims.size() - rank] : 1;
    const std::int64_t db = k + b.dims.size() >= rank ? b.dims[k + b.dims.size() - rank] : 1;
    c.dims.push_back(std::max(da, db));
  }
  check_tensor_bytes(g.limits(), "", "a folded constant", desc.count() * 4);
  c.integer = a.integer && b.integer && op != BinaryOp::power && op != BinaryOp::divide;
  for (std::size_t i = 0; i < desc.count(); ++i) {
    std::size_t ia = 0, ib = 0, rest = i;
    for (int k = desc.rank - 1; k >= 0; --k) {
      const auto axis = static_cast<std::size_t>(k);
      const auto extent = static_cast<std::size_t>(desc.extent[axis]);
      ia += (rest % extent) * desc.a_stride[axis];
      ib += (rest % extent) * desc.b_stride[axis];
      rest /= extent;
    }
    if (c.integer) {
      c.integers.push_back(op == BinaryOp::minimum ? std::min(a.integers[ia], b.integers[ib])
                                                   : std::max(a.integers[ia], b.integers[ib]));
    } else {
      c.floats.push_back(apply(op, static_cast<float>(a.at(ia)), static_cast<float>(b.at(ib))));
    }
  }
  return c;
}

/// x op c or c op x (constant_first) for a constant c: per-channel forms are onnx_ops.cpp's; this is the general one.
void binary_with_constant(Graph& g, BinaryOp op, const Tensor& x, const Constant& c, bool constant_first) {
  const TensorDims xd = known_dims(g, x);
  const TensorDims cd = constant_dims(g, c);
  if (op == BinaryOp::power && !constant_first && c.count() == 1 && c.dims.size() <= x.dims.size()) {
    // The exponents exporters write for x^2 (LayerNorm's variance) and x^0.5.
    const double exponent = c.at(0);
    if (exponent == 1.0) return g.set_tensor_output(x);
    if (exponent == 2.0) return g.add_layer(Unary(UnaryOp::square), {x}, x.dims);
    if (exponent == 0.5) return g.add_layer(Unary(UnaryOp::sqrt), {x}, x.dims);
  }
  try {
    auto layer =
        std::make_unique<BroadcastBinary>(BroadcastBinary::with_constant(op, xd, cd, c.as_floats(), constant_first));
    const TensorDims out = broadcast(xd, cd);
    g.add_layer(std::move(layer), {x}, with_batch_of(out, x));
  } catch (const Error& e) {
    g.fail(fmt::format("{} {} {}: {}", dims_text(constant_first ? c.dims : x.dims), binary_op_name(op),
                       dims_text(constant_first ? x.dims : c.dims), e.what()));
  }
}

void unary_node(Graph& g, UnaryOp op) {
  if (g.input_is_constant(0)) {
    Constant c = g.constant_input(0, "input");
    const bool keeps_integers = op == UnaryOp::neg || op == UnaryOp::abs || op == UnaryOp::floor || op == UnaryOp::ceil;
    if (c.integer && keeps_integers) {
      for (std::int64_t& v : c.integers) v = op == UnaryOp::neg ? -v : op == UnaryOp::abs ? std::abs(v) : v;
    } else {
      std::vector<float> values = c.as_floats();
      for (float& v : values) v = apply(op, v);
      c.integer = false;
      c.integers.clear();
      c.floats = std::move(values);
    }
    return g.set_constant_output(std::move(c));
  }
  const Tensor& x = g.tensor_input(0);
  (void)known_dims(g, x);
  g.add_layer(Unary(op), {x}, x.dims);
}

/// Min and Max: of one input, itself; of two, the broadcasting operation.
void min_max_node(Graph& g, BinaryOp op) {
  const int inputs = g.node().input_size();
  if (inputs == 1) {
    if (g.input_is_constant(0)) return g.set_constant_output(g.constant_input(0, "input"));
    return g.set_tensor_output(g.tensor_input(0));
  }
  if (inputs != 2) g.fail(fmt::format("has {} inputs; corgy takes one or two", inputs));
  broadcast_binary_node(g, op);
}

}  // namespace

TensorDims known_dims(const Graph& g, const Tensor& x) {
  Dims dims = x.dims;
  if (dims.empty()) g.fail("takes a scalar tensor; corgy's tensors have a batch axis");
  if (dims[0] < 0) dims[0] = 1;
  for (std::size_t a = 1; a < dims.size(); ++a) {
    if (dims[a] < 0) g.fail(fmt::format("needs every dimension but the batch of its input {}", dims_text(x.dims)));
  }
  try {
    return TensorDims::from(dims);
  } catch (const Error& e) {
    g.fail(fmt::format("input {}: {}", dims_text(x.dims), e.what()));
  }
}

void broadcast_binary_node(Graph& g, BinaryOp op) {
  const bool a_constant = g.input_is_constant(0);
  const bool b_constant = g.input_is_constant(1);
  if (a_constant && b_constant)
    return g.set_constant_output(fold(g, op, g.constant_input(0, "A"), g.constant_input(1, "B")));
  if (b_constant) return binary_with_constant(g, op, g.tensor_input(0), g.constant_input(1, "B"), false);
  if (a_constant) return binary_with_constant(g, op, g.tensor_input(1), g.constant_input(0, "A"), true);
  const Tensor& a = g.tensor_input(0);
  const Tensor& b = g.tensor_input(1);
  const TensorDims ad = known_dims(g, a);
  const TensorDims bd = known_dims(g, b);
  try {
    auto layer = std::make_unique<BroadcastBinary>(op, ad, bd);
    g.add_layer(std::move(layer), {a, b}, with_batch_of(broadcast(ad, bd), a));
  } catch (const Error& e) {
    g.fail(fmt::format("{} {} {}: {}", dims_text(a.dims), binary_op_name(op), dims_text(b.dims), e.what()));
  }
}

void reduce_tensor(Graph& g, ReduceOp op, const Tensor& x, Dims axes, bool keep_dims) {
  TensorDims dims = known_dims(g, x);
  const auto rank = static_cast<std::int64_t>(x.dims.size());
  if (axes.empty()) {
    // ONNX reduces every axis, the batch too: the same as every other axis where the graph's batch is 1, which is
    // what corgy computes per image at any batch.
    if (x.dims[0] != 1 || rank < 2) {
      g.fail(
          fmt::format("reduces every axis of {}, the batch too; corgy keeps images apart (a batch of 1 is "
                      "reduced over its other axes)",
                      dims_text(x.dims)));
    }
    for (std::int64_t a = 1; a < rank; ++a) axes.push_back(a);
  }
  for (std::int64_t& axis : axes) {
    if (axis < -rank || axis >= rank) g.fail(fmt::format("axis {} is out of range for rank {}", axis, rank));
    if (axis < 0) axis += rank;
    if (axis == 0) g.fail(fmt::format("reduces the batch axis of {}; corgy keeps the batch", dims_text(x.dims)));
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  // Runs of adjacent axes, the last first: dropping its axes leaves the earlier axes' indices as they are.
  Tensor current = x;
  std::size_t end = axes.size();
  while (end > 0) {
    std::size_t begin = end - 1;
    while (begin > 0 && axes[begin - 1] == axes[begin] - 1) --begin;
    const auto first = static_cast<int>(axes[begin]);
    const auto last = static_cast<int>(axes[end - 1]);
    auto layer = std::make_unique<ReduceAxis>(op, dims, first, last, keep_dims);
    dims = layer->output_dims();
    const Dims out = with_batch_of(dims, x);
    if (begin == 0) return g.add_layer(std::move(layer), {current}, out);
    current = g.intermediate(std::move(layer), {current}, out);
    end = begin;
  }
}

void softmax_tensor(Graph& g, const Tensor& x, std::int64_t axis, bool log) {
  const TensorDims dims = known_dims(g, x);
  const auto rank = static_cast<int>(x.dims.size());
  // Before opset 13 (Soft|LogSoft)max flattens x to 2-D at `axis` and normalises each row: axes [axis, rank) as one.
  const int last = g.opset() >= 13 ? static_cast<int>(axis) : rank - 1;
  if (axis == 0) {
    g.fail(fmt::format("normalises over axis 0 of {} (the batch{}); corgy keeps images apart", dims_text(x.dims),
                       g.opset() >= 13 ? "" : " and every axis after it"));
  }
  g.add_layer(SoftmaxAxis(dims, static_cast<int>(axis), last, log), {x}, x.dims);
}

void matmul_tensor(Graph& g) {
  if (g.input_is_constant(0))
    g.fail("has a constant left operand; corgy multiplies a computed tensor by a constant or by a tensor");
  const Tensor& a = g.tensor_input(0);
  const TensorDims ad = known_dims(g, a);
  if (ad.rank < 2) g.fail(fmt::format("multiplies a vector {}; corgy takes rank 2 or more", dims_text(a.dims)));
  if (g.input_is_constant(1)) {
    const Constant& b = g.constant_input(1, "the right-hand matrix");
    if (b.dims.size() != 2)
      g.fail(fmt::format("right-hand side {} is a constant that is not a matrix", dims_text(b.dims)));
    const std::int64_t in = b.dims[0], out = b.dims[1];
    if (in != ad[ad.rank - 1] || out < 1) {
      g.fail(fmt::format("weights {} do not take the {} features of the input {}", dims_text(b.dims), ad[ad.rank - 1],
                         dims_text(a.dims)));
    }
    auto layer = std::make_unique<TensorLinear>(
        ad, LinearOptions{.in_features = static_cast<int>(in), .out_features = static_cast<int>(out), .bias = false});
    float* weights = layer->linear().weights().data();
    // MatMul's B is [in][out]; Linear's weights are [out][in].
    for (std::int64_t o = 0; o < out; ++o) {
      for (std::int64_t i = 0; i < in; ++i) {
        weights[o * in + i] = static_cast<float>(b.at(static_cast<std::size_t>(i * out + o)));
      }
    }
    Dims dims = a.dims;
    dims.back() = out;
    return g.add_layer(std::move(layer), {a}, dims);
  }
  const Tensor& b = g.tensor_input(1);
  const TensorDims bd = known_dims(g, b);
  std::unique_ptr<BatchedMatmul> layer;
  TensorDims out;
  try {
    layer = std::make_unique<BatchedMatmul>(ad, bd);
    out = BatchedMatmulDesc::output_dims(ad, bd);
  } catch (const Error& e) {
    g.fail(e.what());
  }
  g.add_layer(std::move(layer), {a, b}, with_batch_of(out, a));
}

void map_pow(Graph& g) { broadcast_binary_node(g, BinaryOp::power); }
void map_min(Graph& g) { min_max_node(g, BinaryOp::minimum); }
void map_max(Graph& g) { min_max_node(g, BinaryOp::maximum); }
void map_sqrt(Graph& g) { unary_node(g, UnaryOp::sqrt); }
void map_erf(Graph& g) { unary_node(g, UnaryOp::erf); }
void map_exp(Graph& g) { unary_node(g, UnaryOp::exp); }
void map_log(Graph& g) { unary_node(g, UnaryOp::log); }
void map_neg(Graph& g) { unary_node(g, UnaryOp::neg); }
void map_abs(Graph& g) { unary_node(g, UnaryOp::abs); }
void map_reciprocal(Graph& g) { unary_node(g, UnaryOp::reciprocal); }
void map_floor(Graph& g) { unary_node(g, UnaryOp::floor); }
void map_ceil(Graph& g) { unary_node(g, UnaryOp::ceil); }

void map_log_softmax(Graph& g) {
  const Tensor& x = g.tensor_input(0);
  const auto rank = x.dims.size();
  std::int64_t axis = g.attribute_int("axis", g.opset() >= 13 ? -1 : 1);
  if (axis < -static_cast<std::int64_t>(rank) || axis >= static_cast<std::int64_t>(rank)) {
    g.fail(fmt::format("axis {} is out of range for rank {}", axis, rank));
  }
  if (axis < 0) axis += static_cast<std::int64_t>(rank);
  softmax_tensor(g, x, axis, true);
}

/// LayerNormalization (opset 17): LayerNorm along `axis` when the axes it normalises over together (axis to the
/// last) hold one of size > 1; ONNX's normalisation over several such axes at once is refused.
void map_layer_normalization(Graph& g) {
  g.require_unused_outputs_from(1);  // Mean and InvStdDev, training outputs
  const Tensor& x = g.tensor_input(0);
  const auto rank = static_cast<std::int64_t>(x.dims.size());
  std::int64_t axis = g.attribute_int("axis", -1);
  if (axis < -rank || axis >= rank) g.fail(fmt::format("axis {} is out of range for rank {}", axis, rank));
  if (axis < 0) axis += rank;
  const TensorDims dims = known_dims(g, x);
  // The one axis of the normalised ones that is longer than 1 (the last when all are 1).
  std::int64_t line_axis = rank - 1;
  int long_axes = 0;
  for (std::int64_t a = axis; a < rank; ++a) {
    if (dims[static_cast<int>(a)] > 1) {
      line_axis = a;
      ++long_axes;
    }
  }
  if (long_axes > 1) {
    g.fail(fmt::format("normalises over axes {} to {} of {} together; corgy's LayerNorm takes one axis", axis, rank - 1,
                       dims_text(x.dims)));
  }
  if (line_axis == 0) g.fail(fmt::format("normalises along the batch axis of {}", dims_text(x.dims)));
  const float epsilon = g.attribute_float("epsilon", 1e-5f);
  const auto length = static_cast<std::size_t>(dims[static_cast<int>(line_axis)]);
  const Constant& scale = g.constant_input(1, "the scale");
  if (scale.count() != length) {
    g.fail(fmt::format("scale has {} values for {} positions along axis {}", scale.count(), length, line_axis));
  }
  std::vector<float> shift(length, 0.0f);
  if (g.has_input(2)) {
    const Constant& bias = g.constant_input(2, "the bias");
    if (bias.count() != length) {
      g.fail(fmt::format("bias has {} values for {} positions along axis {}", bias.count(), length, line_axis));
    }
    shift = bias.as_floats();
  }
  std::unique_ptr<LayerNorm> layer;
  try {
    layer = std::make_unique<LayerNorm>(dims, static_cast<int>(line_axis), epsilon);
    layer->set_parameters(scale.as_floats(), shift);
  } catch (const Error& e) {
    g.fail(e.what());
  }
  g.add_layer(std::move(layer), {x}, x.dims);
}

}  // namespace corgy::onnx_import
