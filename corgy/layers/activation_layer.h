// ActivationLayer: an element-wise activation as a layer of its own. ReLU, LeakyReLU, Sigmoid and Tanh are
// named forms of it; a Conv2d, Linear or Add can fuse the same activation instead.
#pragma once

#include "corgy/layers/layer.h"

namespace corgy {

/// Input (N, C, H, W) -> output of the same shape.
class ActivationLayer : public Layer {
 public:
  explicit ActivationLayer(Activation activation) : activation_(activation) {}

  std::string_view type() const override;
  std::string describe() const override { return activation_.str(); }
  Shape output_shape(std::span<const Shape> inputs) const override { return inputs[0]; }
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;

  Activation activation() const { return activation_; }

 private:
  Activation activation_;
};

}  // namespace corgy
