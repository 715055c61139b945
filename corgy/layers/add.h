// Add: element-wise sum of two feature maps (residual connection, darknet's [shortcut]).
#pragma once

#include "corgy/layers/layer.h"

namespace corgy {

/// Inputs a and b, both (N, C, H, W) -> output activation(a + b), same shape.
class Add final : public Layer {
 public:
  explicit Add(Activation activation = {}) : activation_(activation) {}

  std::string_view type() const override { return "add"; }
  std::string describe() const override;
  int arity() const override { return 2; }
  Shape output_shape(std::span<const Shape> inputs) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override {
    backend.add(*inputs[0], *inputs[1], activation_, output);
  }

  Activation activation() const { return activation_; }

 private:
  Activation activation_;
};

}  // namespace corgy
