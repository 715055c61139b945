// Reshape: a tensor of rank 1 to 6 seen with other dims of the same count (ONNX Reshape, Flatten, Squeeze,
// Unsqueeze). No copy: tensors are stored row-major, so the output is a view of the input under another fold.
#pragma once

#include "corgy/layers/layer.h"
#include "corgy/tensor_dims.h"

namespace corgy {

/// Input: a tensor of dims `input` (any batch), folded. Output: a tensor of dims `output` with the input's batch,
/// folded (TensorDims::folded), over the same memory. Both keep the batch as axis 0: input[0] = output[0] and the
/// counts are equal.
class Reshape final : public Layer {
 public:
  /// Throws corgy::Error when the batches or the counts differ.
  Reshape(const TensorDims& input, const TensorDims& output);

  std::string_view type() const override { return "reshape"; }
  /// "reshape (1, 64, 8400) to (1, 4, 16, 8400)".
  std::string describe() const override;
  /// Throws corgy::Error when the input is not the fold of `input` for some batch.
  Shape output_shape(std::span<const Shape> inputs) const override;
  void forward(Backend&, std::span<const Variable* const>, Variable&) const override {}
  bool is_view() const override { return true; }

  const TensorDims& input_dims() const { return input_; }
  const TensorDims& output_dims() const { return output_; }

 private:
  TensorDims input_;
  TensorDims output_;
};

}  // namespace corgy
