// BatchedMatmul: NumPy's matmul of two activations of any rank >= 3 (attention-like products), the batch axes
// broadcast.
#pragma once

#include "corgy/layers/layer.h"
#include "corgy/tensor_dims.h"
#include "corgy/tensor_math.h"

namespace corgy {

/// Inputs a (N, ..., M, K) and b (N, ..., K, P) of one rank >= 3 (TensorDims, stored folded) -> (N, ..., M, P), the
/// axes before the last two broadcast (BatchedMatmulDesc). A product by constant weights is TensorLinear's.
class BatchedMatmul final : public Layer {
 public:
  /// Throws corgy::Error when the ranks differ or are below 3, the inner extents differ or the batches do not
  /// broadcast.
  BatchedMatmul(TensorDims a_dims, TensorDims b_dims);

  std::string_view type() const override { return "batched_matmul"; }
  std::string describe() const override;
  int arity() const override { return 2; }
  Shape output_shape(std::span<const Shape> inputs) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;
  double flops(std::span<const Shape> inputs) const override;

 private:
  TensorDims a_dims_;
  TensorDims b_dims_;
};

}  // namespace corgy
