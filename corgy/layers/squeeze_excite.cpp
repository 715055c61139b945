#include "corgy/layers/squeeze_excite.h"

#include <fmt/format.h>

namespace corgy {

namespace {

bool is_plain_1x1(const Conv2dDesc& d) {
  return d.is_square() && d.kernel == 1 && d.stride == 1 && d.padding == 0 && d.groups == 1;
}

}  // namespace

SqueezeExcite::SqueezeExcite(const Conv2dDesc& reduce, const Variable& reduce_weights, const Variable& reduce_bias,
                             const Conv2dDesc& expand, const Variable& expand_weights, const Variable& expand_bias)
    : desc_{.channels = reduce.in_channels,
            .squeeze_channels = reduce.out_channels,
            .reduce_activation = reduce.activation,
            .expand_activation = expand.activation},
      reduce_weights_(reduce_weights.share()),
      reduce_bias_(reduce_bias.share()),
      expand_weights_(expand_weights.share()),
      expand_bias_(expand_bias.share()) {
  if (!is_plain_1x1(reduce) || !is_plain_1x1(expand) || expand.in_channels != reduce.out_channels ||
      expand.out_channels != reduce.in_channels) {
    throw_parameter_error("squeeze_excite", fmt::format("needs 1x1 convolutions {0} -> S -> {0}; got {0} -> {1} -> {2}",
                                                        reduce.in_channels, reduce.out_channels, expand.out_channels));
  }
}

std::string SqueezeExcite::describe() const {
  return fmt::format("squeeze_excite {} -> {} ({}) -> {} ({})", desc_.channels, desc_.squeeze_channels,
                     desc_.reduce_activation.str(), desc_.channels, desc_.expand_activation.str());
}

Shape SqueezeExcite::output_shape(std::span<const Shape> inputs) const {
  if (inputs[0].c != desc_.channels) throw_shape_error(fmt::format("(N, {}, H, W)", desc_.channels), inputs[0]);
  return inputs[0];
}

void SqueezeExcite::upload(Backend& backend) const {
  for (const Variable* tensor : {&reduce_weights_, &reduce_bias_, &expand_weights_, &expand_bias_}) {
    if (!tensor->empty()) backend.upload_constant(*tensor);
  }
}

void SqueezeExcite::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  backend.squeeze_excite(desc_, *inputs[0], reduce_weights_, reduce_bias_.empty() ? nullptr : &reduce_bias_,
                         expand_weights_, expand_bias_.empty() ? nullptr : &expand_bias_, output);
}

double SqueezeExcite::flops(std::span<const Shape> inputs) const {
  // The two 1x1 convolutions, as Conv2d counts them; the pool and the product are not counted, as by their layers.
  return 2.0 * 2.0 * inputs[0].n * desc_.channels * desc_.squeeze_channels;
}

}  // namespace corgy
