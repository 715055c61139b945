#include "corgy/layers/unary.h"

#include <fmt/format.h>

namespace corgy {

std::string Unary::describe() const { return fmt::format("unary {}", unary_op_name(op_)); }

}  // namespace corgy
