#include "corgy/layers/concat.h"

#include <fmt/format.h>

namespace corgy {

Shape Concat::output_shape(std::span<const Shape> inputs) const {
  Shape out = inputs[0];
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    const Shape& in = inputs[i];
    if (in.n != out.n || in.h != out.h || in.w != out.w) {
      throw_shape_error(fmt::format("input {} to match the first input's N, H, W {}", i, inputs[0].str()), in);
    }
    out.c += in.c;
  }
  return out;
}

}  // namespace corgy
