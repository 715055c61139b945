// Activation functions that layers fuse into their output pass, and their scalar definitions.
#pragma once

#include <cmath>
#include <string>
#include <string_view>

namespace corgy {

enum class ActivationKind { none, relu, leaky_relu, sigmoid, tanh, mish, swish, clipped_relu, hard_swish, gelu };

/// An activation and its parameter: the negative slope of leaky ReLU (darknet's "leaky" is 0.1), the ceiling of
/// clipped ReLU (6 for ReLU6).
struct Activation {
  ActivationKind kind = ActivationKind::none;
  float slope = 0.1f;

  static Activation none() { return {}; }
  static Activation relu() { return {ActivationKind::relu}; }
  static Activation leaky_relu(float slope = 0.1f) { return {ActivationKind::leaky_relu, slope}; }
  static Activation sigmoid() { return {ActivationKind::sigmoid}; }
  static Activation tanh() { return {ActivationKind::tanh}; }
  static Activation mish() { return {ActivationKind::mish}; }
  static Activation swish() { return {ActivationKind::swish}; }
  /// min(max(x, 0), ceiling): ReLU6 (MobileNet) is clipped_relu(6), ONNX's Clip(x, 0, ceiling).
  static Activation clipped_relu(float ceiling) { return {ActivationKind::clipped_relu, ceiling}; }
  static Activation relu6() { return clipped_relu(6.0f); }
  /// x * min(max(x / 6 + 1/2, 0), 1) (MobileNetV3, ONNX's HardSwish).
  static Activation hard_swish() { return {ActivationKind::hard_swish}; }
  /// x (1 + erf(x / sqrt 2)) / 2 (GELU with the exact erf: PyTorch's nn.GELU(), ONNX's Gelu; ConvNeXt's MLPs).
  static Activation gelu() { return {ActivationKind::gelu}; }

  bool operator==(const Activation&) const = default;
  std::string str() const;
};

/// The scalar definition every backend must agree with.
inline float apply_activation(Activation a, float x) {
  switch (a.kind) {
    case ActivationKind::none: return x;
    case ActivationKind::relu: return x > 0.0f ? x : 0.0f;
    case ActivationKind::leaky_relu: return x > 0.0f ? x : a.slope * x;
    case ActivationKind::sigmoid: return 1.0f / (1.0f + std::exp(-x));
    case ActivationKind::tanh: return std::tanh(x);
    case ActivationKind::mish: {
      // softplus with darknet's thresholds, so large |x| neither overflows nor loses precision
      const float softplus = x > 20.0f ? x : (x < -20.0f ? std::exp(x) : std::log1p(std::exp(x)));
      return x * std::tanh(softplus);
    }
    case ActivationKind::swish: return x / (1.0f + std::exp(-x));
    case ActivationKind::clipped_relu: return x > 0.0f ? (x < a.slope ? x : a.slope) : 0.0f;
    case ActivationKind::hard_swish: {
      const float gate = x * (1.0f / 6.0f) + 0.5f;
      return x * (gate > 0.0f ? (gate < 1.0f ? gate : 1.0f) : 0.0f);
    }
    case ActivationKind::gelu: return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
  }
  return x;
}

}  // namespace corgy
