// Elementwise: a + b, a - b, a * b or a / b of two feature maps, the second one equal in shape or one value per plane.
#pragma once

#include "corgy/layers/layer.h"

namespace corgy {

/// Inputs a (N, C, H, W) and b, either (N, C, H, W) or (N, C, 1, 1) (broadcast over each plane: the gate of a
/// squeeze-and-excitation block) -> output a op b, of a's shape. For a + b of equal shapes with an activation,
/// Add does the same and fuses the activation.
class Elementwise final : public Layer {
 public:
  explicit Elementwise(ElementwiseOp op) : op_(op) {}

  std::string_view type() const override { return "elementwise"; }
  std::string describe() const override;
  int arity() const override { return 2; }
  Shape output_shape(std::span<const Shape> inputs) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override {
    backend.elementwise(op_, *inputs[0], *inputs[1], output);
  }

  ElementwiseOp op() const { return op_; }

 private:
  ElementwiseOp op_;
};

/// "add", "subtract", "multiply" or "divide".
std::string_view elementwise_op_name(ElementwiseOp op);

}  // namespace corgy
