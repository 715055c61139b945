// Tanh: y = tanh(x), element-wise.
#pragma once

#include "corgy/layers/activation_layer.h"

namespace corgy {

/// Input (N, C, H, W) -> output of the same shape.
class Tanh final : public ActivationLayer {
 public:
  Tanh() : ActivationLayer(Activation::tanh()) {}
};

}  // namespace corgy
