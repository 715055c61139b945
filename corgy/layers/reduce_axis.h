// ReduceAxis: the mean, sum, maximum or minimum of a tensor of any rank along one axis or several adjacent ones.
#pragma once

#include "corgy/layers/layer.h"
#include "corgy/tensor_dims.h"
#include "corgy/tensor_math.h"

namespace corgy {

/// Input of dims `dims` (TensorDims, stored folded) -> the reduction along axes [first, last] (adjacent axes reduce
/// as one; others by successive layers), those axes kept with extent 1 (keep_dims) or dropped. The batch axis 0 is
/// never reduced. A mean over the two spatial axes of an (N, C, H, W) tensor is AvgPool2d::global()'s, faster.
class ReduceAxis final : public Layer {
 public:
  /// Throws corgy::Error when the axes are not 1 <= first <= last < rank.
  ReduceAxis(ReduceOp op, TensorDims dims, int first, int last, bool keep_dims);

  std::string_view type() const override { return "reduce_axis"; }
  std::string describe() const override;
  Shape output_shape(std::span<const Shape> inputs) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;
  double flops(std::span<const Shape> inputs) const override { return static_cast<double>(inputs[0].count()); }

  /// The output's dims for the graph's batch.
  TensorDims output_dims() const { return output_dims_; }
  ReduceOp op() const { return op_; }
  const TensorDims& input_dims() const { return dims_; }
  int first_axis() const { return first_; }
  int last_axis() const { return last_; }
  bool keeps_dims() const { return output_dims_.rank == dims_.rank; }

 private:
  ReduceOp op_;
  TensorDims dims_;
  int first_;
  int last_;
  TensorDims output_dims_;
};

}  // namespace corgy
