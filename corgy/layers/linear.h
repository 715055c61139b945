// Linear: fully connected layer with bias and a fused activation.
#pragma once

#include <span>

#include "corgy/layers/layer.h"

namespace corgy {

struct LinearOptions {
  int in_features = 0;
  int out_features = 0;
  bool bias = true;
  Activation activation{};
};

/// Input (N, C, H, W) with C*H*W = in_features (a Flatten before it is optional) -> output (N, out_features, 1, 1).
/// Weights (1, 1, out_features, in_features) as PyTorch stores them, zero until set; bias (1, 1, 1, out_features).
class Linear final : public Layer {
 public:
  /// Throws corgy::Error for non-positive feature counts.
  explicit Linear(const LinearOptions& options);

  std::string_view type() const override { return "linear"; }
  std::string describe() const override;
  Shape output_shape(std::span<const Shape> inputs) const override;
  void upload(Backend& backend) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;
  double flops(std::span<const Shape> inputs) const override;

  const LinearOptions& options() const { return options_; }
  Variable& weights() { return weights_; }
  const Variable& weights() const { return weights_; }
  Variable& bias() { return bias_; }
  const Variable& bias() const { return bias_; }
  bool has_bias() const { return !bias_.empty(); }

  /// Copies [out][in] weights in; throws corgy::Error when the size is wrong.
  void set_weights(std::span<const float> out_by_in);
  void set_bias(std::span<const float> bias);

 private:
  LinearOptions options_;
  Variable weights_;
  Variable bias_;
};

}  // namespace corgy
