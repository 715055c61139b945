// The ONNX operators corgy runs: one function per operator, registered in the table at the end. A function reads its
// node through Graph (inputs, attributes, the producer it may fuse with) and sets the node's outputs: a constant, an
// alias of its input, or a corgy layer. What an operator cannot do fails with the node's name, op type and opset.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "corgy/error.h"
#include "corgy/io/onnx.h"
#include "corgy/io/onnx_graph.h"
#include "corgy/io/onnx_math_ops.h"
#include "corgy/io/onnx_shape_ops.h"
#include "corgy/layers/activation_layer.h"
#include "corgy/layers/add.h"
#include "corgy/layers/avgpool2d.h"
#include "corgy/layers/channel_shuffle.h"
#include "corgy/layers/channel_slice.h"
#include "corgy/layers/concat.h"
#include "corgy/layers/conv2d.h"
#include "corgy/layers/conv_transpose2d.h"
#include "corgy/layers/elementwise.h"
#include "corgy/layers/flatten.h"
#include "corgy/layers/instance_norm.h"
#include "corgy/layers/linear.h"
#include "corgy/layers/maxpool2d.h"
#include "corgy/layers/pad.h"
#include "corgy/layers/prelu.h"
#include "corgy/layers/resize.h"
#include "corgy/layers/softmax.h"
#include "corgy/layers/upsample.h"

namespace corgy::onnx_import {

namespace {

using Dims = std::vector<std::int64_t>;

constexpr std::int64_t unknown = -1;

/// Axis `axis` of a rank-`rank` tensor, negative axes counted from the end; fails when out of range.
std::int64_t normalize_axis(const Graph& g, std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) g.fail(fmt::format("axis {} is out of range for rank {}", axis, rank));
  return axis < 0 ? axis + r : axis;
}

/// The tensor input i, which must be 4-D (N, C, H, W).
const Tensor& image_input(const Graph& g, int i = 0) {
  const Tensor& x = g.tensor_input(i);
  if (x.dims.size() != 4) g.fail(fmt::format("expects a 4-D (N, C, H, W) input, got {}", dims_text(x.dims)));
  return x;
}

/// The tensor input i, 4-D or 2-D (N, features): what corgy's (N, C, H, W) holds.
const Tensor& feature_input(const Graph& g, int i = 0) {
  const Tensor& x = g.tensor_input(i);
  if (x.dims.size() != 4 && x.dims.size() != 2) {
    g.fail(fmt::format("expects a 4-D (N, C, H, W) or 2-D (N, F) input, got {}", dims_text(x.dims)));
  }
  return x;
}

int channels_of(const Graph& g, const Tensor& x) {
  if (x.dims[1] <= 0) g.fail(fmt::format("needs a known channel count, got input {}", dims_text(x.dims)));
  return static_cast<int>(x.dims[1]);
}

std::int64_t product(std::span<const std::int64_t> dims) {
  std::int64_t p = 1;
  for (std::int64_t d : dims) {
    if (d < 0) return unknown;
    if (__builtin_mul_overflow(p, d, &p)) return std::numeric_limits<std::int64_t>::max();  // over every limit
  }
  return p;
}

/// corgy's 4-D layout of ONNX dims: (N, C, H, W) as is, (N, F) as (N, F, 1, 1); nullopt for other ranks. Two dims
/// with the same layout are the same memory.
std::optional<Dims> corgy_layout(const Dims& dims) {
  if (dims.size() == 4) return dims;
  if (dims.size() == 2) return Dims{dims[0], dims[1], 1, 1};
  // (N, g, C/g, H, W): the channels in groups, as a channel shuffle's Reshape views them.
  // product() saturates instead of overflowing: a fuzzed reshape target of huge groups matches no layout.
  if (dims.size() == 5 && dims[1] > 0 && dims[2] > 0)
    return Dims{dims[0], product(std::span(dims).subspan(1, 2)), dims[3], dims[4]};
  return std::nullopt;
}

/// Output 0 = input 0 with dims `result`: an alias when corgy's layout is unchanged, a Flatten for (N, C, H, W) to
/// (N, C*H*W); anything else as a tensor of any rank (onnx_shape_ops.h: a Reshape view, or an error when the batch
/// would change).
void reshape_to(Graph& g, const Dims& result) {
  const Tensor& x = g.tensor_input(0);
  const std::optional<Dims> from = corgy_layout(x.dims);
  const std::optional<Dims> to = corgy_layout(result);
  if (from && to && *from == *to) return g.set_alias_output(0, result);
  if (x.dims.size() == 4 && result.size() == 2 &&
      (result[1] == product(std::span(x.dims).subspan(1)) || result[1] == unknown)) {
    return g.add_layer(Flatten(), {x}, Dims{x.dims[0], product(std::span(x.dims).subspan(1))});
  }
  reshape_tensor(g, result);
}

// --- constants and no-ops -----------------------------------------------------------------------------------------

void map_constant(Graph& g) {
  Constant c;
  if (const onnx::AttributeProto* value = g.attribute("value")) {
    c = read_tensor(value->t(), g.limits(), fmt::format("Constant '{}'", g.node().output(0)));
  } else if (const onnx::AttributeProto* f = g.attribute("value_float")) {
    c.floats = {f->f()};
  } else if (const onnx::AttributeProto* fs = g.attribute("value_floats")) {
    c.floats.assign(fs->floats().begin(), fs->floats().end());
    c.dims = {static_cast<std::int64_t>(c.floats.size())};
  } else if (const onnx::AttributeProto* i = g.attribute("value_int")) {
    c.integer = true;
    c.integers = {i->i()};
  } else if (const onnx::AttributeProto* is = g.attribute("value_ints")) {
    c.integer = true;
    c.integers.assign(is->ints().begin(), is->ints().end());
    c.dims = {static_cast<std::int64_t>(c.integers.size())};
  } else {
    g.fail("has no value corgy reads (value, value_float(s), value_int(s))");
  }
  g.set_constant_output(std::move(c));
}

/// Identity, and Dropout at inference (its mask output must be unread).
void map_identity(Graph& g) {
  g.require_unused_outputs_from(1);
  if (g.input_is_constant(0)) return g.set_constant_output(g.constant_input_with_free_batch(0, "input"));
  g.set_alias_output(0, g.tensor_input(0).dims);
}

void map_cast(Graph& g) {
  const std::int64_t to = g.attribute_int("to", 0);
  if (g.input_is_constant(0)) {
    const bool to_float = to == onnx::TensorProto::FLOAT || to == onnx::TensorProto::DOUBLE;
    Constant c = to_float ? g.constant_input(0, "input") : g.constant_input_with_free_batch(0, "input");
    if (to_float) {
      c.floats = c.as_floats();
      c.integers.clear();
      c.integer = false;
    } else {
      c.integers = c.as_integers();
      c.floats.clear();
      c.integer = true;
    }
    return g.set_constant_output(std::move(c));
  }
  if (to != onnx::TensorProto::FLOAT) g.fail("casts a computed tensor to another type than float");
  g.set_alias_output(0, g.tensor_input(0).dims);
}

/// Shape of a tensor whose dimensions are known at load time, but for a free batch (free_batch stands for it): a
/// constant.
void map_shape(Graph& g) {
  const Dims& dims = g.input_is_constant(0) ? g.constant_input(0, "input").dims : g.tensor_input(0).dims;
  if (std::any_of(dims.begin() + (dims.empty() || g.input_is_constant(0) ? 0 : 1), dims.end(),
                  [](std::int64_t d) { return d < 0; })) {
    g.fail(
        fmt::format("takes the shape of {} at run time; corgy needs shapes known when the model loads (export "
                    "with a fixed batch, or use Flatten)",
                    dims_text(dims)));
  }
  Dims known = dims;
  if (!known.empty() && known[0] < 0) known[0] = free_batch;
  Constant c;
  c.integer = true;
  const auto rank = static_cast<std::int64_t>(dims.size());
  const std::int64_t start = std::clamp<std::int64_t>(
      g.attribute_int("start", 0) < 0 ? g.attribute_int("start", 0) + rank : g.attribute_int("start", 0), 0, rank);
  const std::int64_t end_attr = g.attribute_int("end", rank);
  const std::int64_t end = std::clamp<std::int64_t>(end_attr < 0 ? end_attr + rank : end_attr, start, rank);
  c.integers = Dims(known.begin() + start, known.begin() + end);
  c.dims = {static_cast<std::int64_t>(c.integers.size())};
  g.set_constant_output(std::move(c));
}

/// Gather on constants (the index of a shape: shape[0]); on a tensor, a slice (onnx_shape_ops.h).
void map_gather(Graph& g) {
  if (!g.input_is_constant(0)) return gather_tensor(g);
  const Constant& data = g.constant_input_with_free_batch(0, "data");
  const Constant& indices = g.constant_input(1, "indices");
  if (data.dims.size() != 1) g.fail("gathers from a constant that is not 1-D");
  Constant c;
  c.integer = data.integer;
  c.dims = indices.dims;
  const auto size = static_cast<std::int64_t>(data.count());
  for (std::int64_t index : indices.as_integers()) {
    if (index < -size || index >= size) g.fail(fmt::format("index {} is out of range for {} values", index, size));
    const auto i = static_cast<std::size_t>(index < 0 ? index + size : index);
    if (c.integer) {
      c.integers.push_back(data.integers[i]);
    } else {
      c.floats.push_back(data.floats[i]);
    }
  }
  g.set_constant_output(std::move(c));
}

/// ConstantOfShape: a constant of the given shape filled with one value (PyTorch builds Pad's pads with it).
void map_constant_of_shape(Graph& g) {
  const Dims shape = g.constant_input(0, "shape").as_integers();
  if (std::any_of(shape.begin(), shape.end(), [](std::int64_t d) { return d < 0; })) {
    g.fail(fmt::format("has a negative dimension in shape {}", dims_text(shape)));
  }
  check_tensor_bytes(g.limits(), "", fmt::format("ConstantOfShape '{}' {}", g.node().output(0), dims_text(shape)),
                     float32_bytes(shape));
  Constant c;
  c.integer = false;
  c.floats = {0.0f};
  if (const onnx::AttributeProto* value = g.attribute("value")) {
    c = read_tensor(value->t(), g.limits(), fmt::format("ConstantOfShape '{}' value", g.node().output(0)));
    if (c.count() != 1) g.fail("has a value that is not a single element");
  }
  const auto count = static_cast<std::size_t>(std::max<std::int64_t>(product(shape), 0));
  if (c.integer) {
    c.integers.assign(count, c.integers[0]);
  } else {
    c.floats.assign(count, c.floats[0]);
  }
  c.dims = shape;
  g.set_constant_output(std::move(c));
}

/// Range of constants: start, start + delta, ... up to (not including) limit. torch.arange exports as Range, over a
/// feature map's size read with Shape (YOLOv8's anchor grid when exported with a free batch; that Shape then fails,
/// saying to export with a fixed batch).
void map_range(Graph& g) {
  const Constant& start = g.constant_input(0, "start");
  const Constant& limit = g.constant_input(1, "limit");
  const Constant& delta = g.constant_input(2, "delta");
  if (start.count() != 1 || limit.count() != 1 || delta.count() != 1) g.fail("start, limit and delta must be scalars");
  const double first = start.at(0), step = delta.at(0);
  if (step == 0 || !std::isfinite(first) || !std::isfinite(limit.at(0)) || !std::isfinite(step)) {
    g.fail(fmt::format("Range({}, {}, {}) has no finite length", first, limit.at(0), step));
  }
  const double length = std::max(std::ceil((limit.at(0) - first) / step), 0.0);
  check_tensor_bytes(g.limits(), "", fmt::format("Range '{}'", g.node().output(0)),
                     static_cast<std::uint64_t>(std::min(length, 1e15)) * 4);
  Constant c;
  c.integer = start.integer && limit.integer && delta.integer;
  const auto count = static_cast<std::size_t>(length);
  for (std::size_t k = 0; k < count; ++k) {
    const double value = first + static_cast<double>(k) * step;
    if (c.integer) {
      c.integers.push_back(static_cast<std::int64_t>(value));
    } else {
      c.floats.push_back(static_cast<float>(value));
    }
  }
  c.dims = {static_cast<std::int64_t>(count)};
  g.set_constant_output(std::move(c));
}

/// The flat index of each element of a constant of `dims`, in C order, for the coordinates `at(axis, k)` gives.
std::vector<std::size_t> strides_of(const Dims& dims) {
  std::vector<std::size_t> strides(dims.size(), 1);
  for (std::size_t a = dims.size(); a-- > 1;) strides[a - 1] = strides[a] * static_cast<std::size_t>(dims[a]);
  return strides;
}

/// `c` with its elements at the flat indices `from` (in order), of dims `dims`.
Constant gathered(const Constant& c, const std::vector<std::size_t>& from, Dims dims) {
  Constant result;
  result.integer = c.integer;
  result.dims = std::move(dims);
  for (std::size_t i : from) {
    if (c.integer) {
      result.integers.push_back(c.integers[i]);
    } else {
      result.floats.push_back(c.floats[i]);
    }
  }
  return result;
}

/// Slice on constants (steps of either sign; opset 10 on: starts, ends, axes, steps as inputs; before: attributes).
/// Slice's selection along every axis of an input of `dims`: the first index, the step and the count of elements
/// taken (ONNX's rules: negative positions count from the end, then clamp to [0, dim], or [-1, dim - 1] going back).
struct SliceSelection {
  Dims first, step, count;
};

SliceSelection slice_selection(const Graph& g, const Dims& dims) {
  Dims starts, ends, axes, steps;
  if (g.opset() >= 10) {
    starts = g.constant_input(1, "starts").as_integers();
    ends = g.constant_input(2, "ends").as_integers();
    if (g.has_input(3)) axes = g.constant_input(3, "axes").as_integers();
    if (g.has_input(4)) steps = g.constant_input(4, "steps").as_integers();
  } else {
    starts = g.attribute_ints("starts");
    ends = g.attribute_ints("ends");
    axes = g.attribute_ints("axes");
  }
  const std::size_t rank = dims.size();
  if (axes.empty()) {
    for (std::size_t a = 0; a < starts.size(); ++a) axes.push_back(static_cast<std::int64_t>(a));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    g.fail("has starts, ends, axes and steps of different lengths");
  }
  SliceSelection selection{Dims(rank, 0), Dims(rank, 1), dims};
  for (std::size_t k = 0; k < starts.size(); ++k) {
    const auto a = static_cast<std::size_t>(normalize_axis(g, axes[k], rank));
    const std::int64_t dim = dims[a], st = steps[k];
    if (st == 0) g.fail("has a step of 0");
    if (dim < 0) g.fail(fmt::format("slices axis {} of {}, whose size is not known", a, dims_text(dims)));
    auto position = [&](std::int64_t v) {
      if (v < 0) v = v < -dim ? -1 : v + dim;
      return st > 0 ? std::clamp<std::int64_t>(v, 0, dim) : std::clamp<std::int64_t>(v, -1, dim - 1);
    };
    const std::int64_t begin = position(starts[k]), end = position(ends[k]);
    const std::int64_t span = st > 0 ? end - begin : begin - end;
    const std::int64_t magnitude = st > 0 ? st : (st == INT64_MIN ? INT64_MAX : -st);
    selection.first[a] = begin;
    selection.step[a] = st > 0 ? std::min(st, dim + 1) : std::max(st, -(dim + 1));
    selection.count[a] = span <= 0 ? 0 : (span - 1) / magnitude + 1;
  }
  return selection;
}

/// Slice of a tensor: a range of channels of a 4-D tensor (ChannelSlice), the other axes whole; any other slice as a
/// tensor of any rank (onnx_shape_ops.h).
void slice_channels(Graph& g) {
  const Tensor& x = g.tensor_input(0);
  const SliceSelection s = slice_selection(g, x.dims);
  bool channels_only = x.dims.size() == 4 && s.step[1] > 0 && s.count[1] > 0;
  for (std::size_t a : {std::size_t{0}, std::size_t{2}, std::size_t{3}}) {
    channels_only = channels_only && s.first[a] == 0 && s.step[a] == 1 && s.count[a] == x.dims[a];
  }
  if (!channels_only) return slice_tensor(g, s.first, s.step, s.count);
  const auto start = static_cast<int>(s.first[1]);
  const auto step = static_cast<int>(s.step[1]);
  const int stop = start + (static_cast<int>(s.count[1]) - 1) * step + 1;
  Dims dims = x.dims;
  dims[1] = s.count[1];
  g.add_layer(ChannelSlice(start, stop, step), {x}, dims);
}

void map_slice(Graph& g) {
  if (!g.input_is_constant(0)) return slice_channels(g);
  const Constant& data = g.constant_input_with_free_batch(0, "data");
  const std::size_t rank = data.dims.size();
  const auto [first, step, count] = slice_selection(g, data.dims);
  const std::vector<std::size_t> strides = strides_of(data.dims);
  std::vector<std::size_t> from;
  const auto total = static_cast<std::size_t>(product(count));
  for (std::size_t i = 0; i < total; ++i) {
    std::size_t rest = i, index = 0;
    for (std::size_t a = rank; a-- > 0;) {
      const auto extent = static_cast<std::size_t>(count[a]);
      const auto k = static_cast<std::int64_t>(rest % extent);
      rest /= extent;
      index += static_cast<std::size_t>(first[a] + k * step[a]) * strides[a];
    }
    from.push_back(index);
  }
  g.set_constant_output(gathered(data, from, count));
}

/// Split of a tensor: along the channels of a 4-D tensor, one ChannelSlice per output (YOLOv8's C2f blocks,
/// ShuffleNet's branches); along another axis or of another rank, a TensorSlice per output (onnx_shape_ops.h).
void map_split(Graph& g) {
  const Tensor& x = g.tensor_input(0);
  const std::int64_t axis = normalize_axis(g, g.attribute_int("axis", 0), x.dims.size());
  const auto along = static_cast<std::size_t>(axis);
  if (x.dims[along] <= 0) g.fail(fmt::format("splits axis {} of {}, whose size is not known", axis, dims_text(x.dims)));
  if (x.dims[along] > std::numeric_limits<int>::max()) g.fail(fmt::format("splits a tensor {}", dims_text(x.dims)));
  const auto channels = static_cast<int>(x.dims[along]);
  const int outputs = g.node().output_size();
  Dims sizes = g.opset() >= 13 ? (g.has_input(1) ? g.constant_input(1, "split").as_integers() : Dims{})
                               : g.attribute_ints("split");
  if (sizes.empty()) {
    // Equal parts (opset 18's num_outputs allows a smaller last one; without it they must divide evenly).
    if (outputs < 1) g.fail("has no outputs");
    const std::int64_t part = (channels + outputs - 1) / outputs;
    if (g.opset() < 18 && channels % outputs != 0) {
      g.fail(fmt::format("splits {} channels into {} equal parts", channels, outputs));
    }
    for (int k = 0; k < outputs; ++k) sizes.push_back(std::min<std::int64_t>(part, channels - k * part));
  }
  if (static_cast<int>(sizes.size()) != outputs) {
    g.fail(fmt::format("has {} split sizes for {} outputs", sizes.size(), outputs));
  }
  std::int64_t total = 0;
  for (std::int64_t size : sizes) {
    if (size <= 0 || size > channels) g.fail(fmt::format("has a part of {} channels (of {})", size, channels));
    total += size;
  }
  if (total != channels)
    g.fail(fmt::format("split sizes {} add up to {}, not the {} channels", dims_text(sizes), total, channels));
  if (axis != 1 || x.dims.size() != 4) return split_tensor(g, axis, sizes);
  int start = 0;
  for (int k = 0; k < outputs; ++k) {
    const auto size = static_cast<int>(sizes[static_cast<std::size_t>(k)]);
    if (g.output_used(k)) {
      Dims dims = x.dims;
      dims[1] = size;
      g.set_tensor_output(g.intermediate(std::make_unique<ChannelSlice>(start, start + size), {x}, dims), k);
    }
    start += size;
  }
}

/// Transpose of a tensor: ShuffleNet's channel shuffle, (N, g, C/g, H, W) with perm (0, 2, 1, 3, 4), on the 5-D view
/// of an (N, C, H, W) tensor that reshape_to makes, as a ChannelShuffle; any other as a Transpose layer
/// (onnx_shape_ops.h).
void transpose_channel_groups(Graph& g) {
  const Tensor& x = g.tensor_input(0);
  Dims perm = g.attribute_ints("perm");
  if (x.dims.size() != 5 || perm != Dims{0, 2, 1, 3, 4} || x.dims[1] <= 0 || x.dims[2] <= 0) {
    // Any other transpose: the axes reversed when perm is absent, as ONNX says.
    if (perm.empty()) {
      for (std::size_t a = x.dims.size(); a-- > 0;) perm.push_back(static_cast<std::int64_t>(a));
    }
    Dims sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t a = 0; a < std::max(sorted.size(), x.dims.size()); ++a) {
      if (sorted.size() != x.dims.size() || sorted[a] != static_cast<std::int64_t>(a)) {
        g.fail(fmt::format("perm {} is not a permutation of the axes of {}", dims_text(perm), dims_text(x.dims)));
      }
    }
    return transpose_tensor(g, perm);
  }
  g.add_layer(ChannelShuffle(static_cast<int>(x.dims[1])), {x},
              Dims{x.dims[0], x.dims[2], x.dims[1], x.dims[3], x.dims[4]});
}

/// Transpose on constants (PyTorch transposes Pad's pads with it).
void map_transpose(Graph& g) {
  if (!g.input_is_constant(0)) return transpose_channel_groups(g);
  const Constant& data = g.constant_input(0, "data");
  const std::size_t rank = data.dims.size();
  Dims perm = g.attribute_ints("perm");
  if (perm.empty()) {
    for (std::size_t a = rank; a-- > 0;) perm.push_back(static_cast<std::int64_t>(a));
  }
  Dims sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t a = 0; a < std::max(sorted.size(), rank); ++a) {
    if (sorted.size() != rank || sorted[a] != static_cast<std::int64_t>(a)) {
      g.fail(fmt::format("perm has {} axes or repeats one; the constant is {}", perm.size(), dims_text(data.dims)));
    }
  }
  Dims dims(rank);
  for (std::size_t a = 0; a < rank; ++a) dims[a] = data.dims[static_cast<std::size_t>(perm[a])];
  const std::vector<std::size_t> strides = strides_of(data.dims);
  std::vector<std::size_t> from;
  for (std::size_t i = 0; i < data.count(); ++i) {
    std::size_t rest = i, index = 0;
    for (std::size_t a = rank; a-- > 0;) {
      const auto extent = static_cast<std::size_t>(dims[a]);
      index += (rest % extent) * strides[static_cast<std::size_t>(perm[a])];
      rest /= extent;
    }
    from.push_back(index);
  }
  g.set_constant_output(gathered(data, from, dims));
}

// --- axes of size 1, flatten, reshape ------------------------------------------------------------------------------

/// The axes of Squeeze / Unsqueeze / Reduce*: the attribute before `input_from_opset`, input 1 from it.
Dims axes_of(const Graph& g, int input_from_opset) {
  if (g.opset() >= input_from_opset) return g.has_input(1) ? g.constant_input(1, "axes").as_integers() : Dims{};
  return g.attribute_ints("axes");
}

void map_squeeze(Graph& g) {
  const Dims& dims =
      g.input_is_constant(0) ? g.constant_input_with_free_batch(0, "input").dims : g.tensor_input(0).dims;
  Dims axes = axes_of(g, 13);
  for (std::int64_t& axis : axes) axis = normalize_axis(g, axis, dims.size());
  Dims result;
  for (std::size_t a = 0; a < dims.size(); ++a) {
    const bool listed = std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(a)) != axes.end();
    if (axes.empty() ? dims[a] == 1 : listed) {
      if (dims[a] != 1) g.fail(fmt::format("squeezes axis {} of {}, which is not 1", a, dims_text(dims)));
      continue;
    }
    result.push_back(dims[a]);
  }
  if (g.input_is_constant(0)) {
    Constant c = g.constant_input_with_free_batch(0, "input");
    c.dims = result;
    return g.set_constant_output(std::move(c));
  }
  reshape_to(g, result);
}

void map_unsqueeze(Graph& g) {
  const Dims& dims =
      g.input_is_constant(0) ? g.constant_input_with_free_batch(0, "input").dims : g.tensor_input(0).dims;
  Dims axes = axes_of(g, 13);
  const std::size_t rank = dims.size() + axes.size();
  for (std::int64_t& axis : axes) axis = normalize_axis(g, axis, rank);
  Dims result;
  std::size_t next = 0;
  for (std::size_t a = 0; a < rank; ++a) {
    if (std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(a)) != axes.end()) {
      result.push_back(1);
    } else if (next < dims.size()) {
      result.push_back(dims[next++]);
    }
  }
  if (g.input_is_constant(0)) {
    Constant c = g.constant_input_with_free_batch(0, "input");
    c.dims = result;
    return g.set_constant_output(std::move(c));
  }
  reshape_to(g, result);
}

/// Flatten at any axis: (d0 * ... * d(axis-1), d(axis) * ...). Axis 1 of a 4-D tensor is the Flatten layer; other
/// axes keep the batch only where the axes before `axis` after it are all 1 (axis 0: a batch of 1).
void map_flatten(Graph& g) {
  const Tensor& x = g.tensor_input(0);
  const auto rank = static_cast<std::int64_t>(x.dims.size());
  if (rank == 0) g.fail("flattens a tensor of rank 0");
  // Flatten's axis ranges over [-rank, rank]: axis rank gives (all, 1).
  const std::int64_t axis_attr = g.attribute_int("axis", 1);
  if (axis_attr < -rank || axis_attr > rank)
    g.fail(fmt::format("axis {} is out of range for rank {}", axis_attr, rank));
  const auto axis = static_cast<std::size_t>(axis_attr < 0 ? axis_attr + rank : axis_attr);
  const std::span<const std::int64_t> dims(x.dims);
  if (axis == 0) {
    if (x.dims[0] != 1) g.fail(fmt::format("flattens {} from axis 0, which moves the batch", dims_text(x.dims)));
    return reshape_to(g, {1, product(dims)});
  }
  const std::int64_t between = product(dims.subspan(1, axis - 1));
  if (between != 1) {
    g.fail(fmt::format("flattens {} from axis {}, which folds axes into the batch; corgy keeps axis 0 as the batch",
                       dims_text(x.dims), axis));
  }
  reshape_to(g, {x.dims[0], product(dims.subspan(axis))});
}

void map_reshape(Graph& g) {
  const Dims target = g.constant_input_with_free_batch(1, "shape").as_integers();
  const bool allow_zero = g.attribute_int("allowzero", 0) != 0;
  const bool constant = g.input_is_constant(0);
  const Dims& dims = constant ? g.constant_input(0, "data").dims : g.tensor_input(0).dims;
  Dims result;
  int inferred = -1;
  for (std::size_t a = 0; a < target.size(); ++a) {
    std::int64_t d = target[a];
    if (d == free_batch) {
      // The batch that Shape read from a free-batch tensor: only as the first dimension, where it is the batch.
      if (a != 0 || dims.empty() || constant) {
        g.fail(
            fmt::format("puts the batch size, which this export leaves free, at axis {} of its target shape; "
                        "corgy keeps it as the first dimension only: export with a fixed batch",
                        a));
      }
      d = dims[0];
    } else if (d == 0 && !allow_zero) {
      if (a >= dims.size()) g.fail("copies a dimension the input does not have");
      d = dims[a];
    } else if (d == -1) {
      if (inferred >= 0) g.fail("infers more than one dimension");
      inferred = static_cast<int>(a);
    } else if (d < 0) {
      g.fail(fmt::format("target shape {} has a negative dimension", dims_text(target)));
    }
    result.push_back(d);
  }
  if (inferred >= 0) {
    result[static_cast<std::size_t>(inferred)] = 1;
    const std::int64_t rest = product(result);
    const std::int64_t total = product(dims);
    result[static_cast<std::size_t>(inferred)] = rest > 0 && total >= 0 ? total / rest : unknown;
    // A free batch with the rest fixed: the inferred dimension is the batch when it is the first.
    if (total < 0 && inferred == 0 && !dims.empty() && product(std::span(dims).subspan(1)) == rest) {
      result[0] = dims[0];
    }
    // A free batch carried as the first dimension (0, or free_batch from Shape): the inferred dimension comes from
    // the rest, as for every batch.
    if (total < 0 && inferred > 0 && !dims.empty() && result[0] == dims[0]) {
      const std::int64_t rest_of_input = product(std::span(dims).subspan(1));
      std::int64_t rest_of_result = 1;
      for (std::size_t a = 1; a < result.size(); ++a) {
        if (a != static_cast<std::size_t>(inferred)) rest_of_result *= result[a];
      }
      if (rest_of_input >= 0 && rest_of_result > 0 && rest_of_input % rest_of_result == 0) {
        result[static_cast<std::size_t>(inferred)] = rest_of_input / rest_of_result;
      }
    }
  }
  if (constant) {
    Constant c = g.constant_input(0, "data");
    if (product(result) != static_cast<std::int64_t>(c.count())) {
      g.fail(fmt::format("reshapes {} values to {}", c.count(), dims_text(result)));
    }
    c.dims = result;
    return g.set_constant_output(std::move(c));
  }
  // A batch written as a number (export at batch 1) stands for the batch.
  if (!result.empty() && !dims.empty() && (result[0] == dims[0] || target[0] == 0 || target[0] == free_batch)) {
    result[0] = dims[0];
  }
  reshape_to(g, result);
}

/// Concat of constants only, computed now: index vectors (shapes built in the graph, scalars among them), and tensors
/// of any rank along `axis` (YOLOv8's anchor points and strides). Integers stay integers when every part is.
Constant concatenated_constants(const Graph& g) {
  const int count = g.node().input_size();
  Constant c;
  c.integer = true;
  bool free_batch_part = false;
  for (int i = 0; i < count; ++i) {
    const Constant& part = g.constant_input_with_free_batch(i, "input");
    c.integer = c.integer && part.integer;
    free_batch_part = free_batch_part || part.holds_free_batch();
  }
  if (free_batch_part && !c.integer) {
    g.fail(
        "concatenates the batch size, which this export leaves free, with float constants: export with a fixed "
        "batch");
  }
  const Dims& first = g.constant_input_with_free_batch(0, "input").dims;
  const bool vectors = std::all_of(g.node().input().begin(), g.node().input().end(),
                                   [&](const std::string& name) { return g.find(name)->constant->dims.size() <= 1; });
  const std::size_t rank = vectors ? 1 : first.size();
  const auto axis = static_cast<std::size_t>(normalize_axis(g, g.attribute_int("axis", 0), rank));
  Dims dims = vectors ? Dims{0} : first;
  dims[axis] = 0;
  for (int i = 0; i < count; ++i) {
    const Constant& part = g.constant_input_with_free_batch(i, "input");
    for (std::size_t a = 0; a < rank && !vectors; ++a) {
      if (part.dims.size() != rank || (a != axis && part.dims[a] != first[a])) {
        g.fail(fmt::format("concatenates constants {} and {} along axis {}", dims_text(first), dims_text(part.dims),
                           axis));
      }
    }
    dims[axis] += vectors ? static_cast<std::int64_t>(part.count()) : part.dims[axis];
  }
  // Row-major: for each index of the axes before `axis`, each part's block of the axes from `axis` on.
  const auto outer = static_cast<std::size_t>(product(std::span(dims).subspan(0, axis)));
  check_tensor_bytes(g.limits(), "", "a concatenated constant", static_cast<std::uint64_t>(product(dims)) * 4);
  for (std::size_t o = 0; o < outer; ++o) {
    for (int i = 0; i < count; ++i) {
      const Constant& part = g.constant_input_with_free_batch(i, "input");
      const std::size_t block = outer == 0 ? 0 : part.count() / outer;
      for (std::size_t k = o * block; k < (o + 1) * block; ++k) {
        if (c.integer) {
          c.integers.push_back(part.integers[k]);
        } else {
          c.floats.push_back(static_cast<float>(part.at(k)));
        }
      }
    }
  }
  c.dims = dims;
  return c;
}

void map_concat(Graph& g) {
  const int count = g.node().input_size();
  if (std::all_of(g.node().input().begin(), g.node().input().end(),
                  [&](const std::string& name) { return g.find(name) && g.find(name)->constant; })) {
    return g.set_constant_output(concatenated_constants(g));
  }
  const Dims& first_dims = g.input_is_constant(0) ? g.constant_input(0, "input").dims : g.tensor_input(0).dims;
  const std::int64_t axis = normalize_axis(g, g.attribute_int("axis", 1), first_dims.size());
  // Channels of 4-D or 2-D tensors: the Concat layer (one operation); any other axis or rank: a TensorConcat.
  bool channels = axis == 1 && (first_dims.size() == 4 || first_dims.size() == 2);
  for (int i = 0; i < count; ++i) {
    channels = channels && !g.input_is_constant(i) && g.tensor_input(i).dims.size() == first_dims.size();
  }
  if (!channels) return concat_tensors(g, axis);
  std::vector<Tensor> inputs;
  for (int i = 0; i < count; ++i) inputs.push_back(feature_input(g, i));
  Dims dims = inputs[0].dims;
  dims[1] = 0;
  for (const Tensor& input : inputs) {
    if (input.dims.size() != dims.size()) g.fail("concatenates tensors of different ranks");
    dims[1] = input.dims[1] < 0 || dims[1] < 0 ? unknown : dims[1] + input.dims[1];
  }
  g.add_layer(Concat(), inputs, dims);
}

// --- convolution, fully connected ---------------------------------------------------------------------------------

/// Padding of one spatial axis: before and after.
struct AxisPads {
  std::int64_t before = 0;
  std::int64_t after = 0;
};

/// A 2-D attribute with a value per spatial axis (height, width), or `fallback` for both when absent.
std::array<std::int64_t, 2> per_axis(const Graph& g, std::string_view name, std::int64_t fallback) {
  const Dims values = g.attribute_ints(name);
  if (values.empty()) return {fallback, fallback};
  if (values.size() != 2) g.fail(fmt::format("{} has {} values; corgy runs 2-D windows", name, values.size()));
  return {values[0], values[1]};
}

/// The window of a convolution (Conv, ConvTranspose) along height and width: the kernel from the weights
/// (..., kH, kW), checked against kernel_shape, and the strides and dilations attributes.
struct ConvWindow {
  std::array<std::int64_t, 2> kernel{};
  std::array<std::int64_t, 2> stride{};
  std::array<std::int64_t, 2> dilation{};
};

/// Fails when kernel_shape disagrees with the weights or a kernel, stride or dilation is not positive.
ConvWindow conv_window(const Graph& g, const Constant& weights) {
  ConvWindow window;
  window.kernel = {weights.dims[2], weights.dims[3]};
  if (per_axis(g, "kernel_shape", window.kernel[0])[0] != window.kernel[0] ||
      per_axis(g, "kernel_shape", window.kernel[1])[1] != window.kernel[1]) {
    g.fail(fmt::format("kernel_shape disagrees with the weights {}", dims_text(weights.dims)));
  }
  window.stride = per_axis(g, "strides", 1);
  window.dilation = per_axis(g, "dilations", 1);
  const auto& [kernel, stride, dilation] = window;
  for (std::size_t a = 0; a < 2; ++a) {
    if (kernel[a] <= 0 || stride[a] <= 0 || dilation[a] <= 0) {
      g.fail(fmt::format("kernel {} x {}, strides {} x {} and dilations {} x {} must be positive", kernel[0], kernel[1],
                         stride[0], stride[1], dilation[0], dilation[1]));
    }
  }
  return window;
}

/// ONNX's auto_pad and pads attributes for a 2-D window (kernel already dilated; height's and width's) over input
/// `dims`: top, left, bottom, right.
std::array<std::int64_t, 4> window_pads(const Graph& g, const Dims& dims, const std::array<std::int64_t, 2>& kernel,
                                        const std::array<std::int64_t, 2>& stride) {
  const std::string auto_pad = g.attribute_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    Dims pads = g.attribute_ints("pads");
    if (pads.empty()) pads = {0, 0, 0, 0};
    if (pads.size() != 4) g.fail(fmt::format("has {} pads; a 2-D window needs 4", pads.size()));
    if (std::any_of(pads.begin(), pads.end(), [](std::int64_t p) { return p < 0; })) g.fail("has negative pads");
    return {pads[0], pads[1], pads[2], pads[3]};
  }
  if (auto_pad == "VALID") return {0, 0, 0, 0};
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") g.fail(fmt::format("auto_pad {} is unknown", auto_pad));
  std::array<AxisPads, 2> axes;
  for (int a = 0; a < 2; ++a) {
    const std::int64_t in = dims[2 + static_cast<std::size_t>(a)];
    if (in < 0) g.fail("auto_pad SAME needs the input's height and width, which the file leaves free");
    if (stride[a] <= 0) g.fail(fmt::format("has stride {}; strides must be positive", stride[a]));
    const std::int64_t out = (in + stride[a] - 1) / stride[a];
    const std::int64_t total = std::max<std::int64_t>(0, (out - 1) * stride[a] + kernel[a] - in);
    // SAME_UPPER puts the odd cell at the end, SAME_LOWER at the beginning.
    axes[a].before = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    axes[a].after = total - axes[a].before;
  }
  return {axes[0].before, axes[1].before, axes[0].after, axes[1].after};
}

/// window_pads() of a window with one kernel and stride for both axes.
std::array<std::int64_t, 4> window_pads(const Graph& g, const Dims& dims, std::int64_t kernel, std::int64_t stride) {
  return window_pads(g, dims, {kernel, kernel}, {stride, stride});
}

/// One value for both spatial axes of a 2-D attribute (kernel_shape, strides, dilations), or `fallback` when absent.
std::int64_t square(const Graph& g, std::string_view name, std::int64_t fallback) {
  const Dims values = g.attribute_ints(name);
  if (values.empty()) return fallback;
  if (values.size() != 2) g.fail(fmt::format("{} has {} values; corgy runs 2-D windows", name, values.size()));
  if (values[0] != values[1]) {
    g.fail(fmt::format("{} {} x {} differs between height and width; corgy's windows are square", name, values[0],
                       values[1]));
  }
  return values[0];
}

std::int64_t window_output(std::int64_t in, std::int64_t before, std::int64_t after, std::int64_t kernel,
                           std::int64_t stride) {
  return in < 0 ? unknown : (in + before + after - kernel) / stride + 1;
}

/// Input x padded with constant `value` by pads (top, left, bottom, right): a Pad layer, or x when all are 0.
Tensor padded(Graph& g, const Tensor& x, const std::array<std::int64_t, 4>& pads, float value) {
  if (pads == std::array<std::int64_t, 4>{0, 0, 0, 0}) return x;
  const PadDesc desc{.mode = PadMode::constant,
                     .top = static_cast<int>(pads[0]),
                     .left = static_cast<int>(pads[1]),
                     .bottom = static_cast<int>(pads[2]),
                     .right = static_cast<int>(pads[3]),
                     .value = value};
  Dims dims = x.dims;
  if (dims[2] >= 0) dims[2] += pads[0] + pads[2];
  if (dims[3] >= 0) dims[3] += pads[1] + pads[3];
  return g.intermediate(std::make_unique<Pad>(desc), {x}, dims);
}

/// Conv: a Conv2d layer. A square kernel with one stride and dilation keeps the square form that the fast paths take,
/// its asymmetric pads in a zero Pad layer before it (one pass over the input, cheaper than losing those paths); any
/// other window (Inception's 1x7 and 7x1, strides or dilations per axis) carries its four pads itself.
void map_conv(Graph& g) {
  Tensor x = image_input(g);
  const Constant& w = g.constant_input(1, "the weights");
  if (w.integer || w.dims.size() != 4) g.fail(fmt::format("weights {} are not a 2-D convolution's", dims_text(w.dims)));
  const std::int64_t groups = g.attribute_int("group", 1);
  if (groups <= 0) g.fail(fmt::format("group {} must be positive", groups));
  const std::int64_t out_channels = w.dims[0];
  const std::int64_t in_channels = w.dims[1] * groups;
  if (x.dims[1] >= 0 && x.dims[1] != in_channels) {
    g.fail(fmt::format("weights {} with group {} need {} input channels, got input {}", dims_text(w.dims), groups,
                       in_channels, dims_text(x.dims)));
  }
  const auto [kernel, stride, dilation] = conv_window(g, w);
  std::array<std::int64_t, 2> effective{};
  for (std::size_t a = 0; a < 2; ++a) effective[a] = dilation[a] * (kernel[a] - 1) + 1;
  std::array<std::int64_t, 4> pads = window_pads(g, x.dims, effective, stride);
  constexpr std::size_t pad_top = 0, pad_left = 1, pad_bottom = 2, pad_right = 3;  // ONNX's order
  const bool square_kernel = kernel[0] == kernel[1] && stride[0] == stride[1] && dilation[0] == dilation[1];
  const bool equal_pads = std::all_of(pads.begin(), pads.end(), [&](std::int64_t p) { return p == pads[pad_top]; });
  if (square_kernel && !equal_pads) {
    x = padded(g, x, pads, 0.0f);
    pads = {0, 0, 0, 0};
  }
  const Conv2dWindow window{.kernel_h = static_cast<int>(kernel[0]),
                            .kernel_w = static_cast<int>(kernel[1]),
                            .stride_h = static_cast<int>(stride[0]),
                            .stride_w = static_cast<int>(stride[1]),
                            .dilation_h = static_cast<int>(dilation[0]),
                            .dilation_w = static_cast<int>(dilation[1]),
                            .pad_top = static_cast<int>(pads[pad_top]),
                            .pad_left = static_cast<int>(pads[pad_left]),
                            .pad_bottom = static_cast<int>(pads[pad_bottom]),
                            .pad_right = static_cast<int>(pads[pad_right])};
  const bool has_bias = g.has_input(2);
  std::unique_ptr<Conv2d> conv;
  try {
    conv = std::make_unique<Conv2d>(Conv2dOptions{.in_channels = static_cast<int>(in_channels),
                                                  .out_channels = static_cast<int>(out_channels),
                                                  .window = window,
                                                  .groups = static_cast<int>(groups),
                                                  .bias = has_bias});
  } catch (const Error& e) {
    g.fail(e.what());
  }
  conv->set_weights(w.floats);
  if (has_bias) {
    const Constant& b = g.constant_input(2, "the bias");
    if (b.count() != static_cast<std::size_t>(out_channels)) g.fail("bias size differs from the output channels");
    conv->set_bias(b.as_floats());
  }
  for (std::size_t a = 0; a < 2; ++a) {
    const std::int64_t in = x.dims[2 + a];
    if (in >= 0 && in + pads[a] + pads[a + 2] < effective[a]) {
      g.fail(fmt::format("input {} with pads {} is smaller than the kernel {} x {} (dilated {} x {})",
                         dims_text(x.dims), dims_text(Dims(pads.begin(), pads.end())), kernel[0], kernel[1],
                         effective[0], effective[1]));
    }
  }
  const Dims dims{x.dims[0], out_channels,
                  window_output(x.dims[2], pads[pad_top], pads[pad_bottom], effective[0], stride[0]),
                  window_output(x.dims[3], pads[pad_left], pads[pad_right], effective[1], stride[1])};
  g.add_layer(std::move(conv), {x}, dims);
}

/// ConvTranspose: a ConvTranspose2d layer. Pads per side, or from output_shape when the total padding it implies is
/// even (the ONNX specification and ONNX Runtime split an odd total differently); auto_pad NOTSET or VALID.
void map_conv_transpose(Graph& g) {
  const Tensor& x = image_input(g);
  const Constant& w = g.constant_input(1, "the weights");
  if (w.integer || w.dims.size() != 4) {
    g.fail(
        fmt::format("weights {} are not a 2-D transposed convolution's (in, out / group, kH, kW)", dims_text(w.dims)));
  }
  // Like the layer's limits: larger values would overflow int in its shapes.
  constexpr std::int64_t largest = 1 << 16;
  if (std::any_of(w.dims.begin(), w.dims.end(), [](std::int64_t d) { return d < 1 || d > largest; })) {
    g.fail(fmt::format("weights {} must have every dimension between 1 and {}", dims_text(w.dims), largest));
  }
  const std::int64_t groups = g.attribute_int("group", 1);
  if (groups <= 0 || groups > largest) g.fail(fmt::format("group {} must be between 1 and {}", groups, largest));
  if (w.dims[1] * groups > largest) {
    g.fail(fmt::format("weights {} with group {} give {} output channels, more than {}", dims_text(w.dims), groups,
                       w.dims[1] * groups, largest));
  }
  const std::int64_t in_channels = w.dims[0];
  const std::int64_t out_channels = w.dims[1] * groups;
  if (x.dims[1] >= 0 && x.dims[1] != in_channels) {
    g.fail(fmt::format("weights {} (in, out / group, kH, kW) need {} input channels, got input {}", dims_text(w.dims),
                       in_channels, dims_text(x.dims)));
  }
  if (in_channels % groups != 0) {
    g.fail(fmt::format("weights {} have {} input channels, which do not divide by group {}", dims_text(w.dims),
                       in_channels, groups));
  }
  const auto [kernel, stride, dilation] = conv_window(g, w);
  const std::array<std::int64_t, 2> output_padding = per_axis(g, "output_padding", 0);
  const std::string auto_pad = g.attribute_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID") {
    g.fail(
        fmt::format("auto_pad {} is not supported (the ONNX specification and ONNX Runtime place its odd cell "
                    "differently); export with explicit pads",
                    auto_pad));
  }
  Dims pads = auto_pad == "VALID" ? Dims{} : g.attribute_ints("pads");
  if (pads.empty()) pads = {0, 0, 0, 0};
  if (pads.size() != 4) g.fail(fmt::format("has {} pads; a 2-D window needs 4", pads.size()));
  Dims output_shape = g.attribute_ints("output_shape");
  if (!output_shape.empty()) {
    if (output_shape.size() == 4) output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
    if (output_shape.size() != 2) g.fail(fmt::format("output_shape has {} values; 2 expected", output_shape.size()));
    for (std::size_t a = 0; a < 2; ++a) {
      const std::int64_t in = x.dims[2 + a];
      if (in < 0) g.fail("output_shape needs the input's height and width, which the file leaves free");
      const std::int64_t total =
          stride[a] * (in - 1) + output_padding[a] + (kernel[a] - 1) * dilation[a] + 1 - output_shape[a];
      if (total < 0 || total % 2 != 0) {
        g.fail(
            fmt::format("output_shape {} x {} needs a total padding of {} along axis {}; corgy supports an even, "
                        "non-negative one (else give pads and output_padding)",
                        output_shape[0], output_shape[1], total, 2 + a));
      }
      pads[a] = pads[a + 2] = total / 2;
    }
  }
  const ConvTranspose2dDesc desc{.in_channels = static_cast<int>(in_channels),
                                 .out_channels = static_cast<int>(out_channels),
                                 .kernel_h = static_cast<int>(kernel[0]),
                                 .kernel_w = static_cast<int>(kernel[1]),
                                 .stride_h = static_cast<int>(stride[0]),
                                 .stride_w = static_cast<int>(stride[1]),
                                 .pad_top = static_cast<int>(pads[0]),
                                 .pad_left = static_cast<int>(pads[1]),
                                 .pad_bottom = static_cast<int>(pads[2]),
                                 .pad_right = static_cast<int>(pads[3]),
                                 .output_padding_h = static_cast<int>(output_padding[0]),
                                 .output_padding_w = static_cast<int>(output_padding[1]),
                                 .dilation_h = static_cast<int>(dilation[0]),
                                 .dilation_w = static_cast<int>(dilation[1]),
                                 .groups = static_cast<int>(groups)};
  const bool has_bias = g.has_input(2);
  std::unique_ptr<ConvTranspose2d> layer;
  try {
    layer = std::make_unique<ConvTranspose2d>(desc, has_bias);
  } catch (const Error& e) {
    g.fail(e.what());
  }
  layer->set_weights(w.floats);
  if (has_bias) {
    const Constant& b = g.constant_input(2, "the bias");
    if (b.count() != static_cast<std::size_t>(out_channels)) {
      g.fail(fmt::format("bias has {} values for {} output channels", b.count(), out_channels));
    }
    layer->set_bias(b.as_floats());
  }
  Dims dims{x.dims[0], out_channels, unknown, unknown};
  for (std::size_t a = 0; a < 2; ++a) {
    const std::int64_t in = x.dims[2 + a];
    if (in < 0) continue;
    dims[2 + a] = (in - 1) * stride[a] - pads[a] - pads[a + 2] + dilation[a] * (kernel[a] - 1) + 1 + output_padding[a];
    if (dims[2 + a] <= 0) {
      g.fail(fmt::format("pads {} crop the whole output of input {} along axis {}", dims_text(pads), dims_text(x.dims),
                         2 + a));
    }
  }
  g.add_layer(std::move(layer), {x}, dims);
}

/// A fully connected layer from weights [out][in] and an optional bias: Gemm and MatMul.
/// A Linear layer reading `x`, its [out][in] weights written by `fill` straight into the layer (VGG's first fully
/// connected layer is 400 MB: an intermediate copy would raise the loader's peak memory by that much).
template <class Fill>
void add_linear(Graph& g, const Tensor& x, std::int64_t out, std::int64_t in, const Fill& fill,
                std::optional<std::vector<float>> bias) {
  if (x.dims.size() != 2) g.fail(fmt::format("expects a 2-D (N, features) input, got {}", dims_text(x.dims)));
  if (x.dims[1] >= 0 && x.dims[1] != in) {
    g.fail(fmt::format("weights take {} features, the input {} has {}", in, dims_text(x.dims), x.dims[1]));
  }
  auto linear = std::make_unique<Linear>(LinearOptions{
      .in_features = static_cast<int>(in), .out_features = static_cast<int>(out), .bias = bias.has_value()});
  fill(linear->weights().data());
  if (bias) linear->set_bias(*bias);
  g.add_layer(std::move(linear), {x}, Dims{x.dims[0], out});
}

/// target[o][i] = scale * b's weight from input i to output o, b holding [out][in] or, with stored_in_by_out,
/// [in][out] (Gemm without transB, MatMul).
void write_weights(const Constant& b, bool stored_in_by_out, std::int64_t out, std::int64_t in, float scale,
                   float* target) {
  for (std::int64_t o = 0; o < out; ++o) {
    for (std::int64_t i = 0; i < in; ++i) {
      const std::size_t source = static_cast<std::size_t>(stored_in_by_out ? i * out + o : o * in + i);
      target[o * in + i] = scale * static_cast<float>(b.at(source));
    }
  }
}

void map_gemm(Graph& g) {
  const Tensor& x = g.tensor_input(0);
  if (g.attribute_int("transA", 0) != 0) g.fail("transposes its input (transA = 1)");
  const Constant& b = g.constant_input(1, "B (the weights)");
  if (b.dims.size() != 2) g.fail(fmt::format("B {} is not a matrix", dims_text(b.dims)));
  const bool trans_b = g.attribute_int("transB", 0) != 0;
  const std::int64_t out = trans_b ? b.dims[0] : b.dims[1];
  const std::int64_t in = trans_b ? b.dims[1] : b.dims[0];
  const float alpha = g.attribute_float("alpha", 1.0f);
  const float beta = g.attribute_float("beta", 1.0f);
  std::optional<std::vector<float>> bias;
  if (g.has_input(2)) {
    const Constant& c = g.constant_input(2, "C (the bias)");
    std::vector<float> values = c.as_floats();
    const bool scalar = values.size() == 1;
    if (!scalar && (values.size() != static_cast<std::size_t>(out) || product(c.dims) != out ||
                    (c.dims.size() == 2 && c.dims[0] != 1))) {
      g.fail(fmt::format("C {} is not one value per output ({} outputs)", dims_text(c.dims), out));
    }
    bias = std::vector<float>(static_cast<std::size_t>(out));
    for (std::size_t o = 0; o < bias->size(); ++o) (*bias)[o] = beta * values[scalar ? 0 : o];
  }
  add_linear(
      g, x, out, in, [&](float* weights) { write_weights(b, !trans_b, out, in, alpha, weights); }, std::move(bias));
}

/// A 2-D input times a constant matrix: Linear; anything else (any rank, two tensors): onnx_math_ops.cpp.
void map_matmul(Graph& g) {
  if (g.input_is_constant(0) || !g.input_is_constant(1) || g.tensor_input(0).dims.size() != 2 ||
      g.constant_input(1, "the right-hand matrix").dims.size() != 2) {
    return matmul_tensor(g);
  }
  const Tensor& x = g.tensor_input(0);
  const Constant& b = g.constant_input(1, "the right-hand matrix");
  const std::int64_t out = b.dims[1];
  const std::int64_t in = b.dims[0];
  add_linear(
      g, x, out, in, [&](float* weights) { write_weights(b, true, out, in, 1.0f, weights); }, std::nullopt);
}

// --- normalization --------------------------------------------------------------------------------------------------

/// A per-channel parameter of `channels` values (BatchNormalization, InstanceNormalization).
std::vector<float> channel_parameter(const Graph& g, int i, std::string_view what, int channels) {
  const Constant& c = g.constant_input(i, what);
  if (c.count() != static_cast<std::size_t>(channels)) {
    g.fail(fmt::format("{} has {} values for {} channels", what, c.count(), channels));
  }
  return c.as_floats();
}

/// Folded into the convolution or linear layer before it when it is that layer's only reader, else a per-channel
/// scale and shift.
void map_batch_normalization(Graph& g) {
  g.require_unused_outputs_from(1);
  if (g.attribute_int("training_mode", 0) != 0) g.fail("is in training mode");
  if (g.opset() < 9 && g.attribute_int("spatial", 1) != 1) g.fail("normalises per position (spatial = 0)");
  const Tensor& x = feature_input(g);
  const int channels = channels_of(g, x);
  const std::vector<float> gamma = channel_parameter(g, 1, "scale", channels);
  const std::vector<float> beta = channel_parameter(g, 2, "B", channels);
  const std::vector<float> mean = channel_parameter(g, 3, "mean", channels);
  const std::vector<float> variance = channel_parameter(g, 4, "var", channels);
  const float epsilon = g.attribute_float("epsilon", 1e-5f);
  if (auto* conv = dynamic_cast<Conv2d*>(g.fusible_producer(0));
      conv && conv->desc().activation.kind == ActivationKind::none) {
    conv->fold_batch_norm({gamma, beta, mean, variance, epsilon});
    return g.set_tensor_output(x);
  }
  std::vector<float> scale(gamma.size()), shift(gamma.size());
  for (std::size_t c = 0; c < gamma.size(); ++c) {
    scale[c] = gamma[c] / std::sqrt(variance[c] + epsilon);
    shift[c] = beta[c] - mean[c] * scale[c];
  }
  g.set_tensor_output(g.channel_affine(x, scale, shift));
}

void map_instance_normalization(Graph& g) {
  const Tensor& x = image_input(g);
  const int channels = channels_of(g, x);
  auto norm = std::make_unique<InstanceNorm>(channels, g.attribute_float("epsilon", 1e-5f));
  norm->set_parameters(channel_parameter(g, 1, "scale", channels), channel_parameter(g, 2, "B", channels));
  g.add_layer(std::move(norm), {x}, x.dims);
}

// --- activations ---------------------------------------------------------------------------------------------------

/// Element-wise, so on tensors of any rank.
void activation_node(Graph& g, Activation activation) {
  const Tensor& x = g.tensor_input(0);
  g.set_tensor_output(g.activate(x, activation));
}

void map_relu(Graph& g) { activation_node(g, Activation::relu()); }
void map_sigmoid(Graph& g) { activation_node(g, Activation::sigmoid()); }
void map_tanh(Graph& g) { activation_node(g, Activation::tanh()); }
void map_hard_swish(Graph& g) { activation_node(g, Activation::hard_swish()); }
void map_leaky_relu(Graph& g) { activation_node(g, Activation::leaky_relu(g.attribute_float("alpha", 0.01f))); }

/// Clip(x, 0, max) is clipped ReLU (ReLU6 for max 6), Clip(x, 0, +inf) ReLU; other bounds are not supported.
void map_clip(Graph& g) {
  float low = -std::numeric_limits<float>::infinity();
  float high = std::numeric_limits<float>::infinity();
  if (g.opset() < 11) {
    low = g.attribute_float("min", low);
    high = g.attribute_float("max", high);
  } else {
    auto bound = [&](int i, std::string_view what, float fallback) {
      if (!g.has_input(i)) return fallback;
      const Constant& c = g.constant_input(i, what);
      if (c.count() != 1) g.fail(fmt::format("{} is not a scalar", what));
      return static_cast<float>(c.at(0));
    };
    low = bound(1, "min", low);
    high = bound(2, "max", high);
  }
  const float huge = std::numeric_limits<float>::max();
  const Tensor& x = feature_input(g);
  if (low <= -huge && high >= huge) return g.set_tensor_output(x);
  if (low != 0.0f) g.fail(fmt::format("clips to [{}, {}]; corgy clips with min 0 (ReLU, ReLU6)", low, high));
  // ONNX makes every output max when max < min; no model does that, and the backends' clipped ReLU assumes max >= 0.
  if (!(high >= low)) g.fail(fmt::format("clips to [{}, {}]: max is below min", low, high));
  g.set_tensor_output(g.activate(x, high >= huge ? Activation::relu() : Activation::clipped_relu(high)));
}

/// max(0, min(1, alpha * x + beta)): a per-channel scale and shift, then ReLU clipped at 1; both fold into a
/// convolution before it.
void map_hard_sigmoid(Graph& g) {
  const Tensor& x = feature_input(g);
  const auto channels = static_cast<std::size_t>(channels_of(g, x));
  const Tensor scaled = g.channel_affine(x, std::vector<float>(channels, g.attribute_float("alpha", 0.2f)),
                                         std::vector<float>(channels, g.attribute_float("beta", 0.5f)));
  g.set_tensor_output(g.activate(scaled, Activation::clipped_relu(1.0f)));
}

void map_prelu(Graph& g) {
  const Tensor& x = feature_input(g);
  const Constant& slope = g.constant_input(1, "slope");
  if (slope.count() == 1) return activation_node(g, Activation::leaky_relu(static_cast<float>(slope.at(0))));
  const std::optional<std::vector<float>> slopes = g.per_channel(slope, x);
  if (!slopes)
    g.fail(fmt::format("slope {} is not one value per channel of {}", dims_text(slope.dims), dims_text(x.dims)));
  auto layer = std::make_unique<PReLU>(channels_of(g, x));
  layer->set_slopes(*slopes);
  g.add_layer(std::move(layer), {x}, x.dims);
}

/// Over the channels of a 4-D or 2-D tensor: Softmax; over any other axis (or, before opset 13, the axes from
/// `axis` on taken as one): SoftmaxAxis (onnx_math_ops.cpp).
void map_softmax(Graph& g) {
  const Tensor& x = g.tensor_input(0);
  const std::int64_t axis = normalize_axis(g, g.attribute_int("axis", g.opset() >= 13 ? -1 : 1), x.dims.size());
  // Before opset 13 Softmax flattens everything from `axis` on: over the channels only when H = W = 1.
  const bool channels_only =
      axis == 1 &&
      (x.dims.size() == 2 || (x.dims.size() == 4 && (g.opset() >= 13 || (x.dims[2] == 1 && x.dims[3] == 1))));
  if (!channels_only) return softmax_tensor(g, x, axis, false);
  g.add_layer(Softmax(), {x}, x.dims);
}

// --- element-wise arithmetic ---------------------------------------------------------------------------------------

/// Both inputs constant: computed now, with NumPy broadcasting.
Constant fold_binary(const Graph& g, ElementwiseOp op, const Constant& a, const Constant& b) {
  const std::size_t rank = std::max(a.dims.size(), b.dims.size());
  Dims dims(rank, 1);
  auto dim = [rank](const Constant& c, std::size_t axis) {
    const std::size_t offset = rank - c.dims.size();
    return axis < offset ? std::int64_t{1} : c.dims[axis - offset];
  };
  for (std::size_t axis = 0; axis < rank; ++axis) {
    const std::int64_t da = dim(a, axis), db = dim(b, axis);
    if (da != db && da != 1 && db != 1) g.fail("constant operands do not broadcast");
    dims[axis] = std::max(da, db);
  }
  Constant c;
  c.dims = dims;
  c.integer = a.integer && b.integer;
  const auto count = static_cast<std::size_t>(product(dims));
  check_tensor_bytes(g.limits(), "", "a folded constant", count * 4);
  auto index_in = [&](const Constant& operand, std::size_t flat) {
    std::size_t index = 0, stride = 1;
    for (std::size_t axis = rank; axis-- > 0;) {
      const auto extent = static_cast<std::size_t>(dims[axis]);
      const std::size_t coordinate = flat % extent;
      flat /= extent;
      const auto operand_extent = static_cast<std::size_t>(dim(operand, axis));
      if (operand_extent != 1) index += coordinate * stride;
      stride *= operand_extent;
    }
    return index;
  };
  for (std::size_t i = 0; i < count; ++i) {
    const double x = a.at(index_in(a, i)), y = b.at(index_in(b, i));
    double r = 0;
    switch (op) {
      case ElementwiseOp::add: r = x + y; break;
      case ElementwiseOp::subtract: r = x - y; break;
      case ElementwiseOp::multiply: r = x * y; break;
      case ElementwiseOp::divide:
        if (c.integer && y == 0) g.fail("divides an integer constant by 0");
        r = c.integer ? std::trunc(x / y) : x / y;
        break;
    }
    if (c.integer) {
      if (!(std::fabs(r) < 9.2e18)) g.fail("integer arithmetic on constants overflows");
      c.integers.push_back(static_cast<std::int64_t>(r));
    } else {
      c.floats.push_back(static_cast<float>(r));
    }
  }
  return c;
}

/// x op c with c one value per channel (or a scalar) of a tensor of rank 2 to 4: a per-channel scale and shift;
/// any other constant (and c / x) with NumPy broadcasting (onnx_math_ops.cpp).
void binary_with_constant(Graph& g, ElementwiseOp op, const Tensor& x, const Constant& c, bool constant_first) {
  const bool channel_axis = x.dims.size() >= 2 && x.dims.size() <= 4 && x.dims[1] > 0;
  const std::optional<std::vector<float>> values = channel_axis ? g.per_channel(c, x) : std::nullopt;
  if (!values || (op == ElementwiseOp::divide && constant_first)) {
    return broadcast_binary_node(g, static_cast<BinaryOp>(op));
  }
  const std::size_t channels = values->size();
  std::vector<float> scale(channels, 1.0f), shift(channels, 0.0f);
  for (std::size_t k = 0; k < channels; ++k) {
    const float v = (*values)[k];
    switch (op) {
      case ElementwiseOp::add: shift[k] = v; break;
      case ElementwiseOp::multiply: scale[k] = v; break;
      case ElementwiseOp::subtract:
        scale[k] = constant_first ? -1.0f : 1.0f;  // c - x or x - c
        shift[k] = constant_first ? v : -v;
        break;
      case ElementwiseOp::divide: scale[k] = 1.0f / v; break;
    }
  }
  g.set_tensor_output(g.channel_affine(x, scale, shift));
}

// The general path takes Elementwise's operations as BinaryOp's of the same number.
static_assert(static_cast<int>(ElementwiseOp::add) == static_cast<int>(BinaryOp::add) &&
              static_cast<int>(ElementwiseOp::subtract) == static_cast<int>(BinaryOp::subtract) &&
              static_cast<int>(ElementwiseOp::multiply) == static_cast<int>(BinaryOp::multiply) &&
              static_cast<int>(ElementwiseOp::divide) == static_cast<int>(BinaryOp::divide));

void binary_node(Graph& g, ElementwiseOp op) {
  const bool a_constant = g.input_is_constant(0);
  const bool b_constant = g.input_is_constant(1);
  if (a_constant && b_constant) {
    return g.set_constant_output(fold_binary(g, op, g.constant_input(0, "A"), g.constant_input(1, "B")));
  }
  if (b_constant) return binary_with_constant(g, op, g.tensor_input(0), g.constant_input(1, "B"), false);
  if (a_constant) return binary_with_constant(g, op, g.tensor_input(1), g.constant_input(0, "A"), true);
  Tensor a = g.tensor_input(0);
  Tensor b = g.tensor_input(1);
  const bool commutes = op == ElementwiseOp::add || op == ElementwiseOp::multiply;
  auto one_per_plane = [](const Tensor& small, const Tensor& large) {
    return small.dims.size() == 4 && small.dims[0] == large.dims[0] && small.dims[1] == large.dims[1] &&
           small.dims[2] == 1 && small.dims[3] == 1;
  };
  if (a.dims != b.dims && commutes && one_per_plane(a, b) && !one_per_plane(b, a)) std::swap(a, b);
  // Anything but equal shapes and per-plane gates: NumPy broadcasting (onnx_math_ops.cpp).
  if (a.dims != b.dims && !one_per_plane(b, a)) return broadcast_binary_node(g, static_cast<BinaryOp>(op));
  if (op == ElementwiseOp::add && a.dims == b.dims) return g.add_layer(Add(), {a, b}, a.dims);
  g.add_layer(Elementwise(op), {a, b}, a.dims);
}

void map_add(Graph& g) { binary_node(g, ElementwiseOp::add); }
void map_sub(Graph& g) { binary_node(g, ElementwiseOp::subtract); }
void map_mul(Graph& g) { binary_node(g, ElementwiseOp::multiply); }
void map_div(Graph& g) { binary_node(g, ElementwiseOp::divide); }

// --- pooling -------------------------------------------------------------------------------------------------------

/// MaxPool and AveragePool. corgy's pools pad top and left by one amount and bottom and right by another; other
/// paddings (and ceil_mode's overhang) go into a Pad layer before the pool: -infinity for max, zeros for an
/// average that counts padding.
void pool_node(Graph& g, PoolKind kind) {
  g.require_unused_outputs_from(1);
  const Tensor& input = image_input(g);
  const std::int64_t kernel = square(g, "kernel_shape", 0);
  if (kernel <= 0) g.fail("has no kernel_shape");
  const std::int64_t stride = square(g, "strides", 1);
  if (square(g, "dilations", 1) != 1) g.fail("has dilations; corgy's pools are not dilated");
  if (g.attribute_int("storage_order", 0) != 0) g.fail("stores indices in column order");
  const bool ceil_mode = g.attribute_int("ceil_mode", 0) != 0;
  bool include_pad = kind == PoolKind::average && g.attribute_int("count_include_pad", 0) != 0;
  std::array<std::int64_t, 4> pads = window_pads(g, input.dims, kernel, stride);
  // ceil_mode: windows that start inside the (padded) input but reach past it, as PyTorch and ONNX Runtime count
  // them; the cells they reach past count for nothing (never as padding).
  std::array<std::int64_t, 2> overhang{0, 0};
  if (ceil_mode) {
    for (int a = 0; a < 2; ++a) {
      const std::int64_t in = input.dims[2 + static_cast<std::size_t>(a)];
      if (in < 0) g.fail("ceil_mode needs the input's height and width, which the file leaves free");
      const std::int64_t span = in + pads[a] + pads[2 + a] - kernel;
      std::int64_t out = (span + stride - 1) / stride + 1;
      if ((out - 1) * stride >= in + pads[a]) --out;
      overhang[a] = std::max<std::int64_t>(0, (out - 1) * stride + kernel - (in + pads[a] + pads[2 + a]));
    }
  }
  Tensor x = input;
  std::array<std::int64_t, 4> window_pad = pads;
  const bool fits = pads[0] == pads[1] && pads[2] == pads[3];
  if (kind == PoolKind::max) {
    // Padded cells never win a max: any padding (and the overhang) as -infinity when corgy's pool cannot express it.
    window_pad = {pads[0], pads[1], pads[2] + overhang[0], pads[3] + overhang[1]};
    if (window_pad[0] != window_pad[1] || window_pad[2] != window_pad[3]) {
      x = padded(g, x, window_pad, -std::numeric_limits<float>::infinity());
      window_pad = {0, 0, 0, 0};
    }
  } else if (include_pad) {
    // Padding counts as zeros, the overhang does not: zero-pad explicitly, then exclude what is left (the overhang).
    if (overhang != std::array<std::int64_t, 2>{0, 0} || !fits) {
      x = padded(g, x, pads, 0.0f);
      window_pad = {0, 0, overhang[0], overhang[1]};
      include_pad = false;
    }
  } else {
    window_pad = {pads[0], pads[1], pads[2] + overhang[0], pads[3] + overhang[1]};
  }
  if (window_pad[2] != window_pad[3] && !include_pad && x.dims[2] >= 0 && x.dims[3] >= 0) {
    // Cells that count for nothing may be added at the bottom or right as long as they start no new window: pad
    // both by the larger amount when that leaves the output's height and width as they are.
    const std::int64_t wider = std::max(window_pad[2], window_pad[3]);
    if (window_output(x.dims[2], window_pad[0], wider, kernel, stride) ==
            window_output(x.dims[2], window_pad[0], window_pad[2], kernel, stride) &&
        window_output(x.dims[3], window_pad[1], wider, kernel, stride) ==
            window_output(x.dims[3], window_pad[1], window_pad[3], kernel, stride)) {
      window_pad[2] = window_pad[3] = wider;
    }
  }
  if (window_pad[0] != window_pad[1] || window_pad[2] != window_pad[3]) {
    g.fail(
        fmt::format("pads {} {} {} {} (with ceil_mode's overhang) differ between height and width in a way "
                    "corgy's average pooling cannot express",
                    window_pad[0], window_pad[1], window_pad[2], window_pad[3]));
  }
  const PoolOptions options{.kernel = static_cast<int>(kernel),
                            .stride = static_cast<int>(stride),
                            .padding = static_cast<int>(window_pad[0]),
                            .padding_bottom_right = static_cast<int>(window_pad[2]),
                            .count_include_pad = include_pad};
  const Dims dims{x.dims[0], x.dims[1], window_output(x.dims[2], window_pad[0], window_pad[2], kernel, stride),
                  window_output(x.dims[3], window_pad[1], window_pad[3], kernel, stride)};
  if (kind == PoolKind::max) return g.add_layer(MaxPool2d(options), {x}, dims);
  g.add_layer(AvgPool2d(options), {x}, dims);
}

void map_max_pool(Graph& g) { pool_node(g, PoolKind::max); }
void map_average_pool(Graph& g) { pool_node(g, PoolKind::average); }

void global_pool(Graph& g, PoolKind kind, bool keep_dims) {
  const Tensor& x = image_input(g);
  const Dims dims = keep_dims ? Dims{x.dims[0], x.dims[1], 1, 1} : Dims{x.dims[0], x.dims[1]};
  if (kind == PoolKind::max) return g.add_layer(MaxPool2d({.global = true}), {x}, dims);
  g.add_layer(AvgPool2d::global(), {x}, dims);
}

void map_global_average_pool(Graph& g) { global_pool(g, PoolKind::average, true); }
void map_global_max_pool(Graph& g) { global_pool(g, PoolKind::max, true); }

/// ReduceMean / ReduceMax over the two spatial axes of a 4-D tensor (PyTorch's x.mean([2, 3])): a global pool; any
/// other reduction over axes but the batch: ReduceAxis layers (onnx_math_ops.cpp). Axes are an input from opset 18
/// (ReduceSum: 13).
void reduce_node(Graph& g, ReduceOp op) {
  const Tensor& x = g.tensor_input(0);
  Dims axes = axes_of(g, op == ReduceOp::sum ? 13 : 18);
  if (axes.empty() && g.attribute_int("noop_with_empty_axes", 0) != 0) return g.set_alias_output(0, x.dims);
  const bool keep_dims = g.attribute_int("keepdims", 1) != 0;
  Dims spatial = axes;
  for (std::int64_t& axis : spatial) axis = normalize_axis(g, axis, x.dims.size());
  std::sort(spatial.begin(), spatial.end());
  if (x.dims.size() == 4 && spatial == Dims{2, 3} && (op == ReduceOp::mean || op == ReduceOp::max)) {
    return global_pool(g, op == ReduceOp::mean ? PoolKind::average : PoolKind::max, keep_dims);
  }
  reduce_tensor(g, op, x, axes, keep_dims);
}

void map_reduce_mean(Graph& g) { reduce_node(g, ReduceOp::mean); }
void map_reduce_max(Graph& g) { reduce_node(g, ReduceOp::max); }
void map_reduce_min(Graph& g) { reduce_node(g, ReduceOp::min); }
void map_reduce_sum(Graph& g) { reduce_node(g, ReduceOp::sum); }

// --- resizing and padding ------------------------------------------------------------------------------------------

/// Resize and Upsample: a Resize layer, or the Upsample layer for nearest enlargement by one integer factor where the
/// coordinate rule picks floor(y / factor) (asymmetric with floor; the half-pixel rules with rounding;
/// tf_half_pixel_for_nn with floor). Before opset 11 the coordinates are asymmetric and nearest rounds down.
void resize_node(Graph& g, const Tensor& x, std::vector<float> scales, Dims sizes) {
  ResizeOptions options;
  const std::string mode = g.attribute_string("mode", "nearest");
  if (mode == "nearest") {
    options.mode = ResizeMode::nearest;
  } else if (mode == "linear" || (mode == "bilinear" && g.opset() < 11)) {
    options.mode = ResizeMode::linear;
  } else if (mode == "cubic" && g.opset() >= 11) {
    options.mode = ResizeMode::cubic;
  } else {
    g.fail(fmt::format("mode {} is not supported (nearest, linear, cubic are)", mode));
  }
  std::string transform = "asymmetric";
  std::string nearest = "floor";
  if (g.opset() >= 11) {
    transform = g.attribute_string("coordinate_transformation_mode", "half_pixel");
    nearest = g.attribute_string("nearest_mode", "round_prefer_floor");
    options.cubic_a = g.attribute_float("cubic_coeff_a", -0.75f);
    options.exclude_outside = g.attribute_int("exclude_outside", 0) != 0;
    if (g.attribute_int("antialias", 0) != 0) g.fail("antialias is not supported");
    const std::string policy = g.attribute_string("keep_aspect_ratio_policy", "stretch");
    if (policy != "stretch") g.fail(fmt::format("keep_aspect_ratio_policy {} is not supported (stretch is)", policy));
  }
  using enum ResizeCoordinates;
  const std::pair<std::string_view, ResizeCoordinates> transforms[] = {{"half_pixel", half_pixel},
                                                                       {"pytorch_half_pixel", pytorch_half_pixel},
                                                                       {"align_corners", align_corners},
                                                                       {"asymmetric", asymmetric},
                                                                       {"tf_half_pixel_for_nn", tf_half_pixel_for_nn}};
  const auto* found = std::find_if(std::begin(transforms), std::end(transforms),
                                   [&](const auto& entry) { return entry.first == transform; });
  if (found == std::end(transforms)) {
    g.fail(
        fmt::format("coordinate_transformation_mode {} is not supported (half_pixel, pytorch_half_pixel, "
                    "align_corners, asymmetric and tf_half_pixel_for_nn are)",
                    transform));
  }
  options.coordinates = found->second;
  using enum NearestRounding;
  const std::pair<std::string_view, NearestRounding> roundings[] = {{"round_prefer_floor", round_prefer_floor},
                                                                    {"round_prefer_ceil", round_prefer_ceil},
                                                                    {"floor", floor},
                                                                    {"ceil", ceil}};
  const auto* rounding = std::find_if(std::begin(roundings), std::end(roundings),
                                      [&](const auto& entry) { return entry.first == nearest; });
  if (rounding == std::end(roundings)) g.fail(fmt::format("nearest_mode {} is unknown", nearest));
  options.rounding = rounding->second;

  const bool by_scales = !scales.empty();
  if (by_scales == !sizes.empty()) g.fail("needs either scales or sizes (one of them, not empty)");
  const std::size_t count = by_scales ? scales.size() : sizes.size();
  const Dims axes = g.attribute_ints("axes");
  if (!axes.empty()) {
    Dims normalized;
    for (std::int64_t axis : axes) normalized.push_back(normalize_axis(g, axis, 4));
    if (normalized != Dims{2, 3})
      g.fail(fmt::format("resizes axes {}; corgy resizes height and width (2, 3)", dims_text(axes)));
    if (count != 2) g.fail(fmt::format("has {} scales or sizes for 2 axes", count));
  } else if (count != 4) {
    g.fail(fmt::format("has {} scales or sizes for a 4-D input", count));
  }
  const std::size_t h = count == 2 ? 0 : 2;
  // Like the Resize layer's limits: no model resizes further, and larger extents would overflow int.
  constexpr std::int64_t largest_extent = 1 << 16;
  std::array<double, 2> factor{};
  Dims dims = x.dims;
  if (by_scales) {
    if (h == 2 && (scales[0] != 1.0f || scales[1] != 1.0f)) {
      g.fail(fmt::format("scales the batch or channel axis (scales {}, {}, {}, {}); corgy resizes height and width",
                         scales[0], scales[1], scales[2], scales[3]));
    }
    for (std::size_t a = 0; a < 2; ++a) {
      const float scale = scales[h + a];
      if (!(std::isfinite(scale) && scale > 0.0f && scale <= static_cast<float>(largest_extent))) {
        g.fail(fmt::format("scale {} of axis {} must be finite, > 0 and at most {}", scale, 2 + a, largest_extent));
      }
      factor[a] = scale;
      if (x.dims[2 + a] >= 0) {
        const double extent = std::floor(static_cast<double>(x.dims[2 + a]) * scale);
        if (extent < 1 || extent > static_cast<double>(largest_extent)) {
          g.fail(fmt::format("scale {} gives axis {} of input {} {} cells; corgy needs between 1 and {}", scale, 2 + a,
                             dims_text(x.dims), extent, largest_extent));
        }
        dims[2 + a] = static_cast<std::int64_t>(extent);
      }
    }
    options.scale_h = scales[h];
    options.scale_w = scales[h + 1];
  } else {
    if (h == 2 && ((x.dims[0] >= 0 && sizes[0] != x.dims[0]) || sizes[1] != x.dims[1])) {
      g.fail(fmt::format("resizes {} to sizes {}; corgy resizes height and width only", dims_text(x.dims),
                         dims_text(sizes)));
    }
    for (std::size_t a = 0; a < 2; ++a) {
      const std::int64_t size = sizes[h + a];
      if (size < 1 || size > largest_extent) {
        g.fail(fmt::format("size {} of axis {} must be between 1 and {}", size, 2 + a, largest_extent));
      }
      factor[a] = x.dims[2 + a] > 0 ? static_cast<double>(size) / static_cast<double>(x.dims[2 + a]) : 0.0;
      dims[2 + a] = size;
    }
    options.height = static_cast<int>(sizes[h]);
    options.width = static_cast<int>(sizes[h + 1]);
  }
  if (options.mode == ResizeMode::nearest && g.opset() < 11 && (factor[0] < 1.0 || factor[1] < 1.0)) {
    g.fail("downsamples with nearest neighbours before opset 11, where ONNX leaves the rounding open");
  }
  const bool rounds = options.rounding == round_prefer_floor || options.rounding == round_prefer_ceil;
  const bool floor_equivalent =
      (options.coordinates == asymmetric && options.rounding == floor) ||
      ((options.coordinates == half_pixel || options.coordinates == pytorch_half_pixel) && rounds) ||
      (options.coordinates == tf_half_pixel_for_nn && options.rounding == floor);
  if (options.mode == ResizeMode::nearest && floor_equivalent && factor[0] == factor[1] && factor[0] >= 1.0 &&
      factor[0] == std::floor(factor[0])) {
    if (factor[0] == 1.0) return g.set_alias_output(0, x.dims);
    return g.add_layer(Upsample(static_cast<int>(factor[0])), {x}, dims);
  }
  std::unique_ptr<Resize> layer;
  try {
    layer = std::make_unique<Resize>(options);
  } catch (const Error& e) {
    g.fail(e.what());
  }
  g.add_layer(std::move(layer), {x}, dims);
}

void map_upsample(Graph& g) {
  const Tensor& x = image_input(g);
  resize_node(g, x, g.opset() < 9 ? g.attribute_floats("scales") : g.constant_input(1, "scales").as_floats(), {});
}

/// Resize: scales or sizes, both constants (opset 10: scales only, as input 1).
void map_resize(Graph& g) {
  const Tensor& x = image_input(g);
  if (g.opset() < 11) return resize_node(g, x, g.constant_input(1, "scales").as_floats(), {});
  std::vector<float> scales;
  Dims sizes;
  if (g.has_input(2)) scales = g.constant_input(2, "scales").as_floats();
  if (g.has_input(3)) sizes = g.constant_input_with_free_batch(3, "sizes").as_integers();
  // A free-batch export's sizes start with the batch that Shape read (free_batch): it is x's own batch.
  for (std::size_t a = 0; a < sizes.size(); ++a) {
    if (sizes[a] != free_batch) continue;
    if (a != 0 || sizes.size() != 4) {
      g.fail(fmt::format("resizes axis {} to the batch size, which this export leaves free", a));
    }
    sizes[0] = x.dims[0];
  }
  resize_node(g, x, std::move(scales), std::move(sizes));
}

void map_pad(Graph& g) {
  const Tensor& x = image_input(g);
  const std::string mode_name = g.attribute_string("mode", "constant");
  PadMode mode = PadMode::constant;
  if (mode_name == "reflect") {
    mode = PadMode::reflect;
  } else if (mode_name == "edge") {
    mode = PadMode::edge;
  } else if (mode_name != "constant") {
    g.fail(fmt::format("mode {} is not supported (constant, reflect and edge are)", mode_name));
  }
  Dims pads;
  float value = 0.0f;
  if (g.opset() < 11) {
    pads = g.attribute_ints(g.opset() < 2 ? "paddings" : "pads");
    value = g.attribute_float("value", 0.0f);
  } else {
    pads = g.constant_input(1, "pads").as_integers();
    if (g.has_input(2)) {
      const Constant& c = g.constant_input(2, "constant_value");
      if (c.count() != 1) g.fail("constant_value is not a scalar");
      value = static_cast<float>(c.at(0));
    }
  }
  // Opset 18's axes: the pads given are for those axes only.
  Dims full(8, 0);
  if (g.opset() >= 18 && g.has_input(3)) {
    Dims axes = g.constant_input(3, "axes").as_integers();
    if (pads.size() != 2 * axes.size()) g.fail("has not two pads per axis");
    for (std::size_t k = 0; k < axes.size(); ++k) {
      const auto axis = static_cast<std::size_t>(normalize_axis(g, axes[k], 4));
      full[axis] = pads[k];
      full[axis + 4] = pads[k + axes.size()];
    }
  } else {
    if (pads.size() != 8) g.fail(fmt::format("has {} pads; a 4-D input needs 8", pads.size()));
    full = pads;
  }
  if (full[0] != 0 || full[1] != 0 || full[4] != 0 || full[5] != 0) g.fail("pads the batch or channel axis");
  if (std::any_of(full.begin(), full.end(), [](std::int64_t p) { return p < 0; })) g.fail("crops (negative pads)");
  // Like convolution windows: no model pads more, and larger pads would overflow int in the layer's shapes.
  constexpr std::int64_t largest_pad = 1 << 16;
  if (std::any_of(full.begin(), full.end(), [](std::int64_t p) { return p > largest_pad; })) {
    g.fail(fmt::format("has pads [{}]; each must be at most {}", fmt::join(full, ", "), largest_pad));
  }
  // No pad at all (PyTorch exports one before DenseNet's average pools): the input itself, not a copy of it.
  if (std::all_of(full.begin(), full.end(), [](std::int64_t p) { return p == 0; })) {
    return g.set_alias_output(0, x.dims);
  }
  const PadDesc desc{.mode = mode,
                     .top = static_cast<int>(full[2]),
                     .left = static_cast<int>(full[3]),
                     .bottom = static_cast<int>(full[6]),
                     .right = static_cast<int>(full[7]),
                     .value = value};
  Dims dims = x.dims;
  if (dims[2] >= 0) dims[2] += full[2] + full[6];
  if (dims[3] >= 0) dims[3] += full[3] + full[7];
  g.add_layer(Pad(desc), {x}, dims);
}

// --- the table -----------------------------------------------------------------------------------------------------

constexpr int min_opset = onnx_min_opset;
constexpr int max_opset = onnx_max_opset;

/// Sorted by op type (find_operator searches it by halves).
constexpr OperatorMapping table[] = {
    {"Abs", min_opset, max_opset, map_abs, "Unary abs (tensors of any rank); constants"},
    {"Add", min_opset, max_opset, map_add,
     "Add (residuals; an activation after it is fused), a per-channel scale and shift with a constant (folded into "
     "the convolution before it), Elementwise for a second operand (N, C, 1, 1); any other shapes or constant with "
     "NumPy broadcasting (BroadcastBinary, any rank)"},
    {"AveragePool", min_opset, max_opset, map_average_pool,
     "AvgPool2d: square kernels, equal strides, explicit or auto pads, ceil_mode, count_include_pad both ways"},
    {"BatchNormalization", min_opset, max_opset, map_batch_normalization,
     "folded into the convolution before it; elsewhere a per-channel scale and shift; inference mode only"},
    {"Cast", min_opset, max_opset, map_cast, "constants; to float on tensors (a no-op)"},
    {"Ceil", min_opset, max_opset, map_ceil, "Unary ceil (tensors of any rank); constants"},
    {"Clip", min_opset, max_opset, map_clip,
     "ReLU (min 0), clipped ReLU / ReLU6 (min 0, max m), fused; other minimums fail"},
    {"Concat", min_opset, max_opset, map_concat,
     "Concat along the channels (axis 1) of 4-D and 2-D tensors; TensorConcat along any other axis but the batch, "
     "rank 1 to 6; 1-D constants"},
    {"Constant", min_opset, max_opset, map_constant, "a constant (value, value_float(s), value_int(s))"},
    {"ConstantOfShape", 9, max_opset, map_constant_of_shape, "a constant"},
    {"Conv", min_opset, max_opset, map_conv,
     "Conv2d: 2-D, kernels, strides and dilations per axis (1x7, 7x1), pads per side, groups (depthwise), auto_pad; "
     "a square kernel's asymmetric pads as a zero Pad layer before it; constant weights"},
    {"ConvTranspose", min_opset, max_opset, map_conv_transpose,
     "ConvTranspose2d: 2-D, strides, dilations, group, pads per side, output_padding, output_shape (even total "
     "padding); auto_pad NOTSET or VALID; constant weights"},
    {"Div", min_opset, max_opset, map_div,
     "a per-channel scale by a constant; Elementwise for tensors; BroadcastBinary for the rest (NumPy broadcasting, "
     "any rank, c / x)"},
    {"Dropout", min_opset, max_opset, map_identity, "nothing (inference); the mask output must be unread"},
    {"Erf", min_opset, max_opset, map_erf, "Unary erf (tensors of any rank; GELU's exact form); constants"},
    {"Exp", min_opset, max_opset, map_exp, "Unary exp (tensors of any rank); constants"},
    {"Expand", 8, max_opset, map_expand,
     "Expand: numpy broadcast to a constant shape of the same rank (not the batch); of a constant, computed at load "
     "time"},
    {"Flatten", min_opset, max_opset, map_flatten,
     "Flatten (axis 1 of 4-D); a Reshape view at any axis that keeps the batch first"},
    {"Floor", min_opset, max_opset, map_floor, "Unary floor (tensors of any rank); constants"},
    {"Gather", min_opset, max_opset, map_gather,
     "constants; on a tensor, constant indices along an axis but the batch: one index (TensorSlice + a view) or a "
     "1-D list in arithmetic progression (TensorSlice)"},
    {"Gemm", min_opset, max_opset, map_gemm,
     "Linear: constant B (either transB), alpha and beta folded, C one value per output; transA = 0"},
    {"GlobalAveragePool", min_opset, max_opset, map_global_average_pool, "AvgPool2d::global()"},
    {"GlobalMaxPool", min_opset, max_opset, map_global_max_pool, "MaxPool2d({.global = true})"},
    {"HardSigmoid", min_opset, max_opset, map_hard_sigmoid,
     "a per-channel scale and shift, then clipped ReLU at 1; fused"},
    {"HardSwish", 14, max_opset, map_hard_swish, "hard swish activation, fused"},
    {"Identity", min_opset, max_opset, map_identity, "nothing"},
    {"InstanceNormalization", min_opset, max_opset, map_instance_normalization,
     "InstanceNorm (an activation after it is fused)"},
    {"LayerNormalization", 17, max_opset, map_layer_normalization,
     "LayerNorm along one axis (the normalised axes hold one longer than 1), any rank"},
    {"LeakyRelu", min_opset, max_opset, map_leaky_relu, "leaky ReLU activation, fused"},
    {"Log", min_opset, max_opset, map_log, "Unary log (tensors of any rank); constants"},
    {"LogSoftmax", min_opset, max_opset, map_log_softmax,
     "SoftmaxAxis with the logarithm: any axis but the batch (before opset 13 the axes from `axis` on as one)"},
    {"MatMul", min_opset, max_opset, map_matmul,
     "Linear without bias: a 2-D input times a constant 2-D matrix; TensorLinear for a rank 3-6 input (the GEMM over "
     "its rows); BatchedMatmul for two tensors of one rank (batch axes broadcast)"},
    {"Max", min_opset, max_opset, map_max, "BroadcastBinary maximum (NumPy broadcasting, any rank), one or two inputs"},
    {"MaxPool", min_opset, max_opset, map_max_pool,
     "MaxPool2d: square kernels, equal strides, explicit or auto pads, ceil_mode; no dilations, Indices unread"},
    {"Min", min_opset, max_opset, map_min, "BroadcastBinary minimum (NumPy broadcasting, any rank), one or two inputs"},
    {"Mul", min_opset, max_opset, map_mul,
     "a per-channel scale by a constant (folded into the convolution before it); Elementwise for tensors, the second "
     "equal in shape or (N, C, 1, 1); BroadcastBinary for the rest (NumPy broadcasting, any rank)"},
    {"Neg", min_opset, max_opset, map_neg, "Unary neg (tensors of any rank); constants"},
    {"PRelu", min_opset, max_opset, map_prelu, "PReLU with a slope per channel; leaky ReLU for one slope"},
    {"Pad", min_opset, max_opset, map_pad,
     "Pad: constant (with its value), reflect, edge; height and width only, no cropping"},
    {"Pow", min_opset, max_opset, map_pow,
     "Unary square / sqrt for a constant exponent 2 / 0.5, else BroadcastBinary power (NumPy broadcasting, any "
     "rank); constants"},
    {"Range", 11, max_opset, map_range, "a constant, of constant start, limit and delta"},
    {"Reciprocal", min_opset, max_opset, map_reciprocal, "Unary reciprocal (tensors of any rank); constants"},
    {"ReduceMax", min_opset, max_opset, map_reduce_max,
     "a global max pool for axes (2, 3) of a 4-D tensor; ReduceAxis over any other axes but the batch, "
     "keepdims either way"},
    {"ReduceMean", min_opset, max_opset, map_reduce_mean,
     "a global average pool for axes (2, 3) of a 4-D tensor; ReduceAxis over any other axes but the "
     "batch, keepdims either way"},
    {"ReduceMin", min_opset, max_opset, map_reduce_min,
     "ReduceAxis min over any axes but the batch (one layer per run of adjacent axes), keepdims either way"},
    {"ReduceSum", min_opset, max_opset, map_reduce_sum,
     "ReduceAxis sum over any axes but the batch (one layer per run of adjacent axes), keepdims either way"},
    {"Relu", min_opset, max_opset, map_relu, "ReLU activation, fused into the layer before"},
    {"Reshape", min_opset, max_opset, map_reshape,
     "a view: aliased when the stored (N, C, H, W) shape is unchanged, a Flatten for (N, C, H, W) to (N, C*H*W), "
     "else a Reshape view of any rank 1 to 6 (0 and -1 in the shape; the batch stays axis 0); constants"},
    {"Resize", 10, max_opset, map_resize,
     "Resize: nearest (every nearest_mode), linear, cubic (cubic_coeff_a, exclude_outside); half_pixel, "
     "pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn; constant scales or sizes of height and "
     "width; Upsample for nearest by one integer factor"},
    {"Shape", min_opset, max_opset, map_shape, "a constant, when the dimensions are known at load time"},
    {"Sigmoid", min_opset, max_opset, map_sigmoid, "sigmoid activation, fused"},
    {"Slice", min_opset, max_opset, map_slice,
     "a range of channels of a 4-D tensor (ChannelSlice); any other slice of a tensor of rank 1 to 6 with constant "
     "starts, ends, axes and steps (TensorSlice; negative steps, not the batch); any slice of a constant"},
    {"Softmax", min_opset, max_opset, map_softmax,
     "Softmax over the channels (axis 1) of a 4-D or 2-D tensor; SoftmaxAxis over any other axis but the batch (before "
     "opset 13 the axes from `axis` on as one)"},
    {"Split", min_opset, max_opset, map_split,
     "channel ranges of a 4-D tensor (a ChannelSlice per output); parts along any other axis but the batch, rank 1 "
     "to 6 (a TensorSlice per output); sizes as attribute, input or num_outputs"},
    {"Sqrt", min_opset, max_opset, map_sqrt, "Unary sqrt (tensors of any rank); constants"},
    {"Squeeze", min_opset, max_opset, map_squeeze, "a view (any axes of size 1 but the batch); constants"},
    {"Sub", min_opset, max_opset, map_sub,
     "a per-channel shift by a constant (x - c, c - x); Elementwise for tensors; BroadcastBinary for the rest (NumPy "
     "broadcasting, any rank)"},
    {"Tanh", min_opset, max_opset, map_tanh, "tanh activation, fused"},
    {"Transpose", min_opset, max_opset, map_transpose,
     "a channel shuffle, (N, g, C/g, H, W) with perm (0, 2, 1, 3, 4) (ChannelShuffle); Transpose of any perm that "
     "keeps the batch first, rank 1 to 6; any transpose of a constant"},
    {"Unsqueeze", min_opset, max_opset, map_unsqueeze, "a view (axes of size 1 after the batch); constants"},
    {"Upsample", min_opset, 9, map_upsample,
     "Resize: nearest (enlarging) or linear, asymmetric coordinates, height and width; Upsample for one integer "
     "factor"},
};

}  // namespace

std::span<const OperatorMapping> operator_table() { return table; }

const OperatorMapping* find_operator(std::string_view op_type, int opset) {
  for (const OperatorMapping& entry : table) {
    if (entry.op_type == op_type && opset >= entry.first_opset && opset <= entry.last_opset) return &entry;
  }
  return nullptr;
}

}  // namespace corgy::onnx_import
