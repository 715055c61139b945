// ReLU: y = max(x, 0), element-wise.
#pragma once

#include "corgy/layers/activation_layer.h"

namespace corgy {

/// Input (N, C, H, W) -> output of the same shape.
class ReLU final : public ActivationLayer {
 public:
  ReLU() : ActivationLayer(Activation::relu()) {}
};

}  // namespace corgy
