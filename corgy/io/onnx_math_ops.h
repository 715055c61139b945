// Internal to the ONNX loader (corgy/io/onnx*.cpp), not installed: the arithmetic on tensors of any rank
// (onnx_math_ops.cpp). onnx_ops.cpp's operator functions call these when their 4-D special paths (per-channel
// scales folded into convolutions, squeeze-and-excitation gates, global pools, softmax over the channels, 2-D
// MatMul) do not apply; the operators that have no special path are mapped here whole.
#pragma once

#include <cstdint>
#include <vector>

#include "corgy/io/onnx_graph.h"
#include "corgy/tensor_dims.h"
#include "corgy/tensor_math.h"

namespace corgy::onnx_import {

/// x's dims for a layer of tensors of any rank: a free batch (dimension 0) as 1, since layers take the batch from
/// their input; fails naming x's dims when another dimension is free or the rank is outside 1..6.
TensorDims known_dims(const Graph& g, const Tensor& x);

/// Output 0 = input 0 op input 1 with NumPy broadcasting (BroadcastBinary), either input a constant or both
/// tensors; both constants are folded.
void broadcast_binary_node(Graph& g, BinaryOp op);
/// Output 0 = reduction of tensor x over `axes` (ONNX's, negative allowed; empty: every axis, which corgy computes
/// only for a graph batch of 1, as every axis but the batch), by ReduceAxis layers, one per run of adjacent axes.
void reduce_tensor(Graph& g, ReduceOp op, const Tensor& x, std::vector<std::int64_t> axes, bool keep_dims);
/// Output 0 = softmax (log-softmax) of x along axes [axis, rank) before opset 13 (ONNX's 2-D coercion), along
/// `axis` from opset 13 on.
void softmax_tensor(Graph& g, const Tensor& x, std::int64_t axis, bool log);
/// Output 0 = MatMul of input 0 (a tensor of rank >= 2) and input 1: a constant 2-D matrix (TensorLinear on the
/// last axis) or a tensor of the same rank (BatchedMatmul).
void matmul_tensor(Graph& g);

// Operators mapped here whole (registered in onnx_ops.cpp's table).
void map_pow(Graph& g);
void map_min(Graph& g);
void map_max(Graph& g);
void map_sqrt(Graph& g);
void map_erf(Graph& g);
void map_exp(Graph& g);
void map_log(Graph& g);
void map_neg(Graph& g);
void map_abs(Graph& g);
void map_reciprocal(Graph& g);
void map_floor(Graph& g);
void map_ceil(Graph& g);
void map_log_softmax(Graph& g);
void map_layer_normalization(Graph& g);

}  // namespace corgy::onnx_import
