// SqueezeExcite: a squeeze-and-excitation block (global average pool, 1x1 convolution, activation, 1x1 convolution,
// gate activation, per-channel product with the block's input) as one layer.
#pragma once

#include <string>

#include "corgy/layers/layer.h"

namespace corgy {

/// Input (N, C, H, W) -> output of the same shape: each channel plane scaled by its gate (SqueezeExciteDesc).
///
/// Sequential makes these when it plans a forward (corgy/model/fusion.h) from the layers an exporter writes for
/// the block: AvgPool2d::global(), two 1x1 convolutions (each with its activation fused), and an Elementwise
/// multiply of the block's input by the gates. The backend computes the block in one operation
/// (Backend::squeeze_excite) instead of four, three of them on 1x1 maps. The layer shares the convolutions' weight
/// and bias storage (views).
class SqueezeExcite final : public Layer {
 public:
  /// The block's two convolutions: reduce (C -> S, 1x1) and expand (S -> C, 1x1), as desc + OIHW weights + bias
  /// (empty when absent).
  SqueezeExcite(const Conv2dDesc& reduce, const Variable& reduce_weights, const Variable& reduce_bias,
                const Conv2dDesc& expand, const Variable& expand_weights, const Variable& expand_bias);

  std::string_view type() const override { return "squeeze_excite"; }
  std::string describe() const override;
  Shape output_shape(std::span<const Shape> inputs) const override;
  void upload(Backend& backend) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;
  double flops(std::span<const Shape> inputs) const override;

  const SqueezeExciteDesc& desc() const { return desc_; }
  /// The two convolutions' weights and biases (a bias empty when absent).
  const Variable& reduce_weights() const { return reduce_weights_; }
  const Variable& reduce_bias() const { return reduce_bias_; }
  const Variable& expand_weights() const { return expand_weights_; }
  const Variable& expand_bias() const { return expand_bias_; }

 private:
  SqueezeExciteDesc desc_;
  Variable reduce_weights_;  // views of the convolutions' storage
  Variable reduce_bias_;
  Variable expand_weights_;
  Variable expand_bias_;
};

}  // namespace corgy
