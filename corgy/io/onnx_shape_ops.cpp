// The data movement of tensors of any rank (1 to 6) for the ONNX loader: Reshape, Transpose, Slice, Split, Concat,
// Gather and Expand of computed tensors, as the layers of corgy/layers on TensorDims. onnx_ops.cpp's operator
// functions keep their 4-D special cases (channel slices and shuffles, Flatten, constants) and call these for the
// rest. A tensor of ONNX dims d lives in the Variable TensorDims(d).folded(), so two dims with one fold are one
// memory (an alias, no layer), and axis 0 is always the batch: no layer here moves, slices or broadcasts it.
#include "corgy/io/onnx_shape_ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "corgy/io/load_limits.h"
#include "corgy/layers/expand.h"
#include "corgy/layers/reshape.h"
#include "corgy/layers/tensor_concat.h"
#include "corgy/layers/tensor_slice.h"
#include "corgy/layers/transpose.h"

namespace corgy::onnx_import {

namespace {

using Dims = std::vector<std::int64_t>;

std::int64_t axis_in(const Graph& g, std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) g.fail(fmt::format("axis {} is out of range for rank {}", axis, rank));
  return axis < 0 ? axis + r : axis;
}

/// The node's output of `dims` as `tensor` seen with other dims: the same memory when the two fold alike.
void set_view_output(Graph& g, Tensor tensor, const Dims& dims, int k = 0) {
  tensor.dims = dims;
  g.set_tensor_output(tensor, k);
}

}  // namespace

TensorDims tensor_dims_of(const Graph& g, const Dims& dims) {
  if (dims.empty() || dims.size() > TensorDims::max_rank) {
    g.fail(fmt::format("has a tensor {} of rank {}; corgy runs tensors of rank 1 to {}", dims_text(dims), dims.size(),
                       TensorDims::max_rank));
  }
  Dims known = dims;
  if (known[0] < 0) known[0] = 1;  // a free batch: the layers take it from their input
  for (std::size_t a = 1; a < known.size(); ++a) {
    if (known[a] <= 0) {
      g.fail(
          fmt::format("needs the dimensions of {} after the batch known when the model loads (export with fixed "
                      "sizes)",
                      dims_text(dims)));
    }
  }
  check_tensor_bytes(g.limits(), "",
                     fmt::format("node '{}' ({}): tensor {}", g.node().name(), g.node().op_type(), dims_text(dims)),
                     float32_bytes(known));
  return TensorDims::from(known);
}

void reshape_tensor(Graph& g, const Dims& result) {
  const Tensor& x = g.tensor_input(0);
  if (x.dims.empty()) g.fail("reshapes a tensor of rank 0; corgy runs tensors of rank 1 to 6");
  if (result.empty() || result[0] != x.dims[0]) {
    g.fail(fmt::format("reshapes {} to {}; corgy keeps axis 0 as the batch, so a reshape must leave it as it is",
                       dims_text(x.dims), dims_text(result)));
  }
  const TensorDims from = tensor_dims_of(g, x.dims);
  const TensorDims to = tensor_dims_of(g, result);
  if (from.count() != to.count()) {
    g.fail(fmt::format("reshapes {} ({} elements per batch item) to {} ({})", dims_text(x.dims),
                       from.count() / static_cast<std::size_t>(from[0]), dims_text(result),
                       to.count() / static_cast<std::size_t>(to[0])));
  }
  if (from.folded() == to.folded()) return g.set_alias_output(0, result);
  g.add_layer(Reshape(from, to), {x}, result);
}

void transpose_tensor(Graph& g, const Dims& perm) {
  const Tensor& x = g.tensor_input(0);
  if (perm.empty() || perm[0] != 0) {
    g.fail(fmt::format("transposes {} with perm {}, which moves axis 0; corgy keeps axis 0 as the batch",
                       dims_text(x.dims), dims_text(perm)));
  }
  const TensorDims in = tensor_dims_of(g, x.dims);
  Dims dims(perm.size());
  std::vector<int> order(perm.size());
  bool identity = true;
  for (std::size_t a = 0; a < perm.size(); ++a) {
    dims[a] = x.dims[static_cast<std::size_t>(perm[a])];
    order[a] = static_cast<int>(perm[a]);
    identity = identity && perm[a] == static_cast<std::int64_t>(a);
  }
  if (identity) return g.set_alias_output(0, x.dims);
  g.add_layer(Transpose(in, std::move(order)), {x}, dims);
}

void slice_tensor(Graph& g, const Dims& first, const Dims& step, const Dims& count) {
  const Tensor& x = g.tensor_input(0);
  const TensorDims in = tensor_dims_of(g, x.dims);
  std::vector<SliceAxis> axes;
  for (std::size_t a = 0; a < x.dims.size(); ++a) {
    if (count[a] == 0) g.fail(fmt::format("takes no element of axis {} of {}", a, dims_text(x.dims)));
    // The whole axis, in order (one element read either way counts too).
    if (count[a] == x.dims[a] && first[a] == 0 && (step[a] == 1 || count[a] == 1)) continue;
    if (a == 0) {
      g.fail(fmt::format("slices axis 0 of {}; corgy keeps axis 0 as the batch and slices the other axes only",
                         dims_text(x.dims)));
    }
    const std::int64_t stop = std::clamp<std::int64_t>(first[a] + count[a] * step[a], -1, x.dims[a]);
    axes.push_back({.axis = static_cast<int>(a),
                    .start = static_cast<int>(first[a]),
                    .stop = static_cast<int>(stop),
                    .step = static_cast<int>(step[a])});
  }
  if (axes.empty()) return g.set_alias_output(0, x.dims);
  g.add_layer(TensorSlice(in, std::move(axes)), {x}, count);
}

void split_tensor(Graph& g, std::int64_t axis, const Dims& sizes) {
  const Tensor& x = g.tensor_input(0);
  if (axis == 0) {
    g.fail(fmt::format("splits axis 0 of {}; corgy keeps axis 0 as the batch and splits the other axes only",
                       dims_text(x.dims)));
  }
  const TensorDims in = tensor_dims_of(g, x.dims);
  const auto a = static_cast<std::size_t>(axis);
  std::int64_t start = 0;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    if (g.output_used(static_cast<int>(k))) {
      Dims dims = x.dims;
      dims[a] = sizes[k];
      const SliceAxis part{.axis = static_cast<int>(axis),
                           .start = static_cast<int>(start),
                           .stop = static_cast<int>(start + sizes[k]),
                           .step = 1};
      g.set_tensor_output(g.intermediate(std::make_unique<TensorSlice>(in, std::vector<SliceAxis>{part}), {x}, dims),
                          static_cast<int>(k));
    }
    start += sizes[k];
  }
}

void concat_tensors(Graph& g, std::int64_t axis) {
  const int count = g.node().input_size();
  std::vector<Tensor> inputs;
  std::vector<TensorDims> dims;
  for (int i = 0; i < count; ++i) {
    if (g.input_is_constant(i)) {
      g.fail(
          fmt::format("concatenates a constant (input {}) with computed tensors; corgy concatenates tensors that "
                      "are all computed, or constants that are all 1-D",
                      i));
    }
    inputs.push_back(g.tensor_input(i));
    dims.push_back(tensor_dims_of(g, inputs.back().dims));
  }
  const Dims& first = inputs[0].dims;
  if (axis == 0) {
    g.fail(
        fmt::format("concatenates {} along axis 0; corgy keeps axis 0 as the batch and concatenates along the "
                    "other axes",
                    dims_text(first)));
  }
  Dims result = first;
  const auto a = static_cast<std::size_t>(axis);
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    Dims off_axis = inputs[i].dims;
    if (off_axis.size() == first.size()) off_axis[a] = first[a];
    if (off_axis != first) {
      g.fail(fmt::format("concatenates {} and {} along axis {}; they must be equal along the other axes",
                         dims_text(first), dims_text(inputs[i].dims), axis));
    }
    result[a] += inputs[i].dims[a];
  }
  tensor_dims_of(g, result);  // the output within the limits before the layer adds up its extents
  g.add_layer(TensorConcat(std::move(dims), static_cast<int>(axis)), inputs, result);
}

void gather_tensor(Graph& g) {
  const Tensor& x = g.tensor_input(0);
  const Constant& indices = g.constant_input(1, "indices");
  const std::int64_t axis = axis_in(g, g.attribute_int("axis", 0), x.dims.size());
  if (axis == 0) {
    g.fail(fmt::format("gathers along axis 0 of {}; corgy keeps axis 0 as the batch", dims_text(x.dims)));
  }
  const TensorDims in = tensor_dims_of(g, x.dims);
  const auto a = static_cast<std::size_t>(axis);
  const std::int64_t extent = x.dims[a];
  if (indices.dims.size() > 1 || indices.count() == 0) {
    g.fail(fmt::format("gathers with indices of shape {}; corgy gathers one index or a 1-D list of them",
                       dims_text(indices.dims)));
  }
  Dims at = indices.as_integers();
  for (std::int64_t& index : at) {
    if (index < -extent || index >= extent) {
      g.fail(fmt::format("index {} is out of range for axis {} of {}", index, axis, dims_text(x.dims)));
    }
    if (index < 0) index += extent;
  }
  // The indices as a slice: start, then a constant step.
  const std::int64_t step = at.size() > 1 ? at[1] - at[0] : 1;
  for (std::size_t k = 1; k < at.size(); ++k) {
    if (at[k] - at[k - 1] != step || step == 0) {
      g.fail(
          fmt::format("gathers indices {} of axis {}; corgy gathers indices in arithmetic progression (a slice "
                      "with a step), not other lists",
                      dims_text(at), axis));
    }
  }
  const auto taken = static_cast<std::int64_t>(at.size());
  Dims sliced = x.dims;
  sliced[a] = taken;
  Tensor slice = x;
  if (!(taken == extent && step == 1)) {
    const SliceAxis range{.axis = static_cast<int>(axis),
                          .start = static_cast<int>(at[0]),
                          .stop = static_cast<int>(std::clamp<std::int64_t>(at[0] + taken * step, -1, extent)),
                          .step = static_cast<int>(step)};
    slice = g.intermediate(std::make_unique<TensorSlice>(in, std::vector<SliceAxis>{range}), {x}, sliced);
  }
  if (!indices.dims.empty()) return set_view_output(g, slice, sliced);
  // A scalar index drops the axis: the same memory under the dims without it.
  Dims dropped = sliced;
  dropped.erase(dropped.begin() + static_cast<std::ptrdiff_t>(axis));
  const TensorDims from = tensor_dims_of(g, sliced);
  const TensorDims to = tensor_dims_of(g, dropped);
  if (from.folded() == to.folded()) return set_view_output(g, slice, dropped);
  g.add_layer(Reshape(from, to), {slice}, dropped);
}

namespace {

/// Expand of a constant, computed now with NumPy's (bidirectional) broadcasting: PyTorch exports torch.meshgrid of
/// constant ranges (YOLOv8's anchor points) this way.
Constant expanded_constant(const Graph& g, const Constant& c, const Dims& shape) {
  const std::size_t rank = std::max(c.dims.size(), shape.size());
  auto dim = [rank](const Dims& d, std::size_t axis) {
    const std::size_t offset = rank - d.size();
    return axis < offset ? std::int64_t{1} : d[axis - offset];
  };
  Constant result;
  result.integer = c.integer;
  result.dims.resize(rank);
  std::uint64_t count = 1;
  for (std::size_t a = 0; a < rank; ++a) {
    const std::int64_t from = dim(c.dims, a), to = dim(shape, a);
    if (to < 0 || (from != to && from != 1 && to != 1)) {
      g.fail(fmt::format("cannot broadcast the constant {} to {}", dims_text(c.dims), dims_text(shape)));
    }
    result.dims[a] = from == 1 ? to : from;
    // Checked step by step, so that a huge shape fails here instead of overflowing the count.
    count *= static_cast<std::uint64_t>(result.dims[a]);
    check_tensor_bytes(g.limits(), "", "an expanded constant", count * 4);
  }
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t flat = i, index = 0, stride = 1;
    for (std::size_t a = rank; a-- > 0;) {
      const auto extent = static_cast<std::uint64_t>(result.dims[a]);
      const auto source_extent = static_cast<std::uint64_t>(dim(c.dims, a));
      if (source_extent != 1) index += flat % extent * stride;
      flat /= extent;
      stride *= source_extent;
    }
    if (c.integer) {
      result.integers.push_back(c.integers[index]);
    } else {
      result.floats.push_back(c.floats[index]);
    }
  }
  return result;
}

}  // namespace

void map_expand(Graph& g) {
  if (g.input_is_constant(0)) {
    return g.set_constant_output(
        expanded_constant(g, g.constant_input(0, "input"), g.constant_input(1, "shape").as_integers()));
  }
  const Tensor& x = g.tensor_input(0);
  Dims shape = g.constant_input(1, "shape").as_integers();
  if (shape.size() > x.dims.size()) {
    g.fail(fmt::format("expands {} to {}, which adds axes before the batch; corgy keeps axis 0 as the batch",
                       dims_text(x.dims), dims_text(shape)));
  }
  shape.insert(shape.begin(), x.dims.size() - shape.size(), 1);  // numpy aligns the shapes at their ends
  const TensorDims in = tensor_dims_of(g, x.dims);
  Dims result = x.dims;
  for (std::size_t a = 0; a < shape.size(); ++a) {
    const std::int64_t from = x.dims[a], to = shape[a];
    if (to == 1 || to == from) continue;
    if (a == 0) {
      g.fail(fmt::format("expands axis 0 of {} to {}; corgy keeps axis 0 as the batch and broadcasts the other axes",
                         dims_text(x.dims), dims_text(shape)));
    }
    if (from != 1 || to < 1) {
      g.fail(fmt::format("cannot broadcast {} to {}: axis {} is {} and {}", dims_text(x.dims), dims_text(shape), a,
                         from, to));
    }
    result[a] = to;
  }
  if (result == x.dims) return g.set_alias_output(0, x.dims);
  const TensorDims out = tensor_dims_of(g, result);
  g.add_layer(Expand(in, out.with_batch(1)), {x}, result);
}

}  // namespace corgy::onnx_import
