// ConvTranspose2d: the transposed ("fractionally strided") convolution of decoders and segmentation heads.
#pragma once

#include <span>

#include "corgy/layers/layer.h"

namespace corgy {

/// Input (N, in_channels, H, W) -> output (N, out_channels, Ho, Wo), Ho = (H - 1) * stride_h - pad_top - pad_bottom
/// + dilation_h * (kernel_h - 1) + 1 + output_padding_h (Wo likewise): PyTorch's ConvTranspose2d (its padding on
/// both sides of an axis, output_padding) and ONNX's ConvTranspose (pads per side). Weights (in_channels,
/// out_channels / groups, kernel_h, kernel_w), PyTorch's and ONNX's layout, zero until set; bias (1, 1, 1,
/// out_channels). See ConvTranspose2dDesc for what each input pixel contributes where.
class ConvTranspose2d final : public Layer {
 public:
  /// Throws corgy::Error for non-positive channels, kernel, strides, dilations or groups, negative pads or output
  /// padding, values over 2^16, or channels that do not divide by groups.
  explicit ConvTranspose2d(const ConvTranspose2dDesc& desc, bool bias = true);

  std::string_view type() const override { return "conv_transpose2d"; }
  std::string describe() const override;
  Shape output_shape(std::span<const Shape> inputs) const override;
  void upload(Backend& backend) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;
  double flops(std::span<const Shape> inputs) const override;

  const ConvTranspose2dDesc& desc() const { return desc_; }
  Variable& weights() { return weights_; }
  const Variable& weights() const { return weights_; }
  /// Empty when the layer has no bias.
  Variable& bias() { return bias_; }
  const Variable& bias() const { return bias_; }
  bool has_bias() const { return !bias_.empty(); }

  /// Copies (in_channels, out_channels / groups, kernel_h, kernel_w) weights in; throws corgy::Error (with both
  /// counts) when the size is wrong.
  void set_weights(std::span<const float> weights);
  /// Copies out_channels values in, creating the bias if the layer had none.
  void set_bias(std::span<const float> bias);

 private:
  ConvTranspose2dDesc desc_;
  Variable weights_;
  Variable bias_;
};

}  // namespace corgy
