#include "corgy/layers/conv_transpose2d.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "corgy/error.h"

namespace corgy {

namespace {

// Larger values are no model's; with an input's size they would overflow int in the output extent.
constexpr int largest_value = 1 << 16;

/// The output extent along one axis in 64 bits: (in - 1) * stride - pads + dilation * (kernel - 1) + 1 + extra.
std::int64_t output_extent(int in, int stride, int pads, int dilation, int kernel, int extra) {
  return (std::int64_t{in} - 1) * stride - pads + std::int64_t{dilation} * (kernel - 1) + 1 + extra;
}

}  // namespace

ConvTranspose2d::ConvTranspose2d(const ConvTranspose2dDesc& d, bool bias) : desc_(d) {
  if (d.in_channels <= 0 || d.out_channels <= 0 || d.kernel_h <= 0 || d.kernel_w <= 0 || d.stride_h <= 0 ||
      d.stride_w <= 0 || d.dilation_h <= 0 || d.dilation_w <= 0 || d.groups <= 0) {
    throw_parameter_error(
        "conv_transpose2d",
        fmt::format("invalid parameters: in_channels {}, out_channels {}, kernel {} x {}, stride {} x {}, dilation {} "
                    "x {}, groups {} (all must be > 0)",
                    d.in_channels, d.out_channels, d.kernel_h, d.kernel_w, d.stride_h, d.stride_w, d.dilation_h,
                    d.dilation_w, d.groups));
  }
  if (std::min({d.pad_top, d.pad_left, d.pad_bottom, d.pad_right, d.output_padding_h, d.output_padding_w}) < 0) {
    throw_parameter_error(
        "conv_transpose2d",
        fmt::format("pads (top {}, left {}, bottom {}, right {}) and output padding {} x {} must be "
                    ">= 0",
                    d.pad_top, d.pad_left, d.pad_bottom, d.pad_right, d.output_padding_h, d.output_padding_w));
  }
  const std::int64_t effective_h = std::int64_t{d.dilation_h} * (d.kernel_h - 1) + 1;
  const std::int64_t effective_w = std::int64_t{d.dilation_w} * (d.kernel_w - 1) + 1;
  if (std::max({effective_h, effective_w, std::int64_t{d.stride_h}, std::int64_t{d.stride_w}, std::int64_t{d.pad_top},
                std::int64_t{d.pad_left}, std::int64_t{d.pad_bottom}, std::int64_t{d.pad_right},
                std::int64_t{d.output_padding_h}, std::int64_t{d.output_padding_w}}) > largest_value) {
    throw_parameter_error("conv_transpose2d",
                          fmt::format("effective kernel {} x {}, strides, pads and output padding must each be at most "
                                      "{}",
                                      effective_h, effective_w, largest_value));
  }
  if (d.in_channels % d.groups != 0 || d.out_channels % d.groups != 0) {
    throw_parameter_error("conv_transpose2d",
                          fmt::format("in_channels {} and out_channels {} must both divide by groups {}", d.in_channels,
                                      d.out_channels, d.groups));
  }
  weights_ = Variable(Shape{d.in_channels, d.out_channels / d.groups, d.kernel_h, d.kernel_w});
  if (bias) bias_ = Variable(Shape::vector(d.out_channels));
}

std::string ConvTranspose2d::describe() const {
  const ConvTranspose2dDesc& d = desc_;
  std::string text = fmt::format("conv_transpose2d {}x{}/", d.kernel_h, d.kernel_w);
  text += d.stride_h == d.stride_w ? fmt::format("{}", d.stride_h) : fmt::format("{}x{}", d.stride_h, d.stride_w);
  if (d.pad_top == d.pad_left && d.pad_top == d.pad_bottom && d.pad_top == d.pad_right) {
    text += fmt::format(" pad {}", d.pad_top);
  } else {
    text += fmt::format(" pad t{} l{} b{} r{}", d.pad_top, d.pad_left, d.pad_bottom, d.pad_right);
  }
  if (d.output_padding_h != 0 || d.output_padding_w != 0) {
    text += fmt::format(" output_padding {}x{}", d.output_padding_h, d.output_padding_w);
  }
  text += fmt::format(", {}->{}", d.in_channels, d.out_channels);
  if (d.dilation_h != 1 || d.dilation_w != 1) text += fmt::format(", dilation {}x{}", d.dilation_h, d.dilation_w);
  if (d.groups != 1) text += fmt::format(", groups {}", d.groups);
  return text;
}

Shape ConvTranspose2d::output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  const ConvTranspose2dDesc& d = desc_;
  if (in.c != d.in_channels) throw_shape_error(fmt::format("(N, {}, H, W)", d.in_channels), in);
  const std::int64_t out_h =
      output_extent(in.h, d.stride_h, d.pad_top + d.pad_bottom, d.dilation_h, d.kernel_h, d.output_padding_h);
  const std::int64_t out_w =
      output_extent(in.w, d.stride_w, d.pad_left + d.pad_right, d.dilation_w, d.kernel_w, d.output_padding_w);
  if (out_h <= 0 || out_w <= 0) {
    throw_shape_error(
        fmt::format("an input large enough for an output after cropping the pads (this one gives {} x {})", out_h,
                    out_w),
        in);
  }
  if (out_h > std::numeric_limits<int>::max() || out_w > std::numeric_limits<int>::max()) {
    throw_shape_error(
        fmt::format("an input small enough for an output extent that fits int (this one gives {} x {})", out_h, out_w),
        in);
  }
  return {in.n, d.out_channels, static_cast<int>(out_h), static_cast<int>(out_w)};
}

void ConvTranspose2d::upload(Backend& backend) const {
  backend.upload_constant(weights_);
  if (has_bias()) backend.upload_constant(bias_);
}

void ConvTranspose2d::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  backend.conv_transpose2d(desc_, *inputs[0], weights_, has_bias() ? &bias_ : nullptr, output);
}

double ConvTranspose2d::flops(std::span<const Shape> inputs) const {
  const ConvTranspose2dDesc& d = desc_;
  return 2.0 * static_cast<double>(inputs[0].count()) * (d.out_channels / d.groups) * d.kernel_h * d.kernel_w;
}

void ConvTranspose2d::set_weights(std::span<const float> weights) {
  if (weights.size() != weights_.count()) {
    throw Error(fmt::format("{}: weights need {} values ({} as (in, out / groups, kH, kW)), got {}", describe(),
                            weights_.count(), weights_.shape().str(), weights.size()));
  }
  std::copy(weights.begin(), weights.end(), weights_.data());
}

void ConvTranspose2d::set_bias(std::span<const float> bias) {
  if (bias.size() != static_cast<std::size_t>(desc_.out_channels)) {
    throw Error(fmt::format("{}: bias needs {} values, got {}", describe(), desc_.out_channels, bias.size()));
  }
  bias_ = Variable(Shape::vector(desc_.out_channels), bias);
}

}  // namespace corgy
