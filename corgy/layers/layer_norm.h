// LayerNorm: normalisation of a tensor of any rank along one axis by each line's mean and variance, with a scale and
// shift per position along the axis (Ba et al. 2016; ConvNeXt's LayerNorm over the last axis and over the channels).
#pragma once

#include <span>

#include "corgy/layers/layer.h"
#include "corgy/tensor_dims.h"
#include "corgy/tensor_math.h"

namespace corgy {

/// Input of dims `dims` (TensorDims, stored folded) -> output of the same dims: along `axis`, each line x of
/// dims[axis] values becomes (x - mean(x)) / sqrt(var(x) + epsilon) * scale + shift (var biased, as PyTorch's
/// LayerNorm and the exported ReduceMean / Sub / Pow / ReduceMean / Add / Sqrt / Div chain compute it); scale and
/// shift (1, 1, 1, dims[axis]), ones and zeros until set. The model-level rewrite (corgy/model/fusion.h) makes one
/// from that chain.
class LayerNorm final : public Layer {
 public:
  /// Throws corgy::Error unless 1 <= axis < rank and epsilon >= 0.
  LayerNorm(TensorDims dims, int axis, float epsilon);

  std::string_view type() const override { return "layer_norm"; }
  std::string describe() const override;
  Shape output_shape(std::span<const Shape> inputs) const override;
  void upload(Backend& backend) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;
  double flops(std::span<const Shape> inputs) const override { return 8.0 * static_cast<double>(inputs[0].count()); }

  int axis() const { return axis_; }
  float epsilon() const { return epsilon_; }
  const TensorDims& dims() const { return dims_; }
  const Variable& scale() const { return scale_; }
  const Variable& shift() const { return shift_; }
  /// Copies dims[axis] scales and shifts in; throws corgy::Error for another count.
  void set_parameters(std::span<const float> scale, std::span<const float> shift);

 private:
  TensorDims dims_;
  int axis_;
  float epsilon_;
  Variable scale_;
  Variable shift_;
};

}  // namespace corgy
