#include "corgy/layers/squeeze_excite_conv2d.h"

#include <fmt/format.h>

namespace corgy {

namespace {

const Variable* or_null(const Variable& tensor) { return tensor.empty() ? nullptr : &tensor; }

}  // namespace

SqueezeExciteConv2d::SqueezeExciteConv2d(const SqueezeExcite& excite, const Conv2dDesc& conv, const Variable& weights,
                                         const Variable& bias, bool residual)
    : excite_(excite.desc()),
      desc_(conv),
      residual_(residual),
      reduce_weights_(excite.reduce_weights().share()),
      reduce_bias_(excite.reduce_bias().share()),
      expand_weights_(excite.expand_weights().share()),
      expand_bias_(excite.expand_bias().share()),
      weights_(weights.share()),
      bias_(bias.share()) {
  if (!conv.is_square() || conv.kernel != 1 || conv.stride != 1 || conv.padding != 0 || conv.groups != 1 ||
      conv.in_channels != excite_.channels) {
    throw_parameter_error(
        "squeeze_excite_conv2d",
        fmt::format("needs a 1x1 convolution of the block's {} channels; got {} -> {}, kernel {}, "
                    "stride {}, groups {}",
                    excite_.channels, conv.in_channels, conv.out_channels, conv.kernel, conv.stride, conv.groups));
  }
}

std::string SqueezeExciteConv2d::describe() const {
  std::string text = fmt::format("squeeze_excite {} -> {} ({}) -> {} ({}) -> conv2d 1x1, {}->{}", excite_.channels,
                                 excite_.squeeze_channels, excite_.reduce_activation.str(), excite_.channels,
                                 excite_.expand_activation.str(), desc_.in_channels, desc_.out_channels);
  if (residual_) text += " + add";
  if (desc_.activation.kind != ActivationKind::none) text += ", " + desc_.activation.str();
  return text;
}

Shape SqueezeExciteConv2d::output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  if (in.c != excite_.channels) throw_shape_error(fmt::format("(N, {}, H, W)", excite_.channels), in);
  const Shape out{in.n, desc_.out_channels, in.h, in.w};
  if (residual_ && inputs[1] != out) {
    throw_shape_error(fmt::format("a residual of the convolution's output shape {}", out.str()), inputs[1]);
  }
  return out;
}

void SqueezeExciteConv2d::upload(Backend& backend) const {
  for (const Variable* tensor : {&reduce_weights_, &reduce_bias_, &expand_weights_, &expand_bias_, &weights_, &bias_}) {
    if (!tensor->empty()) backend.upload_constant(*tensor);
  }
}

void SqueezeExciteConv2d::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  const SqueezeExciteWeights excite_weights{&reduce_weights_, or_null(reduce_bias_), &expand_weights_,
                                            or_null(expand_bias_)};
  backend.squeeze_excite_conv2d(excite_, excite_weights, desc_, *inputs[0], weights_, or_null(bias_),
                                residual_ ? inputs[1] : nullptr, output);
}

double SqueezeExciteConv2d::flops(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  // The block's two small products and the convolution, as SqueezeExcite and Conv2d count them.
  return 2.0 * 2.0 * in.n * excite_.channels * excite_.squeeze_channels +
         2.0 * static_cast<double>(in.n) * desc_.out_channels * in.h * in.w * desc_.in_channels;
}

}  // namespace corgy
