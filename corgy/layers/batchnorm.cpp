#include "corgy/layers/batchnorm.h"

#include <fmt/format.h>

#include <cmath>

#include "corgy/error.h"

namespace corgy {

BatchNorm::BatchNorm(int channels) : channels_(channels) {
  if (channels <= 0) throw_parameter_error("batchnorm", fmt::format("channels {} must be > 0", channels));
  scale_ = Variable(Shape::vector(channels));
  scale_.fill(1.0f);
  shift_ = Variable(Shape::vector(channels));
}

std::string BatchNorm::describe() const { return fmt::format("batchnorm {}", channels_); }

Shape BatchNorm::output_shape(std::span<const Shape> inputs) const {
  if (inputs[0].c != channels_) throw_shape_error(fmt::format("(N, {}, H, W)", channels_), inputs[0]);
  return inputs[0];
}

void BatchNorm::upload(Backend& backend) const {
  backend.upload_constant(scale_);
  backend.upload_constant(shift_);
}

void BatchNorm::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  backend.channel_affine(*inputs[0], scale_, shift_, Activation::none(), output);
}

void BatchNorm::set_parameters(const BatchNormParams& p) {
  const auto channels = static_cast<std::size_t>(channels_);
  for (std::span<const float> values : {p.gamma, p.beta, p.mean, p.variance}) {
    if (values.size() != channels) {
      throw Error(fmt::format("{}: parameters need {} values each, got {}", describe(), channels, values.size()));
    }
  }
  for (std::size_t c = 0; c < channels; ++c) {
    const float factor = p.gamma[c] / std::sqrt(p.variance[c] + p.epsilon);
    scale_.data()[c] = factor;
    shift_.data()[c] = p.beta[c] - p.mean[c] * factor;
  }
}

}  // namespace corgy
