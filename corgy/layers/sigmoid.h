// Sigmoid: y = 1 / (1 + exp(-x)), element-wise.
#pragma once

#include "corgy/layers/activation_layer.h"

namespace corgy {

/// Input (N, C, H, W) -> output of the same shape.
class Sigmoid final : public ActivationLayer {
 public:
  Sigmoid() : ActivationLayer(Activation::sigmoid()) {}
};

}  // namespace corgy
