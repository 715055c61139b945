#include "corgy/layers/tensor_linear.h"

#include <fmt/format.h>

#include <array>
#include <vector>

namespace corgy {

TensorLinear::TensorLinear(TensorDims dims, const LinearOptions& options)
    : dims_(dims), output_dims_(dims), linear_(options) {
  if (dims.rank < 2 || dims[dims.rank - 1] != options.in_features) {
    throw_parameter_error(describe(), fmt::format("takes {} features along the last axis of a tensor of rank >= 2, "
                                                  "got {}",
                                                  options.in_features, dims.str()));
  }
  output_dims_.extent[static_cast<std::size_t>(dims.rank - 1)] = options.out_features;
}

std::string TensorLinear::describe() const {
  return fmt::format("tensor_linear {} x {}", dims_.str(), linear_.describe());
}

Shape TensorLinear::output_shape(std::span<const Shape> inputs) const {
  const TensorDims in = dims_.matching(inputs[0], describe());
  return output_dims_.with_batch(in[0]).folded();
}

void TensorLinear::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  const Variable& input = *inputs[0];
  const TensorDims in = dims_.matching(input.shape(), describe());
  const int features = dims_[dims_.rank - 1];
  const auto rows = static_cast<int>(in.count() / static_cast<std::size_t>(features));
  const Variable rows_in = input.view(Shape{rows, features, 1, 1});
  Variable rows_out = output.view(Shape{rows, linear_.options().out_features, 1, 1});
  const std::array<const Variable*, 1> operands{&rows_in};
  linear_.forward(backend, operands, rows_out);
}

TensorLinear TensorLinear::with_added_bias(std::span<const float> bias) const {
  LinearOptions options = linear_.options();
  options.bias = true;
  TensorLinear fused(dims_, options);
  fused.linear_.weights() = linear_.weights().view(linear_.weights().shape());
  std::vector<float> sum(bias.begin(), bias.end());
  if (linear_.has_bias() && sum.size() == linear_.bias().count()) {
    const std::span<const float> own = linear_.bias().values();
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += own[i];
  }
  fused.linear_.set_bias(sum);  // throws when bias has another length than out_features
  return fused;
}

double TensorLinear::flops(std::span<const Shape> inputs) const {
  const TensorDims in = dims_.matching(inputs[0], describe());
  return 2.0 * static_cast<double>(in.count()) * linear_.options().out_features;
}

}  // namespace corgy
