// Unary: an element-wise function of a tensor of any rank (sqrt, erf, exp, log, neg, abs, reciprocal, floor, ceil,
// square).
#pragma once

#include "corgy/layers/layer.h"
#include "corgy/tensor_math.h"

namespace corgy {

/// Input of any shape (a tensor of any rank, stored folded) -> output of the same shape, op(x) per value. The
/// activations that fuse into convolutions (ReLU, sigmoid, ...) are ActivationLayer's.
class Unary final : public Layer {
 public:
  explicit Unary(UnaryOp op) : op_(op) {}

  std::string_view type() const override { return "unary"; }
  std::string describe() const override;
  Shape output_shape(std::span<const Shape> inputs) const override { return inputs[0]; }
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override {
    backend.unary(op_, *inputs[0], output);
  }
  double flops(std::span<const Shape> inputs) const override { return static_cast<double>(inputs[0].count()); }

  UnaryOp op() const { return op_; }

 private:
  UnaryOp op_;
};

}  // namespace corgy
