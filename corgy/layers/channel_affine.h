// ChannelAffine: y = x * scale[c] + shift[c], a per-channel constant scale and offset (a constant multiplied or added
// per channel in an imported graph; a batch norm that no convolution precedes).
#pragma once

#include <span>

#include "corgy/layers/layer.h"

namespace corgy {

/// Input (N, channels, H, W) -> output of the same shape, y = activation(x * scale[c] + shift[c]); scale and shift
/// (1, 1, 1, channels), ones and zeros until set. BatchNorm computes the same from batch-norm statistics.
class ChannelAffine final : public Layer {
 public:
  /// Throws corgy::Error for channels <= 0.
  explicit ChannelAffine(int channels, Activation activation = Activation::none());

  std::string_view type() const override { return "channel_affine"; }
  std::string describe() const override;
  Shape output_shape(std::span<const Shape> inputs) const override;
  void upload(Backend& backend) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override {
    backend.channel_affine(*inputs[0], scale_, shift_, activation_, output);
  }

  int channels() const { return channels_; }
  Activation activation() const { return activation_; }
  /// Copies `channels` scales and shifts in; throws corgy::Error for another count.
  void set_parameters(std::span<const float> scale, std::span<const float> shift);
  const Variable& scale() const { return scale_; }
  const Variable& shift() const { return shift_; }

 private:
  int channels_;
  Activation activation_;
  Variable scale_;
  Variable shift_;
};

}  // namespace corgy
