#include "corgy/layers/transpose.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "corgy/error.h"

namespace corgy {

Transpose::Transpose(const TensorDims& input, std::vector<int> perm) : input_(input), perm_(std::move(perm)) {
  if (input.rank < 1) throw_parameter_error("transpose", "needs a tensor of rank 1 to 6, got rank 0");
  std::vector<int> sorted = perm_;
  std::sort(sorted.begin(), sorted.end());
  bool is_permutation = static_cast<int>(perm_.size()) == input.rank;
  for (std::size_t a = 0; is_permutation && a < sorted.size(); ++a) is_permutation = sorted[a] == static_cast<int>(a);
  if (!is_permutation) {
    throw_parameter_error("transpose", fmt::format("perm ({}) is not a permutation of the axes of a tensor {}",
                                                   fmt::join(perm_, ", "), input.str()));
  }
  if (perm_[0] != 0) {
    throw_parameter_error("transpose", fmt::format("perm ({}) moves axis 0, the batch, of a tensor {}; corgy keeps "
                                                   "the batch first",
                                                   fmt::join(perm_, ", "), input.str()));
  }
  output_ = input;
  for (int a = 0; a < input.rank; ++a)
    output_.extent[static_cast<std::size_t>(a)] = input[perm_[static_cast<std::size_t>(a)]];
}

std::string Transpose::describe() const {
  return fmt::format("transpose ({}) of {}", fmt::join(perm_, ", "), input_.str());
}

Shape Transpose::output_shape(std::span<const Shape> inputs) const {
  const TensorDims in = input_.matching(inputs[0], describe());
  return output_.with_batch(in[0]).folded();
}

void Transpose::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  const TensorDims in = input_.matching(inputs[0]->shape(), describe());
  const TensorDims out = output_.with_batch(in[0]);
  const auto in_strides = in.strides();
  const auto out_strides = out.strides();
  StridedCopyDesc desc;
  desc.rank = out.rank;
  for (std::size_t a = 0; a < static_cast<std::size_t>(out.rank); ++a) {
    desc.extent[a] = out.extent[a];
    desc.input_stride[a] = static_cast<std::int64_t>(in_strides[static_cast<std::size_t>(perm_[a])]);
    desc.output_stride[a] = static_cast<std::int64_t>(out_strides[a]);
  }
  backend.copy_strided(desc, *inputs[0], output);
}

}  // namespace corgy
