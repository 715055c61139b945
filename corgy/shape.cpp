#include "corgy/shape.h"

#include <fmt/format.h>

namespace corgy {

std::string Shape::str() const { return fmt::format("({}, {}, {}, {})", n, c, h, w); }

}  // namespace corgy
