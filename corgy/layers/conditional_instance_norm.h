// ConditionalInstanceNorm: instance normalisation whose scale and shift mix per-style parameters by a settable
// style-weight vector (Dumoulin et al., "A Learned Representation for Artistic Style"), so one network renders
// many styles and blends of them.
#pragma once

#include <span>

#include "corgy/layers/layer.h"

namespace corgy {

/// Input (N, channels, H, W) -> output of the same shape:
/// y = activation((x - mean) / sqrt(variance + epsilon) * scale[c] + shift[c]), with the mean and biased variance of
/// each plane (n, c) over its H x W values (as InstanceNorm), and
///   scale[c] = sum_s w[s] * gamma[s][c],   shift[c] = sum_s w[s] * beta[s][c]
/// for the style weights w (styles values; a blend usually sums to 1). gamma and beta are (1, 1, styles, channels),
/// style-major as PyTorch's (styles, channels) parameters; ones and zeros until set. The style weights start as
/// style 0 alone.
///
/// Changing the style weights is cheap on every backend: the layer mixes scale and shift on the host (styles x
/// channels multiply-adds) and hands them to the backend as ordinary tensors that each forward reads, not as
/// constants, so nothing is re-uploaded (no Sequential::weights_changed() needed) and a GPU backend's recorded
/// forward stays valid; the next forward uses the new mix.
class ConditionalInstanceNorm final : public Layer {
 public:
  /// Throws corgy::Error for channels <= 0, styles <= 0 or epsilon < 0.
  ConditionalInstanceNorm(int channels, int styles, float epsilon = 1e-5f, Activation activation = {});

  std::string_view type() const override { return "conditional_instance_norm"; }
  std::string describe() const override;
  Shape output_shape(std::span<const Shape> inputs) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;

  int channels() const { return channels_; }
  int styles() const { return styles_; }
  float epsilon() const { return epsilon_; }
  Activation activation() const { return activation_; }

  /// Copies gamma and beta in, styles x channels values each, style-major. Throws corgy::Error for another count.
  void set_style_parameters(std::span<const float> gamma, std::span<const float> beta);
  /// Sets the mix: one weight per style. Throws corgy::Error for another count or a value that is not finite.
  void set_style_weights(std::span<const float> weights);

  const Variable& gamma() const { return gamma_; }
  const Variable& beta() const { return beta_; }
  const Variable& style_weights() const { return style_weights_; }
  /// The mixed per-channel scale and shift the backend gets, (1, 1, 1, channels).
  const Variable& scale() const { return scale_; }
  const Variable& shift() const { return shift_; }

 private:
  void mix();

  int channels_;
  int styles_;
  float epsilon_;
  Activation activation_;
  Variable gamma_;
  Variable beta_;
  Variable style_weights_;
  Variable scale_;
  Variable shift_;
};

}  // namespace corgy
