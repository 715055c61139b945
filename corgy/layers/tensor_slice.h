// TensorSlice: every step-th element along some axes of a tensor of rank 1 to 6 (ONNX Slice with constant starts,
// ends and steps; each output of Split; Gather of one constant index, with a Reshape dropping the axis).
#pragma once

#include <cstdint>
#include <vector>

#include "corgy/layers/layer.h"
#include "corgy/tensor_dims.h"

namespace corgy {

/// The elements start, start + step, ... before stop along one axis, as Python's range(start, stop, step):
/// 0 <= start < extent, step != 0, and start < stop <= extent for step > 0, -1 <= stop < start for step < 0 (a
/// reversed slice). ONNX's negative and out-of-range starts and ends are clamped into this form by the loader.
struct SliceAxis {
  int axis = 1;
  int start = 0;
  int stop = 1;
  int step = 1;

  /// The elements taken: ceil((stop - start) / step), in 64 bits so that no step overflows it.
  int count() const {
    const std::int64_t span = step > 0 ? std::int64_t{stop} - start : std::int64_t{start} - stop;
    const std::int64_t magnitude = step > 0 ? std::int64_t{step} : -std::int64_t{step};
    return static_cast<int>((span + magnitude - 1) / magnitude);
  }
};

/// Input: a tensor of dims `input` (any batch), folded. Output: the same rank, each sliced axis of extent
/// SliceAxis::count(), the others whole, folded. Axis 0 (the batch) is never sliced.
class TensorSlice final : public Layer {
 public:
  /// Throws corgy::Error for an axis out of range, axis 0, an axis named twice or a range outside the rules above.
  TensorSlice(const TensorDims& input, std::vector<SliceAxis> axes);

  std::string_view type() const override { return "tensor_slice"; }
  /// "tensor_slice of (1, 64, 80) axis 1 [0, 16) axis 2 [79, -1) step -2".
  std::string describe() const override;
  /// Throws corgy::Error when the input is not the fold of `input` for some batch.
  Shape output_shape(std::span<const Shape> inputs) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;

  const TensorDims& input_dims() const { return input_; }
  const TensorDims& output_dims() const { return output_; }
  const std::vector<SliceAxis>& axes() const { return axes_; }

 private:
  TensorDims input_;
  TensorDims output_;
  std::vector<SliceAxis> axes_;
};

}  // namespace corgy
