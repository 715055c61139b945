// SoftmaxAxis: softmax or log-softmax of a tensor of any rank along any axis but the batch.
#pragma once

#include "corgy/layers/layer.h"
#include "corgy/tensor_dims.h"
#include "corgy/tensor_math.h"

namespace corgy {

/// Input of dims `dims` (TensorDims, stored folded) -> output of the same dims, exp(x) / sum of exp(x) along `axis`
/// (with log_softmax, its logarithm), or along axes [axis, last_axis] taken as one (ONNX's Softmax before opset 13
/// flattens the axes from `axis` on). Softmax over the channels of a 4-D tensor is Softmax's.
class SoftmaxAxis final : public Layer {
 public:
  /// Throws corgy::Error unless 1 <= axis < rank.
  SoftmaxAxis(TensorDims dims, int axis, bool log_softmax = false) : SoftmaxAxis(dims, axis, axis, log_softmax) {}
  /// Throws corgy::Error unless 1 <= axis <= last_axis < rank.
  SoftmaxAxis(TensorDims dims, int axis, int last_axis, bool log_softmax);

  std::string_view type() const override { return "softmax_axis"; }
  std::string describe() const override;
  Shape output_shape(std::span<const Shape> inputs) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;

  int axis() const { return axis_; }
  bool log_softmax() const { return log_softmax_; }

 private:
  TensorDims dims_;
  int axis_;
  int last_axis_;
  bool log_softmax_;
};

}  // namespace corgy
