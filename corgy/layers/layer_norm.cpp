#include "corgy/layers/layer_norm.h"

#include <fmt/format.h>

#include <algorithm>

#include "corgy/error.h"

namespace corgy {

LayerNorm::LayerNorm(TensorDims dims, int axis, float epsilon) : dims_(dims), axis_(axis), epsilon_(epsilon) {
  if (axis < 1 || axis >= dims.rank || !(epsilon >= 0.0f)) {
    throw_parameter_error(describe(), fmt::format("axis {} of {} with epsilon {}; corgy normalises along axes 1 to "
                                                  "rank - 1 (never the batch) with epsilon >= 0",
                                                  axis, dims.str(), epsilon));
  }
  scale_ = Variable(Shape::vector(dims[axis]));
  scale_.fill(1.0f);
  shift_ = Variable(Shape::vector(dims[axis]));
}

std::string LayerNorm::describe() const {
  return fmt::format("layer_norm {} axis {} eps {:g}", dims_.str(), axis_, epsilon_);
}

Shape LayerNorm::output_shape(std::span<const Shape> inputs) const {
  return dims_.matching(inputs[0], describe()).folded();
}

void LayerNorm::upload(Backend& backend) const {
  backend.upload_constant(scale_);
  backend.upload_constant(shift_);
}

void LayerNorm::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  const TensorDims in = dims_.matching(inputs[0]->shape(), describe());
  backend.layer_norm(AxisExtent::of(in, axis_, axis_), epsilon_, scale_, shift_, *inputs[0], output);
}

void LayerNorm::set_parameters(std::span<const float> scale, std::span<const float> shift) {
  const auto length = static_cast<std::size_t>(dims_[axis_]);
  if (scale.size() != length || shift.size() != length) {
    throw Error(
        fmt::format("{}: needs {} scales and shifts, got {} and {}", describe(), length, scale.size(), shift.size()));
  }
  std::copy(scale.begin(), scale.end(), scale_.data());
  std::copy(shift.begin(), shift.end(), shift_.data());
}

}  // namespace corgy
