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
  }
  return "?";
}

}  // namespace corgy
