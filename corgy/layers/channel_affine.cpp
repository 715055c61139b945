#include "corgy/layers/channel_affine.h"

#include <fmt/format.h>

#include <algorithm>

#include "corgy/error.h"

namespace corgy {

ChannelAffine::ChannelAffine(int channels, Activation activation) : channels_(channels), activation_(activation) {
  if (channels <= 0) throw_parameter_error("channel_affine", fmt::format("channels {} must be > 0", channels));
  scale_ = Variable(Shape::vector(channels));
  scale_.fill(1.0f);
  shift_ = Variable(Shape::vector(channels));
}

std::string ChannelAffine::describe() const {
  return activation_.kind == ActivationKind::none ? fmt::format("channel_affine {}", channels_)
                                                  : fmt::format("channel_affine {}, {}", channels_, activation_.str());
}

Shape ChannelAffine::output_shape(std::span<const Shape> inputs) const {
  if (inputs[0].c != channels_) throw_shape_error(fmt::format("(N, {}, H, W)", channels_), inputs[0]);
  return inputs[0];
}

void ChannelAffine::upload(Backend& backend) const {
  backend.upload_constant(scale_);
  backend.upload_constant(shift_);
}

void ChannelAffine::set_parameters(std::span<const float> scale, std::span<const float> shift) {
  const auto channels = static_cast<std::size_t>(channels_);
  if (scale.size() != channels || shift.size() != channels) {
    throw Error(fmt::format("{}: scale and shift need {} values each, got {} and {}", describe(), channels,
                            scale.size(), shift.size()));
  }
  std::copy(scale.begin(), scale.end(), scale_.data());
  std::copy(shift.begin(), shift.end(), shift_.data());
}

}  // namespace corgy
