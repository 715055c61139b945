// InstanceNorm: each plane of each image normalised by its own statistics (style transfer's normalisation).
#pragma once

#include <span>

#include "corgy/layers/layer.h"

namespace corgy {

/// Input (N, channels, H, W) -> output of the same shape:
/// y = activation((x - mean) / sqrt(variance + epsilon) * scale[c] + shift[c]), with the mean and the biased
/// variance of each plane (n, c) over its H x W values, as PyTorch's InstanceNorm2d(affine=True) in eval mode
/// (without running statistics) and ONNX's InstanceNormalization compute it. scale and shift are
/// (1, 1, 1, channels), ones and zeros until set (PyTorch's affine=False). The activation is fused into the same
/// pass (style networks put a ReLU after most instance norms).
class InstanceNorm final : public Layer {
 public:
  /// Throws corgy::Error for channels <= 0 or epsilon < 0.
  explicit InstanceNorm(int channels, float epsilon = 1e-5f, Activation activation = {});

  std::string_view type() const override { return "instance_norm"; }
  std::string describe() const override;
  Shape output_shape(std::span<const Shape> inputs) const override;
  void upload(Backend& backend) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;

  int channels() const { return channels_; }
  float epsilon() const { return epsilon_; }
  Activation activation() const { return activation_; }
  /// Copies the per-channel scale (gamma, PyTorch's weight) and shift (beta, PyTorch's bias) in; throws
  /// corgy::Error when either does not have `channels` values.
  void set_parameters(std::span<const float> scale, std::span<const float> shift);
  Variable& scale() { return scale_; }
  const Variable& scale() const { return scale_; }
  Variable& shift() { return shift_; }
  const Variable& shift() const { return shift_; }

 private:
  int channels_;
  float epsilon_;
  Activation activation_;
  Variable scale_;
  Variable shift_;
};

}  // namespace corgy
