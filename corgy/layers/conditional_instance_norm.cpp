#include "corgy/layers/conditional_instance_norm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "corgy/error.h"

namespace corgy {

ConditionalInstanceNorm::ConditionalInstanceNorm(int channels, int styles, float epsilon, Activation activation)
    : channels_(channels), styles_(styles), epsilon_(epsilon), activation_(activation) {
  if (channels <= 0 || styles <= 0) {
    throw_parameter_error("conditional_instance_norm",
                          fmt::format("channels {} and styles {} must be > 0", channels, styles));
  }
  if (!(epsilon >= 0.0f)) {
    throw_parameter_error("conditional_instance_norm", fmt::format("epsilon {} must be >= 0", epsilon));
  }
  gamma_ = Variable(Shape{1, 1, styles, channels});
  gamma_.fill(1.0f);
  beta_ = Variable(Shape{1, 1, styles, channels});
  style_weights_ = Variable(Shape::vector(styles));
  style_weights_.data()[0] = 1.0f;
  scale_ = Variable(Shape::vector(channels));
  shift_ = Variable(Shape::vector(channels));
  mix();
}

std::string ConditionalInstanceNorm::describe() const {
  std::string text = fmt::format("conditional_instance_norm {}, {} styles, eps {}", channels_, styles_, epsilon_);
  if (activation_.kind != ActivationKind::none) text += ", " + activation_.str();
  return text;
}

Shape ConditionalInstanceNorm::output_shape(std::span<const Shape> inputs) const {
  if (inputs[0].c != channels_) throw_shape_error(fmt::format("(N, {}, H, W)", channels_), inputs[0]);
  return inputs[0];
}

void ConditionalInstanceNorm::forward(Backend& backend, std::span<const Variable* const> inputs,
                                      Variable& output) const {
  // scale_ and shift_ are deliberately not handed to Backend::upload_constant: each forward reads their current
  // values, so a new style mix needs no upload.
  backend.instance_norm(*inputs[0], scale_, shift_, epsilon_, activation_, output);
}

void ConditionalInstanceNorm::set_style_parameters(std::span<const float> gamma, std::span<const float> beta) {
  const std::size_t count = gamma_.count();
  if (gamma.size() != count || beta.size() != count) {
    throw Error(fmt::format("{}: gamma and beta need {} values each ({} styles x {} channels), got {} and {}",
                            describe(), count, styles_, channels_, gamma.size(), beta.size()));
  }
  std::copy(gamma.begin(), gamma.end(), gamma_.data());
  std::copy(beta.begin(), beta.end(), beta_.data());
  mix();
}

void ConditionalInstanceNorm::set_style_weights(std::span<const float> weights) {
  if (weights.size() != static_cast<std::size_t>(styles_)) {
    throw Error(fmt::format("{}: needs {} style weights, got {}", describe(), styles_, weights.size()));
  }
  for (std::size_t s = 0; s < weights.size(); ++s) {
    if (!std::isfinite(weights[s])) {
      throw Error(fmt::format("{}: style weight {} is {}, not a finite number", describe(), s, weights[s]));
    }
  }
  std::copy(weights.begin(), weights.end(), style_weights_.data());
  mix();
}

void ConditionalInstanceNorm::mix() {
  for (int c = 0; c < channels_; ++c) {
    double scale = 0.0;
    double shift = 0.0;
    for (int s = 0; s < styles_; ++s) {
      const double w = style_weights_.data()[s];
      scale += w * gamma_.data()[static_cast<std::size_t>(s) * channels_ + c];
      shift += w * beta_.data()[static_cast<std::size_t>(s) * channels_ + c];
    }
    scale_.data()[c] = static_cast<float>(scale);
    shift_.data()[c] = static_cast<float>(shift);
  }
}

}  // namespace corgy
