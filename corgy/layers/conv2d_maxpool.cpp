#include "corgy/layers/conv2d_maxpool.h"

namespace corgy {

Conv2dMaxPool::Conv2dMaxPool(const Conv2d& conv, const MaxPool2d& pool)
    : conv_desc_(conv.desc()),
      conv_description_(conv.describe()),
      weights_(conv.weights().view(conv.weights().shape())),
      bias_(conv.has_bias() ? conv.bias().view(conv.bias().shape()) : Variable()),
      pool_(pool) {}

std::string Conv2dMaxPool::describe() const { return conv_description_ + " + " + pool_.describe(); }

Shape Conv2dMaxPool::conv_output_shape(const Shape& input) const {
  return {input.n, conv_desc_.out_channels, conv_desc_.output_h(input.h), conv_desc_.output_w(input.w)};
}

Shape Conv2dMaxPool::output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  if (in.c != conv_desc_.in_channels)
    throw_shape_error("(N, " + std::to_string(conv_desc_.in_channels) + ", H, W)", in);
  const Shape conv_out = conv_output_shape(in);
  if (conv_out.h <= 0 || conv_out.w <= 0) throw_shape_error("an input larger than the convolution's kernel", in);
  return pool_.output_shape(std::span<const Shape>(&conv_out, 1));
}

void Conv2dMaxPool::upload(Backend& backend) const {
  backend.upload_constant(weights_);
  if (!bias_.empty()) backend.upload_constant(bias_);
}

void Conv2dMaxPool::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  const Shape conv_out = conv_output_shape(inputs[0]->shape());
  backend.conv2d_maxpool(conv_desc_, make_pool_desc(PoolKind::max, pool_.options(), conv_out), *inputs[0], weights_,
                         bias_.empty() ? nullptr : &bias_, output);
}

double Conv2dMaxPool::flops(std::span<const Shape> inputs) const {
  const Shape conv_out = conv_output_shape(inputs[0]);
  const double conv_flops =
      2.0 * static_cast<double>(conv_out.count()) * (conv_desc_.in_channels / conv_desc_.groups) * conv_desc_.taps();
  return conv_flops;  // a max pool does comparisons, no floating-point arithmetic
}

}  // namespace corgy
