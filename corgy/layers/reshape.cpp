#include "corgy/layers/reshape.h"

#include <fmt/format.h>

#include "corgy/error.h"

namespace corgy {

Reshape::Reshape(const TensorDims& input, const TensorDims& output) : input_(input), output_(output) {
  if (input[0] != output[0] || input.count() != output.count()) {
    throw_parameter_error("reshape", fmt::format("reshapes {} to {}: corgy needs the same batch (axis 0) and the same "
                                                 "number of elements",
                                                 input.str(), output.str()));
  }
}

std::string Reshape::describe() const { return fmt::format("reshape {} to {}", input_.str(), output_.str()); }

Shape Reshape::output_shape(std::span<const Shape> inputs) const {
  const TensorDims in = input_.matching(inputs[0], describe());
  return output_.with_batch(in[0]).folded();
}

}  // namespace corgy
