#include "corgy/layers/broadcast_binary.h"

#include <fmt/format.h>

#include <array>
#include <utility>

#include "corgy/error.h"

namespace corgy {

BroadcastBinary::BroadcastBinary(BinaryOp op, TensorDims a_dims, TensorDims b_dims)
    : BroadcastBinary(op, a_dims, b_dims, false, false) {}

BroadcastBinary::BroadcastBinary(BinaryOp op, TensorDims a_dims, TensorDims b_dims, bool a_constant, bool b_constant)
    : op_(op), a_dims_(a_dims), b_dims_(b_dims), constant_first_(a_constant) {
  const TensorDims out = broadcast(a_dims, b_dims);  // throws for dims that do not broadcast
  for (const auto& [dims, constant] : {std::pair{a_dims, a_constant}, std::pair{b_dims, b_constant}}) {
    if (constant) continue;
    if (dims.rank != out.rank || dims[0] != out[0]) {
      throw_parameter_error(describe(), fmt::format("the activation {} must keep its batch axis first in the result {}",
                                                    dims.str(), out.str()));
    }
  }
}

BroadcastBinary BroadcastBinary::with_constant(BinaryOp op, TensorDims x_dims, TensorDims constant_dims,
                                               std::span<const float> values, bool constant_first) {
  BroadcastBinary layer = constant_first ? BroadcastBinary(op, constant_dims, x_dims, true, false)
                                         : BroadcastBinary(op, x_dims, constant_dims, false, true);
  if (values.size() != constant_dims.count()) {
    throw_parameter_error(layer.describe(), fmt::format("a constant {} needs {} values, got {}", constant_dims.str(),
                                                        constant_dims.count(), values.size()));
  }
  layer.constant_.emplace(constant_dims.folded(), values);
  return layer;
}

std::string BroadcastBinary::describe() const {
  return fmt::format("broadcast_binary {} {}{} {}{}", binary_op_name(op_), a_dims_.str(),
                     constant_ && constant_first_ ? " (constant)" : "", b_dims_.str(),
                     constant_ && !constant_first_ ? " (constant)" : "");
}

void BroadcastBinary::operand_dims(std::span<const Shape> inputs, TensorDims& a, TensorDims& b) const {
  const std::string name = describe();
  if (!constant_) {
    a = a_dims_.matching(inputs[0], name);
    b = b_dims_.matching(inputs[1], name);
    if (a[0] != b[0]) {
      throw Error(fmt::format("{}: operands {} and {} differ in batch", name, a.str(), b.str()));
    }
  } else if (constant_first_) {
    a = a_dims_;
    b = b_dims_.matching(inputs[0], name);
  } else {
    a = a_dims_.matching(inputs[0], name);
    b = b_dims_;
  }
  // A constant with the batch axis broadcasts over it only with extent 1 there.
  const TensorDims& x = constant_ && constant_first_ ? b : a;
  const TensorDims out = broadcast(a, b);
  if (out[0] != x[0]) {
    throw Error(fmt::format("{}: the constant would broadcast the batch of {} to {}", name, x.str(), out.str()));
  }
}

Shape BroadcastBinary::output_shape(std::span<const Shape> inputs) const {
  TensorDims a, b;
  operand_dims(inputs, a, b);
  return broadcast(a, b).folded();
}

void BroadcastBinary::upload(Backend& backend) const {
  if (constant_) backend.upload_constant(*constant_);
}

void BroadcastBinary::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  std::array<Shape, 2> shapes{};
  for (std::size_t i = 0; i < inputs.size(); ++i) shapes[i] = inputs[i]->shape();
  TensorDims a, b;
  operand_dims(std::span<const Shape>(shapes.data(), inputs.size()), a, b);
  const BroadcastDesc desc = BroadcastDesc::of(a, b);
  const Variable& left = constant_ && constant_first_ ? *constant_ : *inputs[0];
  const Variable& right = !constant_ ? *inputs[1] : constant_first_ ? *inputs[0] : *constant_;
  backend.broadcast_binary(op_, desc, left, right, output);
}

double BroadcastBinary::flops(std::span<const Shape> inputs) const {
  return static_cast<double>(output_shape(inputs).count());
}

}  // namespace corgy
