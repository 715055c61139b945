#include "corgy/layers/fused_conv2d.h"

#include <fmt/format.h>

namespace corgy {

FusedConv2d::FusedConv2d(const Conv2d& conv, Activation activation, bool residual)
    : desc_(conv.desc()),
      conv_description_(conv.describe()),
      residual_(residual),
      weights_(conv.weights().view(conv.weights().shape())),
      bias_(conv.has_bias() ? conv.bias().view(conv.bias().shape()) : Variable()) {
  if (conv.desc().activation.kind != ActivationKind::none || conv.padding_mode() != PadMode::constant) {
    throw_parameter_error(conv.describe(), "only a convolution with zero padding and no activation takes a fused one");
  }
  desc_.activation = activation;
}

std::string FusedConv2d::describe() const {
  std::string text = conv_description_;
  if (residual_) text += " + add";
  if (desc_.activation.kind != ActivationKind::none) text += ", " + desc_.activation.str();
  return text;
}

Shape FusedConv2d::output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  if (in.c != desc_.in_channels) throw_shape_error(fmt::format("(N, {}, H, W)", desc_.in_channels), in);
  const Shape out{in.n, desc_.out_channels, desc_.output_h(in.h), desc_.output_w(in.w)};
  if (out.h <= 0 || out.w <= 0) throw_shape_error("an input larger than the convolution's kernel", in);
  if (residual_ && inputs[1] != out) {
    throw_shape_error(fmt::format("a residual of the convolution's output shape {}", out.str()), inputs[1]);
  }
  return out;
}

void FusedConv2d::upload(Backend& backend) const {
  backend.upload_constant(weights_);
  if (!bias_.empty()) backend.upload_constant(bias_);
}

void FusedConv2d::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  const Variable* bias = bias_.empty() ? nullptr : &bias_;
  if (residual_) {
    backend.conv2d_add(desc_, *inputs[0], weights_, bias, *inputs[1], output);
  } else {
    backend.conv2d(desc_, *inputs[0], weights_, bias, output);
  }
}

double FusedConv2d::flops(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  const double outputs = static_cast<double>(in.n) * desc_.out_channels * desc_.output_h(in.h) * desc_.output_w(in.w);
  return 2.0 * outputs * (desc_.in_channels / desc_.groups) * desc_.taps();  // as Conv2d counts
}

}  // namespace corgy
