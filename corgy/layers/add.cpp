#include "corgy/layers/add.h"

#include <fmt/format.h>

namespace corgy {

std::string Add::describe() const {
  return activation_.kind == ActivationKind::none ? "add" : "add, " + activation_.str();
}

Shape Add::output_shape(std::span<const Shape> inputs) const {
  if (inputs[1] != inputs[0]) throw_shape_error(fmt::format("both inputs of shape {}", inputs[0].str()), inputs[1]);
  return inputs[0];
}

}  // namespace corgy
