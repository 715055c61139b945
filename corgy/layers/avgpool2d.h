// AvgPool2d: Average pooling; global() averages each channel plane to one value.
#pragma once

#include "corgy/layers/layer.h"
#include "corgy/layers/pool_options.h"

namespace corgy {

/// Input (N, C, H, W) -> output (N, C, Ho, Wo), Ho = (H + padding + padding_bottom_right - kernel) / stride + 1
/// (1 x 1 for global pooling).
class AvgPool2d final : public Layer {
 public:
  /// Throws corgy::Error for a non-positive kernel, negative padding or padding >= kernel.
  explicit AvgPool2d(const PoolOptions& options);
  /// Global average pooling: (N, C, H, W) -> (N, C, 1, 1).
  static AvgPool2d global();

  std::string_view type() const override { return "avgpool2d"; }
  std::string describe() const override;
  Shape output_shape(std::span<const Shape> inputs) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;

  const PoolOptions& options() const { return options_; }

 private:
  PoolOptions options_;
};

}  // namespace corgy
