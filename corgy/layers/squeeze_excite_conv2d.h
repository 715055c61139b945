// SqueezeExciteConv2d: a squeeze-and-excitation block and the pointwise convolution that reads its output, as one
// layer (MobileNetV3's and EfficientNet's SE -> projection).
#pragma once

#include <string>

#include "corgy/layers/squeeze_excite.h"

namespace corgy {

/// Input (N, C, H, W), and with a residual a second input of the output's shape -> output (N, O, H, W) =
/// activation(conv(squeeze_excite(input)) + bias [+ residual]), conv a pointwise convolution C -> O.
///
/// Sequential makes these when it plans a forward (corgy/model/fusion.h rule 9) from a SqueezeExcite whose output
/// only a pointwise convolution reads (a Conv2d or a FusedConv2d, with or without its residual add): the backend may
/// then apply each (image, channel) gate while it reads the convolution's input (Backend::squeeze_excite_conv2d), so
/// the scaled tensor (the block's expanded tensor, its largest) is never written and read back. The layer shares the
/// block's and the convolution's storage (views).
class SqueezeExciteConv2d final : public Layer {
 public:
  /// `conv`: the pointwise convolution's description (with its activation, the one after the add with a residual),
  /// OIHW weights and bias (empty when absent).
  SqueezeExciteConv2d(const SqueezeExcite& excite, const Conv2dDesc& conv, const Variable& weights,
                      const Variable& bias, bool residual);

  std::string_view type() const override { return "squeeze_excite_conv2d"; }
  std::string describe() const override;
  int arity() const override { return residual_ ? 2 : 1; }
  Shape output_shape(std::span<const Shape> inputs) const override;
  void upload(Backend& backend) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;
  double flops(std::span<const Shape> inputs) const override;

  const Conv2dDesc& desc() const { return desc_; }
  bool residual() const { return residual_; }
  /// The block's description and parameters (a bias empty when absent), and the convolution's weights and bias.
  const SqueezeExciteDesc& excite() const { return excite_; }
  const Variable& reduce_weights() const { return reduce_weights_; }
  const Variable& reduce_bias() const { return reduce_bias_; }
  const Variable& expand_weights() const { return expand_weights_; }
  const Variable& expand_bias() const { return expand_bias_; }
  const Variable& weights() const { return weights_; }
  const Variable& bias() const { return bias_; }

 private:
  SqueezeExciteDesc excite_;
  Conv2dDesc desc_;
  bool residual_;
  Variable reduce_weights_;  // views of the block's and the convolution's storage
  Variable reduce_bias_;
  Variable expand_weights_;
  Variable expand_bias_;
  Variable weights_;
  Variable bias_;
};

}  // namespace corgy
