// TensorConcat: tensors of rank 1 to 6 joined along any axis but the batch (ONNX Concat; YOLOv8's head joins its
// (N, 4 + classes, A) outputs of each scale along axis 2).
#pragma once

#include <vector>

#include "corgy/layers/layer.h"
#include "corgy/tensor_dims.h"

namespace corgy {

/// Inputs: tensors of dims inputs[i] (one batch for all), folded; all of one rank and equal but along `axis`.
/// Output: their extents along `axis` summed, folded. Each input is one Backend::copy_strided into its part of the
/// output. Channel concatenation of 4-D tensors is the Concat layer's (one operation for every input).
class TensorConcat final : public Layer {
 public:
  /// Throws corgy::Error for fewer than one input, ranks that differ, extents that differ off the axis, or an axis
  /// out of 1..rank-1.
  TensorConcat(std::vector<TensorDims> inputs, int axis);

  std::string_view type() const override { return "tensor_concat"; }
  /// "tensor_concat axis 2 of (1, 84, 6400), (1, 84, 1600)".
  std::string describe() const override;
  int arity() const override { return static_cast<int>(inputs_.size()); }
  /// Throws corgy::Error when an input is not the fold of its dims, or the batches differ.
  Shape output_shape(std::span<const Shape> inputs) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;

  const std::vector<TensorDims>& input_dims() const { return inputs_; }
  const TensorDims& output_dims() const { return output_; }
  int axis() const { return axis_; }

 private:
  std::vector<TensorDims> inputs_;
  TensorDims output_;
  int axis_;
};

}  // namespace corgy
