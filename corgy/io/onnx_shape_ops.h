// Internal to the ONNX loader (not installed): the data movement of tensors of any rank (1 to 6), for the operator
// functions of onnx_ops.cpp when a node is not one of their 4-D special cases (channel slices and shuffles,
// Flatten, constants). Each becomes a layer of corgy/layers (Transpose, TensorSlice, TensorConcat, Expand, Reshape)
// on TensorDims (corgy/tensor_dims.h); axis 0 is always the batch, which these layers never move.
#pragma once

#include <cstdint>
#include <vector>

#include "corgy/io/onnx_graph.h"
#include "corgy/tensor_dims.h"

namespace corgy::onnx_import {

/// The TensorDims of a tensor with ONNX dims `dims`: a free batch (dims[0] unknown) as 1, the layers take the batch
/// from their input. Fails naming the node when the rank is outside 1..6, another dimension is unknown, or the tensor
/// is over LoadLimits::max_tensor_bytes.
TensorDims tensor_dims_of(const Graph& g, const std::vector<std::int64_t>& dims);

/// Output 0 = input 0 (a tensor) with dims `result`: an alias when both fold to one Variable shape, else a Reshape
/// view. Fails when the batch (axis 0) or the element count would change.
void reshape_tensor(Graph& g, const std::vector<std::int64_t>& result);

/// Transpose of a tensor with perm `perm` (already checked to be a permutation of its axes): an alias for the
/// identity, else a Transpose layer; fails when perm moves axis 0.
void transpose_tensor(Graph& g, const std::vector<std::int64_t>& perm);

/// Slice of input 0 (a tensor): along each axis, `count` elements from `first` every `step` (Slice's selection,
/// already clamped as ONNX says). A TensorSlice layer, or an alias when it takes everything; fails when it slices the
/// batch or takes nothing.
void slice_tensor(Graph& g, const std::vector<std::int64_t>& first, const std::vector<std::int64_t>& step,
                  const std::vector<std::int64_t>& count);

/// Split of input 0 (a tensor) along `axis` into parts of `sizes` (checked to add up to the axis): a TensorSlice per
/// used output. Fails for axis 0.
void split_tensor(Graph& g, std::int64_t axis, const std::vector<std::int64_t>& sizes);

/// Concat of the node's inputs (all tensors, of one rank) along `axis` (normalized): a TensorConcat layer. Fails for
/// axis 0 and for inputs that differ off the axis.
void concat_tensors(Graph& g, std::int64_t axis);

/// Gather of a tensor (input 0) at constant indices (input 1) along the axis attribute: a scalar index (the axis
/// dropped) or a 1-D list in arithmetic progression, as a TensorSlice (and a Reshape for the scalar).
void gather_tensor(Graph& g);

/// Expand: input 0 (a tensor) broadcast to the constant shape of input 1 (Expand layer; an alias when nothing
/// changes); a constant input 0 is broadcast at load time (any ranks, NumPy's rules).
void map_expand(Graph& g);

}  // namespace corgy::onnx_import
