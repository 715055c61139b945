#include "corgy/layers/expand.h"

#include <fmt/format.h>

#include "corgy/error.h"

namespace corgy {

Expand::Expand(const TensorDims& input, const TensorDims& target) : input_(input), output_(input) {
  if (input.rank != target.rank) {
    throw_parameter_error("expand", fmt::format("expands a tensor {} to {}: corgy needs the same rank (the batch "
                                                "stays axis 0)",
                                                input.str(), target.str()));
  }
  for (int a = 0; a < input.rank; ++a) {
    const int from = input[a], to = target[a];
    const bool broadcasts = a == 0 ? to == 1 || to == from : from == 1 || to == 1 || from == to;
    if (!broadcasts) {
      throw_parameter_error(
          "expand", fmt::format("cannot broadcast a tensor {} to {}: axis {} has extents {} and {}{}", input.str(),
                                target.str(), a, from, to, a == 0 ? " (axis 0, the batch, is never broadcast)" : ""));
    }
    output_.extent[static_cast<std::size_t>(a)] = std::max(from, to);
  }
}

std::string Expand::describe() const { return fmt::format("expand {} to {}", input_.str(), output_.str()); }

Shape Expand::output_shape(std::span<const Shape> inputs) const {
  const TensorDims in = input_.matching(inputs[0], describe());
  return output_.with_batch(in[0]).folded();
}

void Expand::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  const TensorDims in = input_.matching(inputs[0]->shape(), describe());
  const TensorDims out = output_.with_batch(in[0]);
  const auto in_strides = in.strides();
  const auto out_strides = out.strides();
  StridedCopyDesc desc;
  desc.rank = out.rank;
  for (std::size_t a = 0; a < static_cast<std::size_t>(out.rank); ++a) {
    desc.extent[a] = out.extent[a];
    // A repeated axis reads the same input element for every index along it.
    desc.input_stride[a] = in.extent[a] == out.extent[a] ? static_cast<std::int64_t>(in_strides[a]) : 0;
    desc.output_stride[a] = static_cast<std::int64_t>(out_strides[a]);
  }
  backend.copy_strided(desc, *inputs[0], output);
}

}  // namespace corgy
