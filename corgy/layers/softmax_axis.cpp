#include "corgy/layers/softmax_axis.h"

#include <fmt/format.h>

namespace corgy {

SoftmaxAxis::SoftmaxAxis(TensorDims dims, int axis, int last_axis, bool log_softmax)
    : dims_(dims), axis_(axis), last_axis_(last_axis), log_softmax_(log_softmax) {
  if (axis < 1 || last_axis < axis || last_axis >= dims.rank) {
    throw_parameter_error(describe(),
                          fmt::format("axes {} to {} of {}; corgy takes axes 1 to rank - 1 (never the batch)", axis,
                                      last_axis, dims.str()));
  }
}

std::string SoftmaxAxis::describe() const {
  const std::string axes =
      last_axis_ == axis_ ? fmt::format("axis {}", axis_) : fmt::format("axes {}..{}", axis_, last_axis_);
  return fmt::format("{} {} {}", log_softmax_ ? "log_softmax" : "softmax", dims_.str(), axes);
}

Shape SoftmaxAxis::output_shape(std::span<const Shape> inputs) const {
  return dims_.matching(inputs[0], describe()).folded();
}

void SoftmaxAxis::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  const TensorDims in = dims_.matching(inputs[0]->shape(), describe());
  backend.softmax_axis(AxisExtent::of(in, axis_, last_axis_), log_softmax_, *inputs[0], output);
}

}  // namespace corgy
