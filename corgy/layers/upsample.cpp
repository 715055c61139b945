#include "corgy/layers/upsample.h"

#include <fmt/format.h>

namespace corgy {

Upsample::Upsample(int scale) : scale_(scale) {
  if (scale < 1) throw_parameter_error("upsample", fmt::format("scale {} must be >= 1", scale));
}

std::string Upsample::describe() const { return fmt::format("upsample x{}", scale_); }

Shape Upsample::output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  return {in.n, in.c, in.h * scale_, in.w * scale_};
}

void Upsample::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  backend.upsample_nearest(scale_, *inputs[0], output);
}

}  // namespace corgy
