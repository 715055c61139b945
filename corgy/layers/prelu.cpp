#include "corgy/layers/prelu.h"

#include <fmt/format.h>

#include <algorithm>

#include "corgy/error.h"

namespace corgy {

PReLU::PReLU(int channels) : channels_(channels) {
  if (channels <= 0) throw_parameter_error("prelu", fmt::format("channels {} must be > 0", channels));
  slope_ = Variable(Shape::vector(channels));
  slope_.fill(0.25f);
}

std::string PReLU::describe() const { return fmt::format("prelu {}", channels_); }

Shape PReLU::output_shape(std::span<const Shape> inputs) const {
  if (inputs[0].c != channels_) throw_shape_error(fmt::format("(N, {}, H, W)", channels_), inputs[0]);
  return inputs[0];
}

void PReLU::set_slopes(std::span<const float> slopes) {
  if (slopes.size() != static_cast<std::size_t>(channels_)) {
    throw Error(fmt::format("{}: needs {} slopes, got {}", describe(), channels_, slopes.size()));
  }
  std::copy(slopes.begin(), slopes.end(), slope_.data());
}

}  // namespace corgy
