// Transpose: the axes of a tensor of rank 1 to 6 in another order (ONNX Transpose, PyTorch's permute; ConvNeXt's
// NCHW -> NHWC and back, YOLOv8's DFL head).
#pragma once

#include <vector>

#include "corgy/layers/layer.h"
#include "corgy/tensor_dims.h"

namespace corgy {

/// Input: a tensor of dims `input` (any batch), stored as TensorDims::folded() says. Output: dims
/// (input[perm[0]], ..., input[perm[rank-1]]), folded, the data moved (Backend::copy_strided). perm is a permutation of
/// 0..rank-1 that keeps axis 0 (the batch) first.
class Transpose final : public Layer {
 public:
  /// Throws corgy::Error when perm is not a permutation of the input's axes or moves axis 0.
  Transpose(const TensorDims& input, std::vector<int> perm);

  std::string_view type() const override { return "transpose"; }
  /// "transpose (0, 2, 3, 1) of (1, 96, 56, 56)".
  std::string describe() const override;
  /// Throws corgy::Error when the input is not the fold of `input` for some batch.
  Shape output_shape(std::span<const Shape> inputs) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;

  const TensorDims& input_dims() const { return input_; }
  /// The output's dims at the input's graph batch.
  const TensorDims& output_dims() const { return output_; }
  const std::vector<int>& perm() const { return perm_; }

 private:
  TensorDims input_;
  TensorDims output_;
  std::vector<int> perm_;
};

}  // namespace corgy
