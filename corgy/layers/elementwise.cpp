#include "corgy/layers/elementwise.h"

#include <fmt/format.h>

namespace corgy {

std::string_view elementwise_op_name(ElementwiseOp op) {
  switch (op) {
    case ElementwiseOp::add: return "add";
    case ElementwiseOp::subtract: return "subtract";
    case ElementwiseOp::multiply: return "multiply";
    case ElementwiseOp::divide: return "divide";
  }
  return "?";
}

std::string Elementwise::describe() const { return fmt::format("elementwise {}", elementwise_op_name(op_)); }

Shape Elementwise::output_shape(std::span<const Shape> inputs) const {
  const Shape& a = inputs[0];
  const Shape& b = inputs[1];
  if (b != a && b != Shape{a.n, a.c, 1, 1}) {
    throw_shape_error(fmt::format("a second input of shape {} or ({}, {}, 1, 1)", a.str(), a.n, a.c), b);
  }
  return a;
}

}  // namespace corgy
