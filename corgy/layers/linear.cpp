#include "corgy/layers/linear.h"

#include <fmt/format.h>

#include <algorithm>

#include "corgy/error.h"

namespace corgy {

Linear::Linear(const LinearOptions& options) : options_(options) {
  if (options.in_features <= 0 || options.out_features <= 0) {
    throw_parameter_error("linear", fmt::format("in_features {} and out_features {} must be > 0", options.in_features,
                                                options.out_features));
  }
  weights_ = Variable(Shape::matrix(options.out_features, options.in_features));
  if (options.bias) bias_ = Variable(Shape::vector(options.out_features));
}

std::string Linear::describe() const {
  std::string text = fmt::format("linear {}->{}", options_.in_features, options_.out_features);
  if (options_.activation.kind != ActivationKind::none) text += ", " + options_.activation.str();
  return text;
}

Shape Linear::output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  if (in.image_count() != static_cast<std::size_t>(options_.in_features)) {
    throw_shape_error(fmt::format("(N, C, H, W) with C*H*W = {}", options_.in_features), in);
  }
  return {in.n, options_.out_features, 1, 1};
}

void Linear::upload(Backend& backend) const {
  backend.upload_constant(weights_);
  if (has_bias()) backend.upload_constant(bias_);
}

void Linear::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  backend.linear(*inputs[0], weights_, has_bias() ? &bias_ : nullptr, options_.activation, output);
}

double Linear::flops(std::span<const Shape> inputs) const {
  return 2.0 * inputs[0].n * options_.in_features * options_.out_features;
}

void Linear::set_weights(std::span<const float> out_by_in) {
  if (out_by_in.size() != weights_.count()) {
    throw Error(fmt::format("{}: weights need {} values ({} x {}), got {}", describe(), weights_.count(),
                            options_.out_features, options_.in_features, out_by_in.size()));
  }
  std::copy(out_by_in.begin(), out_by_in.end(), weights_.data());
}

void Linear::set_bias(std::span<const float> bias) {
  if (bias.size() != static_cast<std::size_t>(options_.out_features)) {
    throw Error(fmt::format("{}: bias needs {} values, got {}", describe(), options_.out_features, bias.size()));
  }
  bias_ = Variable(Shape::vector(options_.out_features), bias);
}

}  // namespace corgy
