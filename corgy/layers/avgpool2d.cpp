#include "corgy/layers/avgpool2d.h"

namespace corgy {

AvgPool2d::AvgPool2d(const PoolOptions& options) : options_(options) { validate_pool_options("avgpool2d", options); }

std::string AvgPool2d::describe() const { return "avgpool2d " + describe_pool_options(options_); }

Shape AvgPool2d::output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  const Pool2dDesc d = make_pool_desc(PoolKind::average, options_, in);
  return {in.n, in.c, d.output_h(in.h), d.output_w(in.w)};
}

void AvgPool2d::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  backend.pool2d(make_pool_desc(PoolKind::average, options_, inputs[0]->shape()), *inputs[0], output);
}

AvgPool2d AvgPool2d::global() { return AvgPool2d(PoolOptions{.global = true}); }

}  // namespace corgy
