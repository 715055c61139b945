// LeakyReLU: y = x for x > 0, slope * x otherwise (darknet's "leaky" uses slope 0.1).
#pragma once

#include "corgy/layers/activation_layer.h"

namespace corgy {

/// Input (N, C, H, W) -> output of the same shape.
class LeakyReLU final : public ActivationLayer {
 public:
  explicit LeakyReLU(float slope = 0.1f) : ActivationLayer(Activation::leaky_relu(slope)) {}
};

}  // namespace corgy
