#include "corgy/layers/layer.h"

#include <fmt/format.h>

#include "corgy/error.h"

namespace corgy {

void throw_shape_error(std::string_view expected, const Shape& got) {
  throw Error(fmt::format("expects {}, got input {}", expected, got.str()));
}

void throw_parameter_error(std::string_view layer, std::string_view message) {
  throw Error(fmt::format("{}: {}", layer, message));
}

}  // namespace corgy
