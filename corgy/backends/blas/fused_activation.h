// Activation functors chosen once per call, so that the element loops that apply them are compiled per kind.
#pragma once

#include <algorithm>
#include <cstddef>

#include "corgy/activation.h"

namespace corgy::blas {

/// apply_activation with the kind fixed at compile time: the switch inside folds away, so a loop calling this
/// vectorises for relu and leaky ReLU and the results equal apply_activation's by construction.
template <ActivationKind kind>
struct Activate {
  float slope;
  float operator()(float x) const { return apply_activation(Activation{kind, slope}, x); }
};

/// Leaky ReLU in a branch-free form that GCC vectorises: apply_activation's ternary stays a branch under the default
/// -ftrapping-math, and on a feature map it is mispredicted about every other element (a 3x slower epilogue).
/// Equal to apply_activation for every input, up to the sign of a zero result.
template <>
struct Activate<ActivationKind::leaky_relu> {
  float slope;
  float operator()(float x) const { return std::max(x, 0.0f) + slope * std::min(x, 0.0f); }
};

/// ReLU6 and its kin in the branch-free form that vectorises (equal to apply_activation for every input but NaN).
template <>
struct Activate<ActivationKind::clipped_relu> {
  float slope;
  float operator()(float x) const { return std::min(std::max(x, 0.0f), slope); }
};

template <>
struct Activate<ActivationKind::hard_swish> {
  float slope;
  float operator()(float x) const { return x * std::min(std::max(x * (1.0f / 6.0f) + 0.5f, 0.0f), 1.0f); }
};

/// Calls body(activate), where activate(x) == apply_activation(activation, x). The per-kind switch runs here,
/// once per call, instead of once per element.
template <typename Body>
void with_activation(Activation activation, Body&& body) {
  switch (activation.kind) {
    case ActivationKind::none: return body(Activate<ActivationKind::none>{activation.slope});
    case ActivationKind::relu: return body(Activate<ActivationKind::relu>{activation.slope});
    case ActivationKind::leaky_relu: return body(Activate<ActivationKind::leaky_relu>{activation.slope});
    case ActivationKind::sigmoid: return body(Activate<ActivationKind::sigmoid>{activation.slope});
    case ActivationKind::tanh: return body(Activate<ActivationKind::tanh>{activation.slope});
    case ActivationKind::mish: return body(Activate<ActivationKind::mish>{activation.slope});
    case ActivationKind::swish: return body(Activate<ActivationKind::swish>{activation.slope});
    case ActivationKind::clipped_relu: return body(Activate<ActivationKind::clipped_relu>{activation.slope});
    case ActivationKind::hard_swish: return body(Activate<ActivationKind::hard_swish>{activation.slope});
    case ActivationKind::gelu: return body(Activate<ActivationKind::gelu>{activation.slope});
  }
}

/// values[i] = activation(values[i] + bias) for i < count: the epilogue of one output channel of a convolution.
template <typename Activation>
void add_bias_and_activate(float* values, std::size_t count, float bias, const Activation& activate) {
  for (std::size_t i = 0; i < count; ++i) values[i] = activate(values[i] + bias);
}

}  // namespace corgy::blas
