#include "corgy/layers/instance_norm.h"

#include <fmt/format.h>

#include <algorithm>

#include "corgy/error.h"

namespace corgy {

InstanceNorm::InstanceNorm(int channels, float epsilon, Activation activation)
    : channels_(channels), epsilon_(epsilon), activation_(activation) {
  if (channels <= 0) throw_parameter_error("instance_norm", fmt::format("channels {} must be > 0", channels));
  if (!(epsilon >= 0.0f)) throw_parameter_error("instance_norm", fmt::format("epsilon {} must be >= 0", epsilon));
  scale_ = Variable(Shape::vector(channels));
  scale_.fill(1.0f);
  shift_ = Variable(Shape::vector(channels));
}

std::string InstanceNorm::describe() const {
  std::string text = fmt::format("instance_norm {}, eps {}", channels_, epsilon_);
  if (activation_.kind != ActivationKind::none) text += ", " + activation_.str();
  return text;
}

Shape InstanceNorm::output_shape(std::span<const Shape> inputs) const {
  if (inputs[0].c != channels_) throw_shape_error(fmt::format("(N, {}, H, W)", channels_), inputs[0]);
  return inputs[0];
}

void InstanceNorm::upload(Backend& backend) const {
  backend.upload_constant(scale_);
  backend.upload_constant(shift_);
}

void InstanceNorm::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  backend.instance_norm(*inputs[0], scale_, shift_, epsilon_, activation_, output);
}

void InstanceNorm::set_parameters(std::span<const float> scale, std::span<const float> shift) {
  const auto channels = static_cast<std::size_t>(channels_);
  if (scale.size() != channels || shift.size() != channels) {
    throw Error(fmt::format("{}: scale and shift need {} values each, got {} and {}", describe(), channels,
                            scale.size(), shift.size()));
  }
  std::copy(scale.begin(), scale.end(), scale_.data());
  std::copy(shift.begin(), shift.end(), shift_.data());
}

}  // namespace corgy
