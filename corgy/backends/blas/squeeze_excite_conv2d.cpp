// BlasBackend::squeeze_excite_conv2d: MobileNetV3's and EfficientNet's squeeze-and-excitation and the projection
// after it. Where the projection runs as one GEMM over the batch's pixels (pointwise_batch_gemm.h), whose B is packed
// from the input anyway, the gates scale B while it is packed: the block's scaled copy of the whole expanded tensor
// (its largest) is not written and read back. Where the projection's plan reads its input planes in place (bands of
// rows or of images: no packing of B), the scaled copy is what packing would cost, and the block runs as before.

#include "corgy/backends/blas/blas_backend.h"
#include "corgy/backends/blas/conv_plan.h"
#include "corgy/backends/blas/pointwise_batch_gemm.h"

namespace corgy {

void BlasBackend::squeeze_excite_conv2d(const SqueezeExciteDesc& excite, const SqueezeExciteWeights& excite_weights,
                                        const Conv2dDesc& conv, const Variable& input, const Variable& weights,
                                        const Variable* bias, const Variable* residual, Variable& output) {
  // The plan the projection alone gets (conv2d's, or conv2d_add's without the activation, which comes after the
  // add); with BlasConvolution::automatic, timed on the block's input (the gates do not change its speed).
  Conv2dDesc planned = conv;
  if (residual) planned.activation = Activation::none();
  const blas::ConvPlan* plan = nullptr;
  if (convolution_ != BlasConvolution::im2col) plan = plan_for(planned, input.shape(), &input, weights, bias, residual);
  if (!plan || plan->algorithm != blas::ConvAlgorithm::pointwise_batch) {
    if (excited_input_.capacity() < input.count()) excited_input_ = Variable(input.shape());
    Variable excited = excited_input_.view(input.shape());
    squeeze_excite(excite, input, *excite_weights.reduce_weights, excite_weights.reduce_bias,
                   *excite_weights.expand_weights, excite_weights.expand_bias, excited);
    if (residual) return conv2d_add(conv, excited, weights, bias, *residual, output);
    return conv2d(conv, excited, weights, bias, output);
  }
  profiler_.note("squeeze-excite gates: means, two matrix-vector products");
  SqueezeExciteScratch scratch = squeeze_excite_scratch(excite, input.shape());
  keep_openblas_single_threaded();
  team_->run(squeeze_excite_team(input, excite_weights), [&](const blas::TeamMember& member) {
    squeeze_excite_gates(member, excite, input, excite_weights, scratch);
  });
  const blas::InputAffine gates{.image_scale = scratch.gates.data()};
  const Variable* inputs[] = {&input};
  run_pointwise_batch(*plan, inputs, &gates, residual, conv.activation, output);
}

}  // namespace corgy
