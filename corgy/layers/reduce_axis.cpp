#include "corgy/layers/reduce_axis.h"

#include <fmt/format.h>

namespace corgy {

ReduceAxis::ReduceAxis(ReduceOp op, TensorDims dims, int first, int last, bool keep_dims)
    : op_(op), dims_(dims), first_(first), last_(last) {
  if (first < 1 || last < first || last >= dims.rank) {
    throw_parameter_error(describe(), fmt::format("reduces axes {} to {} of {}; corgy reduces axes 1 to rank - 1 "
                                                  "(never the batch)",
                                                  first, last, dims.str()));
  }
  output_dims_.rank = 0;
  for (int k = 0; k < dims.rank; ++k) {
    const bool reduced = k >= first && k <= last;
    if (reduced && !keep_dims) continue;
    output_dims_.extent[static_cast<std::size_t>(output_dims_.rank++)] = reduced ? 1 : dims[k];
  }
}

std::string ReduceAxis::describe() const {
  return fmt::format("reduce_axis {} {} axes {}..{} -> {}", reduce_op_name(op_), dims_.str(), first_, last_,
                     output_dims_.str());
}

Shape ReduceAxis::output_shape(std::span<const Shape> inputs) const {
  const TensorDims in = dims_.matching(inputs[0], describe());
  return output_dims_.with_batch(in[0]).folded();
}

void ReduceAxis::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  const TensorDims in = dims_.matching(inputs[0]->shape(), describe());
  backend.reduce_axis(op_, AxisExtent::of(in, first_, last_), *inputs[0], output);
}

}  // namespace corgy
