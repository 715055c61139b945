#include "corgy/layers/activation_layer.h"

namespace corgy {

std::string_view ActivationLayer::type() const {
  switch (activation_.kind) {
    case ActivationKind::none: return "identity";
    case ActivationKind::relu: return "relu";
    case ActivationKind::leaky_relu: return "leaky_relu";
    case ActivationKind::sigmoid: return "sigmoid";
    case ActivationKind::tanh: return "tanh";
    case ActivationKind::mish: return "mish";
    case ActivationKind::swish: return "swish";
    case ActivationKind::clipped_relu: return "clipped_relu";
    case ActivationKind::hard_swish: return "hard_swish";
    case ActivationKind::gelu: return "gelu";
  }
  return "activation";
}

void ActivationLayer::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  backend.activation(activation_, *inputs[0], output);
}

}  // namespace corgy
