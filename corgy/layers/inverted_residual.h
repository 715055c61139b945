// InvertedResidual: MobileNetV2's block (1x1 expansion, depthwise convolution, 1x1 projection, and the residual add)
// as one layer.
#pragma once

#include <optional>
#include <string>

#include "corgy/layers/layer.h"
#include "corgy/layers/squeeze_excite_conv2d.h"

namespace corgy {

/// Input (N, C, H, W), and with a residual a second input of the output's shape -> output (N, O, Ho, Wo): the
/// three convolutions of InvertedResidualDesc in turn (each with its activation), the residual added to the
/// projection before its activation. Without a projection (a block whose squeeze-and-excitation sits between its
/// depthwise convolution and its projection: MobileNetV3, EfficientNet) the output is the depthwise convolution's,
/// (N, E, Ho, Wo). Without an expansion (the first blocks of MobileNetV2 and MobileNetV3, ShuffleNetV2's
/// downsampling branch) the depthwise convolution reads the input (E = C); such a block has its projection.
///
/// Sequential makes these when it plans a forward (corgy/model/fusion.h) from a pointwise convolution whose output
/// only a depthwise convolution reads, whose output only a pointwise convolution (or one with a residual add,
/// FusedConv2d) reads, or anything else (then without the projection); and from a depthwise convolution whose input
/// is not such an expansion and whose output only a pointwise convolution reads (then without the expansion). The
/// backend computes the block in one operation (Backend::inverted_residual): the blas backend streams bands of rows
/// through the three, so that the expanded tensor (6x the block's input, the largest tensors of MobileNetV2) never goes
/// to memory. The layer shares the convolutions' weight and bias storage (views).
class InvertedResidual final : public Layer {
 public:
  /// Each stage: a convolution's description, weights and bias (empty when absent).
  struct Stage {
    Conv2dDesc desc;
    const Variable& weights;
    const Variable& bias;
  };
  /// `expand` null: no expansion (then `project` is needed); `project` null: no projection (and no residual).
  InvertedResidual(const Stage* expand, const Stage& depthwise, const Stage* project, bool residual);
  /// `block` (an expansion, no projection) with the squeeze-and-excitation and projection that read its output
  /// (corgy/model/fusion.h rule 13): the gates scale the depthwise output before the projection; the residual is
  /// `excited_projection`'s.
  InvertedResidual(const InvertedResidual& block, const SqueezeExciteConv2d& excited_projection);

  std::string_view type() const override { return "inverted_residual"; }
  std::string describe() const override;
  int arity() const override { return residual_ ? 2 : 1; }
  Shape output_shape(std::span<const Shape> inputs) const override;
  void upload(Backend& backend) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;
  double flops(std::span<const Shape> inputs) const override;

  bool residual() const { return residual_; }
  bool expands() const { return expand_.has_value(); }
  bool projects() const { return project_.has_value(); }
  bool excites() const { return excite_.has_value(); }

 private:
  /// The stage's storage views.
  struct Held {
    Conv2dDesc desc;
    Variable weights;
    Variable bias;
  };
  static Held hold(const Stage& stage);
  static Held share(const Held& held);
  InvertedResidualDesc desc() const;

  /// A squeeze-and-excitation between the depthwise convolution and the projection: its description and storage
  /// views (a bias empty when absent).
  struct Excite {
    SqueezeExciteDesc desc;
    Variable reduce_weights;
    Variable reduce_bias;
    Variable expand_weights;
    Variable expand_bias;
  };

  std::optional<Held> expand_;
  Held depthwise_;
  std::optional<Excite> excite_;
  std::optional<Held> project_;
  bool residual_;
};

}  // namespace corgy
