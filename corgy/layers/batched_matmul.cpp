#include "corgy/layers/batched_matmul.h"

#include <fmt/format.h>

#include "corgy/error.h"

namespace corgy {

BatchedMatmul::BatchedMatmul(TensorDims a_dims, TensorDims b_dims) : a_dims_(a_dims), b_dims_(b_dims) {
  if (a_dims.rank != b_dims.rank || a_dims.rank < 3 || a_dims[0] != b_dims[0]) {
    throw_parameter_error(describe(), fmt::format("operands {} and {}: corgy multiplies activations of one rank "
                                                  ">= 3 and one batch",
                                                  a_dims.str(), b_dims.str()));
  }
  (void)BatchedMatmulDesc::of(a_dims, b_dims);  // throws for extents that do not fit
}

std::string BatchedMatmul::describe() const {
  return fmt::format("batched_matmul {} x {}", a_dims_.str(), b_dims_.str());
}

Shape BatchedMatmul::output_shape(std::span<const Shape> inputs) const {
  const TensorDims a = a_dims_.matching(inputs[0], describe());
  const TensorDims b = b_dims_.matching(inputs[1], describe());
  if (a[0] != b[0]) throw Error(fmt::format("{}: operands {} and {} differ in batch", describe(), a.str(), b.str()));
  return BatchedMatmulDesc::output_dims(a, b).folded();
}

void BatchedMatmul::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  const TensorDims a = a_dims_.matching(inputs[0]->shape(), describe());
  const TensorDims b = b_dims_.matching(inputs[1]->shape(), describe());
  backend.batched_matmul(BatchedMatmulDesc::of(a, b), *inputs[0], *inputs[1], output);
}

double BatchedMatmul::flops(std::span<const Shape> inputs) const {
  const Shape out = output_shape(inputs);
  return 2.0 * static_cast<double>(out.count()) * a_dims_[a_dims_.rank - 1];
}

}  // namespace corgy
