// The arithmetic on tensors of any rank (TensorDims) that Backend runs: NumPy-broadcasting binary operations,
// element-wise functions, reductions and softmax along one axis, and batched matrix products. What a backend is
// given is flat: extents and strides in elements, never ranks or ONNX's rules.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "corgy/tensor_dims.h"

namespace corgy {

/// The arithmetic of Backend::broadcast_binary: a + b, a - b, a * b, a / b, pow(a, b), min(a, b), max(a, b).
enum class BinaryOp { add, subtract, multiply, divide, power, minimum, maximum };

/// The functions of Backend::unary: sqrt, erf, exp, natural log, -x, |x|, 1 / x, floor, ceil, x * x, and GELU
/// (Hendrycks and Gimpel 2016) exact, x / 2 * (1 + erf(x / sqrt(2))), and in its tanh form,
/// x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) (PyTorch's approximate='tanh').
enum class UnaryOp { sqrt, erf, exp, log, neg, abs, reciprocal, floor, ceil, square, gelu, gelu_tanh };

/// The reductions of Backend::reduce_axis.
enum class ReduceOp { mean, sum, max, min };

/// "add", "power", ...; "sqrt", "erf", ...; "mean", "max", ...
std::string_view binary_op_name(BinaryOp op);
std::string_view unary_op_name(UnaryOp op);
std::string_view reduce_op_name(ReduceOp op);

/// An element-wise operation of two tensors with NumPy broadcasting, as Backend::broadcast_binary walks it: the
/// output is row-major with extents extent[0 .. rank); the output element at index (i_0, ..., i_{rank-1}) reads a at
/// sum_k i_k * a_stride[k] and b at sum_k i_k * b_stride[k] (a stride is 0 along an axis the operand is broadcast
/// over). of() drops axes of extent 1 and merges axes that are contiguous in both operands, so a same-shape
/// operation has rank 1 and a per-channel one rank 2 or 3; axes past the rank have extent 1 and strides 0.
struct BroadcastDesc {
  static constexpr int max_rank = TensorDims::max_rank;

  int rank = 1;
  std::array<int, max_rank> extent{1, 1, 1, 1, 1, 1};
  std::array<std::size_t, max_rank> a_stride{};
  std::array<std::size_t, max_rank> b_stride{};

  std::size_t count() const;
  /// The walk of out = a op b, out the NumPy broadcast of a and b (broadcast()); throws corgy::Error naming both
  /// when they do not broadcast.
  static BroadcastDesc of(const TensorDims& a, const TensorDims& b);
  /// The same with any number of leading axes: a_extents and b_extents aligned at their last axis (0 to 6 axes
  /// each; an empty list is a scalar). Batched matrix products walk their batch axes with it.
  static BroadcastDesc of(std::span<const int> a_extents, std::span<const int> b_extents);
};

/// The NumPy broadcast of a and b: the larger rank, each axis the larger extent. Throws corgy::Error "tensors (..)
/// and (..) do not broadcast" when an axis differs and neither extent is 1.
TensorDims broadcast(const TensorDims& a, const TensorDims& b);

/// One axis of a row-major tensor seen as (outer, length, inner): the product of the axes before it, its extent (or
/// several adjacent axes merged) and the product of the axes after it. Backend::reduce_axis and softmax_axis.
struct AxisExtent {
  std::size_t outer = 1;
  std::size_t length = 1;
  std::size_t inner = 1;

  std::size_t count() const { return outer * length * inner; }
  /// Axes [first, last] of `dims` (last >= first, both inside the rank) as one.
  static AxisExtent of(const TensorDims& dims, int first, int last);
};

/// A batch of matrix products, as Backend::batched_matmul computes them: for each index of `batch` (a
/// BroadcastDesc whose strides count whole matrices), out[i] (rows x cols) = a[i] (rows x inner) x b[i] (inner x
/// cols), all row-major and packed one after another.
struct BatchedMatmulDesc {
  BroadcastDesc batch;
  int rows = 1;
  int inner = 1;
  int cols = 1;

  /// NumPy's matmul of a (..., rows, inner) and b (..., inner, cols), both of rank >= 2, the batch axes
  /// broadcast; throws corgy::Error naming both when the inner extents differ or the batches do not broadcast.
  static BatchedMatmulDesc of(const TensorDims& a, const TensorDims& b);
  /// The output's dims: the broadcast batch, then rows and cols.
  static TensorDims output_dims(const TensorDims& a, const TensorDims& b);
};

/// The element-wise value of each operation in float, as the naive backend and the tests compute it.
float apply(BinaryOp op, float a, float b);
float apply(UnaryOp op, float x);
/// GELU exact and in its tanh form (UnaryOp::gelu, gelu_tanh).
float gelu(float x);
float gelu_tanh(float x);

}  // namespace corgy
