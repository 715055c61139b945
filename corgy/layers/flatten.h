// Flatten: (N, C, H, W) -> (N, C*H*W, 1, 1), the same memory seen with another shape.
#pragma once

#include "corgy/layers/layer.h"

namespace corgy {

/// Input (N, C, H, W) -> output (N, C*H*W, 1, 1) in NCHW order (PyTorch's flatten order). No copy: the output
/// is a view of the input.
class Flatten final : public Layer {
 public:
  std::string_view type() const override { return "flatten"; }
  Shape output_shape(std::span<const Shape> inputs) const override {
    return {inputs[0].n, static_cast<int>(inputs[0].image_count()), 1, 1};
  }
  void forward(Backend&, std::span<const Variable* const>, Variable&) const override {}
  bool is_view() const override { return true; }
};

}  // namespace corgy
