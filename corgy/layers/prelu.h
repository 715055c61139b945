// PReLU: leaky ReLU with a learned negative slope per channel.
#pragma once

#include <span>

#include "corgy/layers/layer.h"

namespace corgy {

/// Input (N, channels, H, W) -> output of the same shape: x where x > 0, else x * slope[c] (PyTorch's PReLU with
/// num_parameters = channels, ONNX's PRelu with a per-channel slope). Slopes (1, 1, 1, channels), 0.25 until set
/// (PyTorch's initial value). A single slope for every channel is LeakyReLU, which a convolution can fuse.
class PReLU final : public Layer {
 public:
  /// Throws corgy::Error for channels <= 0.
  explicit PReLU(int channels);

  std::string_view type() const override { return "prelu"; }
  std::string describe() const override;
  Shape output_shape(std::span<const Shape> inputs) const override;
  void upload(Backend& backend) const override { backend.upload_constant(slope_); }
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override {
    backend.prelu(*inputs[0], slope_, output);
  }

  /// Copies `channels` slopes in; throws corgy::Error for another count.
  void set_slopes(std::span<const float> slopes);
  Variable& slopes() { return slope_; }
  const Variable& slopes() const { return slope_; }

 private:
  int channels_;
  Variable slope_;
};

}  // namespace corgy
