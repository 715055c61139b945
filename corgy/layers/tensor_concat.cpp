#include "corgy/layers/tensor_concat.h"

#include <fmt/format.h>

#include "corgy/error.h"

namespace corgy {

TensorConcat::TensorConcat(std::vector<TensorDims> inputs, int axis) : inputs_(std::move(inputs)), axis_(axis) {
  if (inputs_.empty()) throw_parameter_error("tensor_concat", "needs at least one input");
  output_ = inputs_[0];
  if (axis < 1 || axis >= output_.rank) {
    throw_parameter_error("tensor_concat", fmt::format("axis {} of tensors {}: the axis must be 1 to {} (axis 0 is "
                                                       "the batch)",
                                                       axis, output_.str(), output_.rank - 1));
  }
  const auto a = static_cast<std::size_t>(axis);
  for (std::size_t i = 1; i < inputs_.size(); ++i) {
    TensorDims off_axis = inputs_[i];
    if (off_axis.rank == output_.rank) off_axis.extent[a] = output_[axis];
    if (!(off_axis == output_)) {
      throw_parameter_error("tensor_concat", fmt::format("input {} is {}, which does not match input 0 {} but along "
                                                         "axis {}",
                                                         i, inputs_[i].str(), inputs_[0].str(), axis));
    }
    if (__builtin_add_overflow(output_.extent[a], inputs_[i][axis], &output_.extent[a])) {
      throw_parameter_error("tensor_concat",
                            fmt::format("the extents along axis {} add up to more than 2^31 - 1", axis));
    }
  }
}

std::string TensorConcat::describe() const {
  std::string text = fmt::format("tensor_concat axis {} of ", axis_);
  for (std::size_t i = 0; i < inputs_.size(); ++i) text += (i ? ", " : "") + inputs_[i].str();
  return text;
}

Shape TensorConcat::output_shape(std::span<const Shape> inputs) const {
  const int n = inputs_[0].matching(inputs[0], describe())[0];
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    const TensorDims in = inputs_[i].matching(inputs[i], describe());
    if (in[0] != n) {
      throw_shape_error(fmt::format("input {} with input 0's batch {} ({})", i, n, describe()), inputs[i]);
    }
  }
  return output_.with_batch(n).folded();
}

void TensorConcat::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  const TensorDims out = output_.with_batch(output.shape().n);
  const auto out_strides = out.strides();
  const auto a = static_cast<std::size_t>(axis_);
  std::int64_t first = 0;  // along the axis
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const TensorDims in = inputs_[i].matching(inputs[i]->shape(), describe());
    const auto in_strides = in.strides();
    StridedCopyDesc desc;
    desc.rank = in.rank;
    for (std::size_t k = 0; k < static_cast<std::size_t>(in.rank); ++k) {
      desc.extent[k] = in.extent[k];
      desc.input_stride[k] = static_cast<std::int64_t>(in_strides[k]);
      desc.output_stride[k] = static_cast<std::int64_t>(out_strides[k]);
    }
    desc.output_offset = first * desc.output_stride[a];
    backend.copy_strided(desc, *inputs[i], output);
    first += in[axis_];
  }
}

}  // namespace corgy
