// Conv2d: 2-D convolution with bias and a fused activation; batch norm can be folded into it at load time.
#pragma once

#include <optional>
#include <span>

#include "corgy/layers/layer.h"

namespace corgy {

struct Conv2dOptions {
  int in_channels = 0;
  int out_channels = 0;
  int kernel = 3;
  int stride = 1;
  int padding = 0;
  /// How the `padding` border is filled: zeros (PadMode::constant, the default; PyTorch's padding_mode "zeros"),
  /// the input mirrored without repeating its edge (PadMode::reflect, PyTorch's "reflect") or its edge repeated
  /// (PadMode::edge, PyTorch's "replicate"). Reflect and edge run as a Pad layer into a temporary followed by this
  /// convolution without padding (Sequential plans both; corgy/model/padded_conv.h), so every backend computes
  /// them and no convolution kernel needs to know about them. Reflect needs padding < the input's H and W.
  PadMode padding_mode = PadMode::constant;
  int dilation = 1;
  /// A window that differs between height and width (a 1x7 kernel, strides (2, 1), pads per side): when set, it
  /// replaces kernel, stride, padding and dilation, which are then ignored. Zero padding only.
  std::optional<Conv2dWindow> window{};
  /// in_channels and out_channels must both divide by groups; groups == in_channels is depthwise.
  int groups = 1;
  bool bias = true;
  Activation activation{};
};

/// Inference batch-norm parameters per channel: y = gamma * (x - mean) / sqrt(variance + epsilon) + beta.
struct BatchNormParams {
  std::span<const float> gamma;
  std::span<const float> beta;
  std::span<const float> mean;
  std::span<const float> variance;
  float epsilon = 1e-5f;
};

/// Input (N, in_channels, H, W) -> output (N, out_channels, Ho, Wo), Ho = (H + 2p - d(k-1) - 1) / s + 1 (per axis,
/// with its two pads, for a Conv2dOptions::window). Weights OIHW (out_channels, in_channels / groups, kernel_h,
/// kernel_w), zero until set; bias (1, 1, 1, out_channels).
/// With a padding mode other than zeros, the layer runs only inside a Sequential (see Conv2dOptions::padding_mode).
class Conv2d final : public Layer {
 public:
  /// Throws corgy::Error for non-positive sizes or channels that do not divide by groups.
  explicit Conv2d(const Conv2dOptions& options);

  std::string_view type() const override { return "conv2d"; }
  std::string describe() const override;
  Shape output_shape(std::span<const Shape> inputs) const override;
  void upload(Backend& backend) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;
  double flops(std::span<const Shape> inputs) const override;

  const Conv2dDesc& desc() const { return desc_; }
  /// PadMode::constant (zeros), reflect or edge; desc().padding is the border's width in every mode.
  PadMode padding_mode() const { return padding_mode_; }
  /// The same convolution without padding, sharing this layer's weight and bias storage (views): what runs after
  /// the Pad of a reflect or edge padded convolution.
  Conv2d without_padding() const;
  Variable& weights() { return weights_; }
  const Variable& weights() const { return weights_; }
  /// Empty when the layer has no bias.
  Variable& bias() { return bias_; }
  const Variable& bias() const { return bias_; }
  bool has_bias() const { return !bias_.empty(); }

  /// Copies OIHW weights in; throws corgy::Error (with both counts) when the size is wrong.
  void set_weights(std::span<const float> oihw);
  /// Copies the bias in, creating it if the layer had none.
  void set_bias(std::span<const float> bias);
  /// Folds a following batch norm into weights and bias, once, at load time (as MPSCNN's descriptor does).
  void fold_batch_norm(const BatchNormParams& bn);

 private:
  Conv2dDesc desc_;
  PadMode padding_mode_ = PadMode::constant;
  Variable weights_;
  Variable bias_;
};

}  // namespace corgy
