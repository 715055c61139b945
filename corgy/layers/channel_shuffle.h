// ChannelShuffle: ShuffleNet's mixing of the channels of grouped branches (Zhang et al. 2018), which exporters write
// as Reshape (N, g, C/g, H, W) -> Transpose (0, 2, 1, 3, 4) -> Reshape (N, C, H, W).
#pragma once

#include "corgy/layers/layer.h"

namespace corgy {

/// Input (N, C, H, W) with C a multiple of `groups` -> output of the same shape whose channel j * groups + i is input
/// channel i * (C / groups) + j: the channels of each group dealt out in turn.
class ChannelShuffle final : public Layer {
 public:
  /// Throws corgy::Error for groups < 1.
  explicit ChannelShuffle(int groups);

  std::string_view type() const override { return "channel_shuffle"; }
  std::string describe() const override;
  /// Throws corgy::Error when C is not a multiple of the groups.
  Shape output_shape(std::span<const Shape> inputs) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;

  int groups() const { return groups_; }

 private:
  int groups_;
};

}  // namespace corgy
