// MaxPool2d: Max pooling; padded cells never win.
#pragma once

#include "corgy/layers/layer.h"
#include "corgy/layers/pool_options.h"

namespace corgy {

/// Input (N, C, H, W) -> output (N, C, Ho, Wo), Ho = (H + padding + padding_bottom_right - kernel) / stride + 1
/// (1 x 1 for global pooling).
class MaxPool2d final : public Layer {
 public:
  /// Throws corgy::Error for a non-positive kernel, negative padding or padding >= kernel.
  explicit MaxPool2d(const PoolOptions& options);
  /// Darknet's [maxpool]: `padding` cells in all (default size - 1), split top/left = padding / 2 and
  /// bottom/right = the rest, so size 2 stride 1 keeps the spatial size.
  static MaxPool2d darknet(int size, int stride, int padding = -1);

  std::string_view type() const override { return "maxpool2d"; }
  std::string describe() const override;
  Shape output_shape(std::span<const Shape> inputs) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;

  const PoolOptions& options() const { return options_; }

 private:
  PoolOptions options_;
};

}  // namespace corgy
