#include "corgy/layers/preactivated_conv2d.h"

#include <fmt/format.h>

namespace corgy {

PreactivatedConv2d::PreactivatedConv2d(const ChannelAffine& affine, const Conv2dDesc& conv, const Variable& weights,
                                       const Variable& bias)
    : desc_(conv),
      input_activation_(affine.activation()),
      scale_(affine.scale().share()),
      shift_(affine.shift().share()),
      weights_(weights.share()),
      bias_(bias.share()) {
  if (affine.channels() != conv.in_channels) {
    throw_parameter_error("preactivated_conv2d", fmt::format("the affine's {} channels are not the convolution's {}",
                                                             affine.channels(), conv.in_channels));
  }
}

PreactivatedConv2d::PreactivatedConv2d(const PreactivatedConv2d& conv, const AvgPool2d& pool)
    : desc_(conv.desc_),
      input_activation_(conv.input_activation_),
      input_pool_(pool.options()),
      scale_(conv.scale_.share()),
      shift_(conv.shift_.share()),
      weights_(conv.weights_.share()),
      bias_(conv.bias_.share()) {}

Shape PreactivatedConv2d::conv_input(const Shape& first) const {
  const Shape joined{first.n, desc_.in_channels, first.h, first.w};
  if (!input_pool_) return joined;
  const Pool2dDesc pool = make_pool_desc(PoolKind::average, *input_pool_, joined);
  return {first.n, desc_.in_channels, pool.output_h(first.h), pool.output_w(first.w)};
}

std::string PreactivatedConv2d::describe() const {
  const std::string affine = input_activation_.kind == ActivationKind::none
                                 ? fmt::format("channel_affine {}", desc_.in_channels)
                                 : fmt::format("channel_affine {}, {}", desc_.in_channels, input_activation_.str());
  const Conv2dWindow w = desc_.window();
  std::string conv = fmt::format("conv2d {}x{}/{} pad {}, {}->{}", w.kernel_h, w.kernel_w, w.stride_h, w.pad_top,
                                 desc_.in_channels, desc_.out_channels);
  if (desc_.activation.kind != ActivationKind::none) conv += ", " + desc_.activation.str();
  if (input_pool_) return affine + " -> avgpool2d " + describe_pool_options(*input_pool_) + " -> " + conv;
  return affine + " -> " + conv;
}

Shape PreactivatedConv2d::output_shape(std::span<const Shape> inputs) const {
  int channels = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Shape& in = inputs[i];
    if (in.n != inputs[0].n || in.h != inputs[0].h || in.w != inputs[0].w) {
      throw_shape_error(fmt::format("input {} to match the first input's N, H, W {}", i, inputs[0].str()), in);
    }
    channels += in.c;
  }
  if (channels != desc_.in_channels) {
    throw_shape_error(fmt::format("inputs of {} channels in all", desc_.in_channels),
                      Shape{inputs[0].n, channels, inputs[0].h, inputs[0].w});
  }
  const Shape in = conv_input(inputs[0]);
  const Shape out{in.n, desc_.out_channels, desc_.output_h(in.h), desc_.output_w(in.w)};
  if (out.h <= 0 || out.w <= 0) throw_shape_error("an input larger than the convolution's kernel", in);
  return out;
}

void PreactivatedConv2d::upload(Backend& backend) const {
  for (const Variable* tensor : {&scale_, &shift_, &weights_, &bias_}) {
    if (!tensor->empty()) backend.upload_constant(*tensor);
  }
}

void PreactivatedConv2d::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  std::optional<Pool2dDesc> pool;
  if (input_pool_) {
    const Shape& first = inputs[0]->shape();
    pool = make_pool_desc(PoolKind::average, *input_pool_, {first.n, desc_.in_channels, first.h, first.w});
  }
  backend.preactivated_conv2d(desc_, inputs, scale_, shift_, input_activation_, pool ? &*pool : nullptr, weights_,
                              bias_.empty() ? nullptr : &bias_, output);
}

double PreactivatedConv2d::flops(std::span<const Shape> inputs) const {
  const Shape in = conv_input(inputs[0]);
  const double outputs = static_cast<double>(in.n) * desc_.out_channels * desc_.output_h(in.h) * desc_.output_w(in.w);
  return 2.0 * outputs * (desc_.in_channels / desc_.groups) * desc_.taps();  // as Conv2d counts
}

}  // namespace corgy
