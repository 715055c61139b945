// BlasBackend::preactivated_conv2d: DenseNet's BN-ReLU-Conv on its concatenated features.

#include <vector>

#include "corgy/backends/blas/activation_kernels.h"
#include "corgy/backends/blas/blas_backend.h"
#include "corgy/backends/blas/conv_plan.h"
#include "corgy/backends/blas/pointwise_batch_gemm.h"
#include "corgy/backends/blas/separable_pool.h"

namespace corgy {

void BlasBackend::preactivated_conv2d(const Conv2dDesc& desc, std::span<const Variable* const> inputs,
                                      const Variable& scale, const Variable& shift, Activation input_activation,
                                      const Pool2dDesc* input_pool, const Variable& weights, const Variable* bias,
                                      Variable& output) {
  const Shape& first = inputs[0]->shape();
  const Shape joined{first.n, desc.in_channels, first.h, first.w};
  if (input_pool) {
    // The affine, its activation and the pool plane by plane into a tensor of the pooled shape (a quarter of the
    // input for DenseNet's 2x2/2), then the convolution on a quarter of the pixels.
    profiler_.note("channel affine + average pool loop");
    const Shape pooled{first.n, desc.in_channels, input_pool->output_h(first.h), input_pool->output_w(first.w)};
    if (preactivated_input_.capacity() < pooled.count()) preactivated_input_ = Variable(pooled);
    Variable target = preactivated_input_.view(pooled);
    parallel_for(threads_for(first.n * joined.image_count()), static_cast<std::size_t>(pooled.n) * pooled.c,
                 [&](std::size_t plane) {
                   const int n = static_cast<int>(plane / pooled.c);
                   int c = static_cast<int>(plane % pooled.c);
                   const Variable* input = inputs[0];
                   for (std::size_t i = 0; c >= input->shape().c; input = inputs[++i]) c -= input->shape().c;
                   const float* source =
                       input->data() + (static_cast<std::size_t>(n) * input->shape().c + c) * joined.plane_count();
                   thread_local std::vector<float> activated;
                   thread_local std::vector<float> pool_line;
                   activated.resize(joined.plane_count());
                   const float channel_scale = scale.data()[plane % pooled.c];
                   for (std::size_t i = 0; i < activated.size(); ++i) activated[i] = source[i] * channel_scale;
                   blas::bias_activate(activated.data(), activated.data(), activated.size(),
                                       shift.data()[plane % pooled.c], input_activation);
                   blas::pool_plane(*input_pool, activated.data(), joined, target.data() + plane * pooled.plane_count(),
                                    pooled, pool_line);
                 });
    return conv2d(desc, target, weights, bias, output);
  }
  const bool pointwise = desc.is_square() && blas::reads_planes_in_place(desc) && desc.groups == 1;
  if (pointwise && plans_->is_constant(weights) && convolution_ != BlasConvolution::im2col) {
    // The affine applied while B is packed from the inputs: the concatenation and the normalised tensor (each as
    // large as the convolution's whole input, read and written once more per layer) are never written.
    const blas::ConvPlan* plan = plans_->find(desc, joined, weights, bias);
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
