// FusedConv2d: a convolution with the element-wise layers after it folded into its output pass.
#pragma once

#include "corgy/layers/conv2d.h"

namespace corgy {

/// Input (N, in_channels, H, W), and with a residual a second input of the output's shape -> output
/// (N, out_channels, Ho, Wo) = activation(conv(input) + bias [+ residual]).
///
/// Sequential makes these when it plans a forward (corgy/model/fusion.h): a convolution whose output only an
/// activation layer reads becomes one with that activation (x * sigmoid(x) counts as swish), and one whose output
/// only an Add reads becomes one that adds the Add's other input and applies its activation
/// (Backend::conv2d_add), so the convolution's output is never written and read back. Like Conv2dMaxPool, the
/// layer shares the convolution's weight and bias storage (views).
class FusedConv2d final : public Layer {
 public:
  /// `conv` must have no activation of its own (and zero padding: reflect and edge padding run as Pad first).
  FusedConv2d(const Conv2d& conv, Activation activation, bool residual);

  std::string_view type() const override { return "fused_conv2d"; }
  std::string describe() const override;
  int arity() const override { return residual_ ? 2 : 1; }
  Shape output_shape(std::span<const Shape> inputs) const override;
  void upload(Backend& backend) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;
  double flops(std::span<const Shape> inputs) const override;

  /// The convolution's description with the fused activation.
  const Conv2dDesc& desc() const { return desc_; }
  bool residual() const { return residual_; }
  const Variable& weights() const { return weights_; }
  /// Empty when the convolution has no bias.
  const Variable& bias() const { return bias_; }

 private:
  Conv2dDesc desc_;
  std::string conv_description_;
  bool residual_;
  Variable weights_;  // views of the convolution's storage
  Variable bias_;
};

}  // namespace corgy
