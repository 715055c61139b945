#include "corgy/layers/conv2d.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "corgy/error.h"
#include "corgy/layers/pad.h"

namespace corgy {

namespace {

/// The window the options give: their own per-axis one, or the square one of kernel, stride, padding, dilation.
Conv2dWindow window_of(const Conv2dOptions& o) {
  if (o.window) return *o.window;
  return {o.kernel, o.kernel, o.stride, o.stride, o.dilation, o.dilation, o.padding, o.padding, o.padding, o.padding};
}

std::string window_text(const Conv2dWindow& w) {
  return fmt::format("kernel {}x{}, stride ({}, {}), dilation ({}, {}), pads (top {}, left {}, bottom {}, right {})",
                     w.kernel_h, w.kernel_w, w.stride_h, w.stride_w, w.dilation_h, w.dilation_w, w.pad_top, w.pad_left,
                     w.pad_bottom, w.pad_right);
}

void check_window(const Conv2dOptions& o, const Conv2dWindow& w) {
  if (o.in_channels <= 0 || o.out_channels <= 0 || o.groups <= 0 || w.kernel_h <= 0 || w.kernel_w <= 0 ||
      w.stride_h <= 0 || w.stride_w <= 0 || w.dilation_h <= 0 || w.dilation_w <= 0 || w.pad_top < 0 || w.pad_left < 0 ||
      w.pad_bottom < 0 || w.pad_right < 0) {
    throw_parameter_error("conv2d", fmt::format("invalid parameters: in_channels {}, out_channels {}, groups {}, {} "
                                                "(all must be > 0, pads >= 0)",
                                                o.in_channels, o.out_channels, o.groups, window_text(w)));
  }
  // Larger windows are no model's; with an input's size and padding they would overflow int in output_h().
  constexpr std::int64_t largest_window = std::int64_t{1} << 16;
  const std::int64_t effective_h = std::int64_t{w.dilation_h} * (w.kernel_h - 1) + 1;
  const std::int64_t effective_w = std::int64_t{w.dilation_w} * (w.kernel_w - 1) + 1;
  if (std::max({effective_h, effective_w, std::int64_t{w.stride_h}, std::int64_t{w.stride_w}}) > largest_window ||
      std::max({w.pad_top, w.pad_left, w.pad_bottom, w.pad_right}) > largest_window) {
    throw_parameter_error("conv2d", fmt::format("{} (effective kernel {}x{}): each extent, stride and pad must be at "
                                                "most {}",
                                                window_text(w), effective_h, effective_w, largest_window));
  }
  if (o.in_channels % o.groups != 0 || o.out_channels % o.groups != 0) {
    throw_parameter_error("conv2d", fmt::format("in_channels {} and out_channels {} must both divide by groups {}",
                                                o.in_channels, o.out_channels, o.groups));
  }
  if (o.padding_mode != PadMode::constant && !w.is_square()) {
    throw_parameter_error("conv2d", fmt::format("{} padding needs a square window with equal pads, got {}",
                                                pad_mode_name(o.padding_mode), window_text(w)));
  }
}

}  // namespace

Conv2d::Conv2d(const Conv2dOptions& o)
    : desc_{.in_channels = o.in_channels,
            .out_channels = o.out_channels,
            .groups = o.groups,
            .activation = o.activation},
      padding_mode_(o.padding_mode) {
  const Conv2dWindow window = window_of(o);
  check_window(o, window);
  desc_.set_window(window);
  weights_ = Variable(Shape{o.out_channels, o.in_channels / o.groups, window.kernel_h, window.kernel_w});
  if (o.bias) bias_ = Variable(Shape::vector(o.out_channels));
}

std::string Conv2d::describe() const {
  const Conv2dDesc& d = desc_;
  std::string text;
  if (d.is_square()) {
    text = fmt::format("conv2d {}x{}/{} pad {}", d.kernel, d.kernel, d.stride, d.padding);
  } else {
    const Conv2dWindow& w = *d.general;
    text = fmt::format("conv2d {}x{}/({}, {}) pads ({}, {}, {}, {})", w.kernel_h, w.kernel_w, w.stride_h, w.stride_w,
                       w.pad_top, w.pad_left, w.pad_bottom, w.pad_right);
  }
  if (padding_mode_ != PadMode::constant && d.padding > 0) text += fmt::format(" {}", pad_mode_name(padding_mode_));
  text += fmt::format(", {}->{}", d.in_channels, d.out_channels);
  if (d.is_square() && d.dilation != 1) text += fmt::format(", dilation {}", d.dilation);
  if (!d.is_square() && (d.general->dilation_h != 1 || d.general->dilation_w != 1)) {
    text += fmt::format(", dilation ({}, {})", d.general->dilation_h, d.general->dilation_w);
  }
  if (d.groups != 1) text += fmt::format(", groups {}", d.groups);
  if (d.activation.kind != ActivationKind::none) text += ", " + d.activation.str();
  return text;
}

Shape Conv2d::output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  if (in.c != desc_.in_channels) {
    throw_shape_error(fmt::format("(N, {}, H, W)", desc_.in_channels), in);
  }
  if (padding_mode_ == PadMode::reflect && desc_.padding >= std::min(in.h, in.w)) {
    throw_shape_error(fmt::format("an input larger than the reflected padding {} along H and W", desc_.padding), in);
  }
  const Conv2dWindow w = desc_.window();
  const int effective_h = w.dilation_h * (w.kernel_h - 1) + 1;
  const int effective_w = w.dilation_w * (w.kernel_w - 1) + 1;
  const int out_h = desc_.output_h(in.h);
  const int out_w = desc_.output_w(in.w);
  // Compared before dividing: (a negative span) / stride rounds towards zero, to an output of one pixel.
  if (in.h + w.pad_top + w.pad_bottom < effective_h || in.w + w.pad_left + w.pad_right < effective_w) {
    throw_shape_error(fmt::format("an input of at least {} x {} pixels (effective kernel {} x {})",
                                  effective_h - w.pad_top - w.pad_bottom, effective_w - w.pad_left - w.pad_right,
                                  effective_h, effective_w),
                      in);
  }
  return {in.n, desc_.out_channels, out_h, out_w};
}

void Conv2d::upload(Backend& backend) const {
  backend.upload_constant(weights_);
  if (has_bias()) backend.upload_constant(bias_);
}

void Conv2d::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  if (padding_mode_ != PadMode::constant && desc_.padding > 0) {
    // Backends convolve with zero padding only; Sequential runs this layer as Pad + without_padding().
    throw Error(
        fmt::format("{}: {} padding runs as a Pad layer and a convolution that a Sequential plans; "
                    "run the layer inside a Sequential",
                    describe(), pad_mode_name(padding_mode_)));
  }
  backend.conv2d(desc_, *inputs[0], weights_, has_bias() ? &bias_ : nullptr, output);
}

Conv2d Conv2d::without_padding() const {
  const Conv2dDesc& d = desc_;
  Conv2d conv({.in_channels = d.in_channels,
               .out_channels = d.out_channels,
               .kernel = d.kernel,
               .stride = d.stride,
               .padding = 0,
               .dilation = d.dilation,
               .groups = d.groups,
               .bias = false,
               .activation = d.activation});
  conv.weights_ = weights_.view(weights_.shape());
  if (has_bias()) conv.bias_ = bias_.view(bias_.shape());
  return conv;
}

double Conv2d::flops(std::span<const Shape> inputs) const {
  const Shape out = output_shape(inputs);
  return 2.0 * static_cast<double>(out.count()) * (desc_.in_channels / desc_.groups) * desc_.taps();
}

void Conv2d::set_weights(std::span<const float> oihw) {
  if (oihw.size() != weights_.count()) {
    throw Error(fmt::format("{}: weights need {} values (OIHW {}), got {}", describe(), weights_.count(),
                            weights_.shape().str(), oihw.size()));
  }
  std::copy(oihw.begin(), oihw.end(), weights_.data());
}

void Conv2d::set_bias(std::span<const float> bias) {
  if (bias.size() != static_cast<std::size_t>(desc_.out_channels)) {
    throw Error(fmt::format("{}: bias needs {} values, got {}", describe(), desc_.out_channels, bias.size()));
  }
  bias_ = Variable(Shape::vector(desc_.out_channels), bias);
}

void Conv2d::fold_batch_norm(const BatchNormParams& bn) {
  const auto channels = static_cast<std::size_t>(desc_.out_channels);
  for (std::span<const float> p : {bn.gamma, bn.beta, bn.mean, bn.variance}) {
    if (p.size() != channels) {
      throw Error(fmt::format("{}: batch norm parameters need {} values each, got {}", describe(), channels, p.size()));
    }
  }
  if (!has_bias()) bias_ = Variable(Shape::vector(desc_.out_channels));
  const std::size_t per_filter = weights_.count() / channels;
  for (std::size_t o = 0; o < channels; ++o) {
    const float factor = bn.gamma[o] / std::sqrt(bn.variance[o] + bn.epsilon);
    float* filter = weights_.data() + o * per_filter;
    for (std::size_t i = 0; i < per_filter; ++i) filter[i] *= factor;
    bias_.data()[o] = (bias_.data()[o] - bn.mean[o]) * factor + bn.beta[o];
  }
}

}  // namespace corgy
