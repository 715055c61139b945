// Concat: joins feature maps along the channel axis (darknet's [route] with several layers).
#pragma once

#include "corgy/layers/layer.h"

namespace corgy {

/// Inputs (N, C_i, H, W), one or more, with equal N, H, W -> output (N, sum of C_i, H, W), in input order.
/// With one input it is a copy (darknet's [route] of a single layer).
class Concat final : public Layer {
 public:
  std::string_view type() const override { return "concat"; }
  int arity() const override { return any_arity; }
  Shape output_shape(std::span<const Shape> inputs) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override {
    backend.concat_channels(inputs, output);
  }
};

}  // namespace corgy
