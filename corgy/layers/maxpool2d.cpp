#include "corgy/layers/maxpool2d.h"

namespace corgy {

MaxPool2d::MaxPool2d(const PoolOptions& options) : options_(options) { validate_pool_options("maxpool2d", options); }

std::string MaxPool2d::describe() const { return "maxpool2d " + describe_pool_options(options_); }

Shape MaxPool2d::output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  const Pool2dDesc d = make_pool_desc(PoolKind::max, options_, in);
  return {in.n, in.c, d.output_h(in.h), d.output_w(in.w)};
}

void MaxPool2d::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  backend.pool2d(make_pool_desc(PoolKind::max, options_, inputs[0]->shape()), *inputs[0], output);
}

MaxPool2d MaxPool2d::darknet(int size, int stride, int padding) {
  if (padding < 0) padding = size - 1;
  return MaxPool2d(PoolOptions{
      .kernel = size, .stride = stride, .padding = padding / 2, .padding_bottom_right = padding - padding / 2});
}

}  // namespace corgy
