// TensorLinear: a tensor of any rank >= 3 times a constant matrix along its last axis (ONNX MatMul by weights on an
// (N, H, W, C) tensor, a transformer's projection): Linear over the rows of its leading axes.
#pragma once

#include <span>

#include "corgy/layers/layer.h"
#include "corgy/layers/linear.h"
#include "corgy/tensor_dims.h"

namespace corgy {

/// Input (N, ..., in_features) of dims `dims` (TensorDims, stored folded) -> (N, ..., out_features), each row of
/// the last axis times weights [out][in] plus bias. Runs Backend::linear on the (rows, in_features, 1, 1) view of
/// the input, rows the product of the leading axes: the backends' GEMM, no kernel of its own.
class TensorLinear final : public Layer {
 public:
  /// Throws corgy::Error when dims' last extent is not options.in_features or its rank is below 2.
  TensorLinear(TensorDims dims, const LinearOptions& options);

  std::string_view type() const override { return "tensor_linear"; }
  std::string describe() const override;
  Shape output_shape(std::span<const Shape> inputs) const override;
  void upload(Backend& backend) const override { linear_.upload(backend); }
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;
  double flops(std::span<const Shape> inputs) const override;

  /// The weights, bias and activation (Linear::set_weights takes [out][in]).
  Linear& linear() { return linear_; }
  const Linear& linear() const { return linear_; }
  /// The input's dims as declared.
  const TensorDims& input_dims() const { return dims_; }
  /// The output's dims as declared (the input's with out_features along the last axis).
  const TensorDims& output_dims() const { return output_dims_; }

  /// The same product with `bias` (out_features values) added to its own bias, if it has one: fusion rule 10's
  /// layer. Its weights are views of this layer's, not a copy. Throws corgy::Error when bias has another length.
  TensorLinear with_added_bias(std::span<const float> bias) const;

 private:
  TensorDims dims_;
  TensorDims output_dims_;
  Linear linear_;
};

}  // namespace corgy
