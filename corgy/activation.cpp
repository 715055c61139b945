#include "corgy/activation.h"

#include <fmt/format.h>

namespace corgy {

std::string Activation::str() const {
  switch (kind) {
    case ActivationKind::none: return "linear";
    case ActivationKind::relu: return "relu";
    case ActivationKind::leaky_relu: return fmt::format("leaky({})", slope);
    case ActivationKind::sigmoid: return "sigmoid";
    case ActivationKind::tanh: return "tanh";
    case ActivationKind::mish: return "mish";
    case ActivationKind::swish: return "swish";
    case ActivationKind::clipped_relu: return fmt::format("clipped_relu({})", slope);
    case ActivationKind::hard_swish: return "hard_swish";
    case ActivationKind::gelu: return "gelu";
  }
  return "?";
}

}  // namespace corgy
