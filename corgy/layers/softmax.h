// Softmax over the channel axis.
#pragma once

#include "corgy/layers/layer.h"

namespace corgy {

/// Input (N, C, H, W) -> output of the same shape; softmax over C separately for every (n, h, w). For the
/// output of Linear, (N, classes, 1, 1), this is the usual per-sample softmax.
class Softmax final : public Layer {
 public:
  std::string_view type() const override { return "softmax"; }
  Shape output_shape(std::span<const Shape> inputs) const override { return inputs[0]; }
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override {
    backend.softmax(*inputs[0], output);
  }
};

}  // namespace corgy
