// BlasBackend::squeeze_excite_conv2d: MobileNetV3's and EfficientNet's squeeze-and-excitation and the projection
// after it. Where the projection runs as one GEMM over the batch's pixels (pointwise_batch_gemm.h), whose B is packed
// from the input anyway, the gates scale B while it is packed: the block's scaled copy of the whole expanded tensor
// (its largest) is not written and read back. Where the projection's plan reads its input planes in place (bands of
// rows or of images: no packing of B), the gates scale the weights instead, image by image, when those are the
// smaller (squeeze_excite_gated_weights); elsewhere the block writes the scaled copy, then runs the projection.

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>

#include "corgy/backends/blas/activation_kernels.h"
#include "corgy/backends/blas/blas_backend.h"
#include "corgy/backends/blas/conv_gemm.h"
#include "corgy/backends/blas/conv_plan.h"
#include "corgy/backends/blas/pointwise_batch_gemm.h"
#include "corgy/backends/blas/thread_team.h"

namespace corgy {

namespace {

/// An image's pixels are cut into chunks of about this many bytes of input (all channels), whole panels of the
/// kernel's columns each: what L2 holds beside the gated weights.
constexpr std::size_t kChunkBytes = std::size_t{512} << 10;
/// ... of at least this many panels: each chunk reads the whole of the gated weights.
constexpr int kMinChunkPanels = 4;

/// Chunks per image of squeeze_excite_gated_weights for `input` with a kernel of `nr` columns and a team of `team`,
/// projecting to `out_channels`: within the cache budget, and at least four per member over the batch so that the
/// queue evens the members out. 0 where it does not pay: the weights are larger than an image's input (7 x 7 maps:
/// scaling the input is cheaper), or chunks of kMinChunkPanels give each of several members fewer than two (a
/// small map at batch 1, whose GEMM rather splits over output channels). The block then runs as before: a scaled
/// copy of the input, then the projection's own plan.
int gated_chunks(const Shape& input, int out_channels, int nr, int team) {
  if (out_channels > static_cast<int>(input.plane_count())) return 0;
  const int panels = (static_cast<int>(input.plane_count()) + nr - 1) / nr;
  const auto budget = static_cast<int>((input.image_count() * sizeof(float) + kChunkBytes - 1) / kChunkBytes);
  const int chunks =
      std::clamp(std::max(budget, (4 * team + input.n - 1) / input.n), 1, std::max(1, panels / kMinChunkPanels));
  return team == 1 || input.n * chunks >= 2 * team ? chunks : 0;
}

}  // namespace

void BlasBackend::squeeze_excite_conv2d(const SqueezeExciteDesc& excite, const SqueezeExciteWeights& excite_weights,
                                        const Conv2dDesc& conv, const Variable& input, const Variable& weights,
                                        const Variable* bias, const Variable* residual, Variable& output) {
  // The plan the projection alone gets (conv2d's, or conv2d_add's without the activation, which comes after the
  // add); with BlasConvolution::automatic, timed on the block's input (the gates do not change its speed).
  Conv2dDesc planned = conv;
  if (residual) planned.activation = Activation::none();
  const blas::ConvPlan* plan = nullptr;
  if (convolution_ != BlasConvolution::im2col) plan = plan_for(planned, input.shape(), &input, weights, bias, residual);
  if (plan && plan->algorithm == blas::ConvAlgorithm::packed_gemm && blas::reads_planes_in_place(conv) &&
      conv.groups == 1) {
    const int team = squeeze_excite_team(input, excite_weights);
    const int chunks = gated_chunks(input.shape(), conv.out_channels, plan->kernel->nr, team);
    if (chunks > 0) {
      return squeeze_excite_gated_weights(*plan, team, chunks, excite, excite_weights, conv, input, residual, output);
    }
  }
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

void BlasBackend::squeeze_excite_gated_weights(const blas::ConvPlan& plan, int team, int chunks,
                                               const SqueezeExciteDesc& excite,
                                               const SqueezeExciteWeights& excite_weights, const Conv2dDesc& conv,
                                               const Variable& input, const Variable* residual, Variable& output) {
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  const int nr = plan.kernel->nr;
  const int pixels = static_cast<int>(in.plane_count());
  const int panels = (pixels + nr - 1) / nr;
  profiler_.note(
      fmt::format("squeeze-excite gates folded into the weights, image by image: means, two "
                  "matrix-vector products + {}",
                  plan.describe()));
  const auto chunk_start = [&](int chunk) { return std::min(pixels, nr * (panels * chunk / chunks)); };
  SqueezeExciteScratch scratch = squeeze_excite_scratch(excite, in);
  if (plans_->band_buffers.size() < static_cast<std::size_t>(team)) plans_->band_buffers.resize(team);
  blas::WorkQueue queue(static_cast<std::size_t>(in.n) * chunks, team);
  const blas::PackedA& weights = plan.packed.groups[0];
  const Activation activation = residual ? Activation::none() : conv.activation;
  keep_openblas_single_threaded();
  team_->run(team, [&](const blas::TeamMember& member) {
    squeeze_excite_gates(member, excite, input, excite_weights, scratch);
    blas::BandBuffers& buffers = plans_->band_buffers[member.index()];
    int gated_image = -1;  // the image whose gates buffers.gated_weights holds
    std::size_t item = 0;
    while (queue.next(member, item)) {
      const int n = static_cast<int>(item / chunks);
      const int chunk = static_cast<int>(item % chunks);
      if (n != gated_image) {
        buffers.gated_weights.assign_scaled_columns(weights, scratch.gates.data() + static_cast<std::size_t>(n) * in.c);
        gated_image = n;
      }
      const int p0 = chunk_start(chunk);
      const int count = chunk_start(chunk + 1) - p0;
      float* target = output.data() + n * out.image_count() + p0;
      blas::planes_gemm(*plan.kernel, buffers.gated_weights, 0, buffers.gated_weights.panels(),
                        input.data() + n * in.image_count() + p0, in.plane_count(), count, target, out.plane_count(),
                        activation, buffers.gemm);
      if (residual) {
        const float* added = residual->data() + (target - output.data());
        for (int o = 0; o < out.c; ++o) {
          const std::size_t offset = static_cast<std::size_t>(o) * out.plane_count();
          blas::add_activate(target + offset, added + offset, target + offset, count, conv.activation);
        }
      }
    }
  });
}

}  // namespace corgy
