// BlasBackend::preactivated_conv2d: DenseNet's BN-ReLU-Conv on its concatenated features.

#include "corgy/backends/blas/blas_backend.h"
#include "corgy/backends/blas/conv_plan.h"
#include "corgy/backends/blas/pointwise_batch_gemm.h"

namespace corgy {

void BlasBackend::preactivated_conv2d(const Conv2dDesc& desc, std::span<const Variable* const> inputs,
                                      const Variable& scale, const Variable& shift, Activation input_activation,
                                      const Variable& weights, const Variable* bias, Variable& output) {
  const Shape& first = inputs[0]->shape();
  const Shape joined{first.n, desc.in_channels, first.h, first.w};
  const bool pointwise = desc.is_square() && blas::reads_planes_in_place(desc) && desc.groups == 1;
  if (pointwise && plans_->is_constant(weights) && convolution_ != BlasConvolution::im2col) {
    // The affine applied while B is packed from the inputs: the concatenation and the normalised tensor (each as
    // large as the convolution's whole input, read and written once more per layer) are never written.
    const blas::ConvPlan* plan = plans_->find(desc, joined, weights);
    if (!plan) {
      plan = &plans_->store(weights,
                            blas::plan_convolution(desc, joined, weights, bias,
                                                   blas::ConvChoice{blas::ConvAlgorithm::pointwise_batch}, *team_));
    }
    const blas::InputAffine affine{scale.data(), shift.data(), input_activation};
    run_pointwise_batch(*plan, inputs, &affine, nullptr, desc.activation, output);
    return;
  }
  if (preactivated_input_.capacity() < joined.count()) preactivated_input_ = Variable(joined);
  Variable preactivated = preactivated_input_.view(joined);
  if (inputs.size() == 1) {
    channel_affine(*inputs[0], scale, shift, input_activation, preactivated);
  } else {
    concat_channels(inputs, preactivated);
    channel_affine(preactivated, scale, shift, input_activation, preactivated);
  }
  conv2d(desc, preactivated, weights, bias, output);
}

}  // namespace corgy
