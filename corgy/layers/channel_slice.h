// ChannelSlice: a range of channels, every step-th (ONNX Slice or Split on the channel axis; ShuffleNet's branches
// take the two halves of their input this way).
#pragma once

#include "corgy/layers/layer.h"

namespace corgy {

/// Input (N, C, H, W) -> output (N, C', H, W) holding input channels start, start + step, ... below stop, C' of them
/// (C' >= 1). start >= 0, stop <= C, step >= 1.
class ChannelSlice final : public Layer {
 public:
  /// Throws corgy::Error for start < 0, step < 1 or stop <= start.
  ChannelSlice(int start, int stop, int step = 1);

  std::string_view type() const override { return "channel_slice"; }
  std::string describe() const override;
  /// Throws corgy::Error when stop is past the input's channels.
  Shape output_shape(std::span<const Shape> inputs) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;

  int start() const { return start_; }
  int stop() const { return stop_; }
  int step() const { return step_; }
  /// The output's channel count.
  int channels() const { return (stop_ - start_ + step_ - 1) / step_; }

 private:
  int start_;
  int stop_;
  int step_;
};

}  // namespace corgy
