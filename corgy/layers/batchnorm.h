// BatchNorm: inference-time batch normalisation as a layer of its own (fold it into a Conv2d where one precedes).
#pragma once

#include "corgy/layers/conv2d.h"
#include "corgy/layers/layer.h"

namespace corgy {

/// Input (N, channels, H, W) -> output of the same shape:
/// y = gamma * (x - mean) / sqrt(variance + epsilon) + beta, computed as y = x * scale + shift with scale and shift
/// (1, 1, 1, channels) prepared when the parameters are set. Identity until set.
class BatchNorm final : public Layer {
 public:
  /// Throws corgy::Error for channels <= 0.
  explicit BatchNorm(int channels);

  std::string_view type() const override { return "batchnorm"; }
  std::string describe() const override;
  Shape output_shape(std::span<const Shape> inputs) const override;
  void upload(Backend& backend) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;

  /// Throws corgy::Error when a parameter does not have `channels` values.
  void set_parameters(const BatchNormParams& params);
  const Variable& scale() const { return scale_; }
  const Variable& shift() const { return shift_; }

 private:
  int channels_;
  Variable scale_;
  Variable shift_;
};

}  // namespace corgy
