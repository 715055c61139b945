// TensorDims: the extents of a tensor of rank 1 to 6 (an ONNX graph's reshaped, transposed or reduced activations),
// and how such a tensor lives in a 4-D Variable.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "corgy/shape.h"

namespace corgy {

/// Extents of a row-major tensor of rank 1..6, the batch first (ONNX's order). Every layer computes on 4-D
/// Variables; a tensor of another rank is stored in one as it is in memory (row-major, no padding), under the
/// Variable shape fold() gives:
///  - rank 1 (d0) -> (d0, 1, 1, 1); rank 2 (N, F) -> (N, F, 1, 1), as Linear's features;
///  - rank 3 (N, C, L) -> (N, C, 1, L): axis 1 stays the channels, so per-channel layers take it as they are;
///  - rank 4 (N, C, H, W) as it is;
///  - rank 5 and 6 (N, a, [b,] H, W) -> (N, a [* b], H, W): the leading axes folded into the channels.
/// So a Reshape never moves memory: only the Shape changes. Dimension 0 is always the Variable's n: layers that
/// take tensors of any rank are built with the dims the graph declares and take the batch from their input
/// (with_batch), so a model keeps a free batch.
struct TensorDims {
  static constexpr int max_rank = 6;

  int rank = 0;
  std::array<int, max_rank> extent{};

  TensorDims() = default;
  /// Throws corgy::Error for a rank outside 1..6 or an extent < 1.
  TensorDims(std::initializer_list<int> extents);
  /// The same from int64 extents (ONNX dims); throws for a rank outside 1..6 or an extent outside [1, 2^31).
  static TensorDims from(std::span<const std::int64_t> extents);
  /// The rank-4 dims of a Shape: (n, c, h, w).
  static TensorDims of(const Shape& shape) { return {shape.n, shape.c, shape.h, shape.w}; }

  int operator[](int axis) const { return extent[static_cast<std::size_t>(axis)]; }
  std::size_t count() const;
  /// Row-major strides in elements (the last axis has stride 1); 0 past the rank.
  std::array<std::size_t, max_rank> strides() const;
  /// The 4-D Variable shape that holds this tensor (see the class comment).
  Shape folded() const;
  /// The same dims with dimension 0 = n.
  TensorDims with_batch(int n) const;
  /// These dims with the batch of `stored` (a Variable holding this tensor); throws corgy::Error naming `layer`
  /// when `stored` is not fold() of them for its batch.
  TensorDims matching(const Shape& stored, std::string_view layer) const;

  bool operator==(const TensorDims& other) const;
  /// "(1, 56, 56, 96)".
  std::string str() const;
};

}  // namespace corgy
