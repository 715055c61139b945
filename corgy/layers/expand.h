// Expand: a tensor of rank 1 to 6 broadcast to a larger shape, numpy's rule (ONNX Expand with a constant shape).
#pragma once

#include "corgy/layers/layer.h"
#include "corgy/tensor_dims.h"

namespace corgy {

/// Input: a tensor of dims `input` (any batch), folded. Output: `target` broadcast with the input as numpy does
/// (both of one rank; each output extent is the larger of the two, where the other is 1 or equal), folded; an
/// input axis of extent 1 is repeated (Backend::copy_strided with stride 0). The batch is the input's: target[0] is 1
/// or input[0].
class Expand final : public Layer {
 public:
  /// Throws corgy::Error for ranks that differ or extents that do not broadcast.
  Expand(const TensorDims& input, const TensorDims& target);

  std::string_view type() const override { return "expand"; }
  /// "expand (1, 3, 1, 5) to (1, 3, 4, 5)".
  std::string describe() const override;
  /// Throws corgy::Error when the input is not the fold of `input` for some batch.
  Shape output_shape(std::span<const Shape> inputs) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;

  const TensorDims& input_dims() const { return input_; }
  const TensorDims& output_dims() const { return output_; }

 private:
  TensorDims input_;
  TensorDims output_;
};

}  // namespace corgy
