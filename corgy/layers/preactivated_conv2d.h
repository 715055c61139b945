// PreactivatedConv2d: a convolution whose input is first normalised per channel and activated, and may be the
// channel concatenation of several tensors (DenseNet's BN-ReLU-Conv on its concatenated features).
#pragma once

#include <optional>
#include <string>

#include "corgy/layers/avgpool2d.h"
#include "corgy/layers/channel_affine.h"
#include "corgy/layers/conv2d.h"

namespace corgy {

/// Inputs (N, C_i, H, W), one or more, with sum C_i = in_channels -> output (N, out_channels, Ho, Wo) =
/// conv(a) with a = input_activation(concat(inputs) * scale[c] + shift[c]), the convolution with its own bias and
/// activation; zero padding pads a.
///
/// Sequential makes these when it plans a forward (corgy/model/fusion.h) from a ChannelAffine (a batch norm no
/// convolution precedes, with its activation) whose output only a pointwise convolution reads, and the Concat
/// before the ChannelAffine when only it reads the Concat: the backend may then apply the affine while it reads the
/// convolution's input (Backend::preactivated_conv2d), so neither the concatenation nor the normalised tensor is
/// written. The layer shares the convolution's and the affine's storage (views).
///
/// It may also average-pool a before the convolution, output = conv(avgpool(a)): Sequential makes these from a
/// PreactivatedConv2d with a pointwise convolution without activation whose output only an average pool without
/// padding reads (DenseNet's transitions, conv 1x1 -> avgpool 2x2/2). A 1x1 convolution and such a pool commute
/// (both are linear, each window's weights sum to one, so the bias passes unchanged), and pooling first leaves the
/// convolution a quarter of the pixels.
class PreactivatedConv2d final : public Layer {
 public:
  /// `conv`: the convolution's description (with its activation), OIHW weights and bias (empty when absent).
  PreactivatedConv2d(const ChannelAffine& affine, const Conv2dDesc& conv, const Variable& weights,
                     const Variable& bias);
  /// `conv` with `pool` applied to its normalised input (see above; the caller checks that they commute).
  PreactivatedConv2d(const PreactivatedConv2d& conv, const AvgPool2d& pool);

  const Conv2dDesc& desc() const { return desc_; }
  bool pools_input() const { return input_pool_.has_value(); }

  std::string_view type() const override { return "preactivated_conv2d"; }
  std::string describe() const override;
  int arity() const override { return any_arity; }
  Shape output_shape(std::span<const Shape> inputs) const override;
  void upload(Backend& backend) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;
  double flops(std::span<const Shape> inputs) const override;

 private:
  /// The pooled input's shape for the inputs' N, H, W (the inputs' own without a pool).
  Shape conv_input(const Shape& first) const;

  Conv2dDesc desc_;
  Activation input_activation_;
  std::optional<PoolOptions> input_pool_;
  Variable scale_;  // views of the affine's and the convolution's storage
  Variable shift_;
  Variable weights_;
  Variable bias_;
};

}  // namespace corgy
