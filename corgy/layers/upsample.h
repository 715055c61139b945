// Upsample: nearest-neighbour enlargement by an integer factor (darknet's [upsample]).
#pragma once

#include "corgy/layers/layer.h"

namespace corgy {

/// Input (N, C, H, W) -> output (N, C, H*scale, W*scale); each output pixel copies input (y/scale, x/scale).
class Upsample final : public Layer {
 public:
  /// Throws corgy::Error for scale < 1.
  explicit Upsample(int scale);

  std::string_view type() const override { return "upsample"; }
  std::string describe() const override;
  Shape output_shape(std::span<const Shape> inputs) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;

  int scale() const { return scale_; }

 private:
  int scale_;
};

}  // namespace corgy
