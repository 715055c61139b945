// The blas backend's inverted residual block in channel blocks (corgy/backends/blas/channel_block_residual.h) against
// the naive backend's three convolutions, with the kernels of every instruction set this CPU has (the layer harness
// runs the widest only), with and without a squeeze-and-excitation before the projection: odd maps, strides 1 and 2,
// 3x3, 5x5 and 7x7 windows, channel counts that are not multiples of a register or of a GEMM panel, a residual, every
// activation the blocks use; whole images, and an image's panels split between two members' sums as the backend splits
// them at batch 1.
#include "corgy/backends/blas/channel_block_residual.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "corgy/backends/naive/naive_backend.h"
#include "corgy/variable.h"
#include "test_util.h"

namespace corgy::testing {
namespace {

struct BlockCase {
  Shape input;  // one image
  int expanded, kernel, stride, out;
  Activation activation;
  bool residual;
  int squeeze = 0;  // a squeeze-and-excitation of this many channels before the projection; 0: none
};

TEST(ChannelBlockResidual, MatchesTheNaiveBackend) {
  const std::vector<BlockCase> cases = {
      {{1, 24, 14, 14}, 144, 3, 1, 24, Activation::relu6(), true},
      {{1, 16, 13, 11}, 100, 3, 2, 40, Activation::hard_swish(), false},
      {{1, 20, 9, 10}, 120, 5, 1, 20, Activation::relu(), true},
      {{1, 12, 15, 12}, 72, 5, 2, 33, Activation::swish(), false},
      {{1, 8, 7, 7}, 40, 7, 1, 8, Activation::relu6(), true},
      {{1, 10, 11, 9}, 30, 7, 2, 17, Activation::none(), false},
      {{1, 5, 1, 1}, 21, 3, 1, 5, Activation::hard_swish(), true},
      {{1, 7, 2, 3}, 50, 3, 2, 9, Activation::relu6(), false},
      {{1, 16, 14, 14}, 96, 5, 1, 16, Activation::swish(), true, 4},
      {{1, 24, 13, 9}, 120, 3, 2, 40, Activation::hard_swish(), false, 30},
      {{1, 20, 7, 7}, 100, 7, 1, 20, Activation::relu(), true, 25},
  };
  std::mt19937 random(11);
  NaiveBackend naive;
  // Two members' buffers, kept from case to case as the backend keeps them: what one call leaves in them must not
  // reach the next's results.
  blas::ChannelBlockBuffers first;
  blas::ChannelBlockBuffers second;
  for (const BlockCase& c : cases) {
    const Conv2dDesc expand{
        .in_channels = c.input.c, .out_channels = c.expanded, .kernel = 1, .activation = c.activation};
    const Conv2dDesc depthwise{.in_channels = c.expanded,
                               .out_channels = c.expanded,
                               .kernel = c.kernel,
                               .stride = c.stride,
                               .padding = c.kernel / 2,
                               .groups = c.expanded,
                               .activation = c.activation};
    const Conv2dDesc project{.in_channels = c.expanded,
                             .out_channels = c.out,
                             .kernel = 1,
                             .activation = c.residual ? c.activation : Activation::none()};
    const Variable expand_weights = random_variable({c.expanded, c.input.c, 1, 1}, random);
    const Variable expand_bias = random_variable({1, 1, 1, c.expanded}, random);
    const Variable depthwise_weights = random_variable({c.expanded, 1, c.kernel, c.kernel}, random);
    const Variable depthwise_bias = random_variable({1, 1, 1, c.expanded}, random);
    const Variable project_weights = random_variable({c.out, c.expanded, 1, 1}, random);
    const Variable project_bias = random_variable({1, 1, 1, c.out}, random);
    const Variable input = random_variable(c.input, random);
    const int squeeze = std::max(c.squeeze, 1);
    const SqueezeExciteDesc excite{c.squeeze > 0 ? c.expanded : 0, squeeze, Activation::relu(), Activation::sigmoid()};
    const Variable reduce_weights = random_variable({squeeze, c.expanded, 1, 1}, random);
    const Variable reduce_bias = random_variable({1, 1, 1, squeeze}, random);
    const Variable excite_weights = random_variable({c.expanded, squeeze, 1, 1}, random);
    const Variable excite_bias = random_variable({1, 1, 1, c.expanded}, random);
    // The reference: the three convolutions, then the residual added before the projection's activation.
    Variable expanded({1, c.expanded, c.input.h, c.input.w});
    naive.conv2d(expand, input, expand_weights, &expand_bias, expanded);
    const int out_h = depthwise.output_size(c.input.h);
    const int out_w = depthwise.output_size(c.input.w);
    Variable filtered({1, c.expanded, out_h, out_w});
    naive.conv2d(depthwise, expanded, depthwise_weights, &depthwise_bias, filtered);
    if (c.squeeze > 0) {
      Variable excited(filtered.shape());
      naive.squeeze_excite(excite, filtered, reduce_weights, &reduce_bias, excite_weights, &excite_bias, excited);
      filtered = std::move(excited);
    }
    Conv2dDesc sums_only = project;
    sums_only.activation = Activation::none();
    Variable want({1, c.out, out_h, out_w});
    naive.conv2d(sums_only, filtered, project_weights, &project_bias, want);
    const Variable residual = random_variable({1, c.out, out_h, out_w}, random);
    for (std::size_t i = 0; i < want.count(); ++i) {
      const float sum = want.data()[i] + (c.residual ? residual.data()[i] : 0.0f);
      want.data()[i] = apply_activation(project.activation, sum);
    }

    InvertedResidualDesc block{{expand, &expand_weights, &expand_bias},
                               {depthwise, &depthwise_weights, &depthwise_bias},
                               {project, &project_weights, &project_bias}};
    if (c.squeeze > 0) {
      block.excite = excite;
      block.excite_weights = {&reduce_weights, &reduce_bias, &excite_weights, &excite_bias};
    }
    for (const CpuIsa isa : isas_of_this_cpu()) {
      for (const bool split : {false, true}) {
        // Split, the plan's tiles are chosen for two members (their panels of channels split evenly).
        const int members = split ? 2 : 1;
        ASSERT_TRUE(blas::channel_block_residual_applies(block, c.input, std::size_t{1} << 30, members));
        const blas::ChannelBlockResidualPlan plan = blas::plan_channel_block_residual(block, c.input, members, isa);
        // One more value: nothing may be written past the image.
        std::vector<float> got(want.count() + 1, 12345.0f);
        const float* added = c.residual ? residual.data() : nullptr;
        const int panels = plan.expand.panels();
        const int groups = blas::channel_block_output_groups(plan);
        if (!split || panels < 2) {
          blas::channel_block_residual_image(plan, input.data(), added, got.data(), first);
        } else if (c.squeeze > 0) {
          // As the backend splits an excited image: shared depthwise output, channel sums, gates and projection
          // sums (first's); each member a share of the gates' rows and of the projection's panels.
          first.excited.assign(blas::channel_block_excited_floats(plan), 0.0f);
          first.sums.assign(static_cast<std::size_t>(c.expanded), 0.0f);
          first.projected.assign(blas::channel_block_projected_floats(plan), 0.0f);
          const blas::ExcitedTargets targets{first.excited.data(), first.sums.data()};
          blas::channel_block_residual_panels(plan, input.data(), 0, panels / 2, first, &targets);
          blas::channel_block_residual_panels(plan, input.data(), panels / 2, panels, second, &targets);
          // The gates' products split by rows, the halves in the other order, into first's buffers.
          first.squeezed.assign(static_cast<std::size_t>(c.squeeze), 0.0f);
          first.gates.assign(static_cast<std::size_t>(c.expanded), 0.0f);
          blas::channel_block_excited_squeeze(plan, first.sums.data(), c.squeeze / 2, c.squeeze, first.squeezed.data());
          blas::channel_block_excited_squeeze(plan, first.sums.data(), 0, c.squeeze / 2, first.squeezed.data());
          blas::channel_block_excited_expand(plan, first.squeezed.data(), c.expanded / 2, c.expanded,
                                             first.gates.data());
          blas::channel_block_excited_expand(plan, first.squeezed.data(), 0, c.expanded / 2, first.gates.data());
          const int projection = plan.project.panels();
          blas::channel_block_excited_projection(plan, first.excited.data(), first.gates.data(), 0, projection / 2,
                                                 first, first.projected.data());
          blas::channel_block_excited_projection(plan, first.excited.data(), first.gates.data(), projection / 2,
                                                 projection, second, first.projected.data());
          blas::ChannelBlockBuffers* const sums[] = {&first};
          blas::channel_block_residual_output(plan, sums, groups / 2, groups, added, got.data(), second.staging);
          blas::channel_block_residual_output(plan, sums, 0, groups / 2, added, got.data(), first.staging);
        } else {
          blas::channel_block_residual_panels(plan, input.data(), 0, panels / 2, first);
          blas::channel_block_residual_panels(plan, input.data(), panels / 2, panels, second);
          blas::ChannelBlockBuffers* const sums[] = {&first, &second};
          blas::channel_block_residual_output(plan, sums, groups / 2, groups, added, got.data(), second.staging);
          blas::channel_block_residual_output(plan, sums, 0, groups / 2, added, got.data(), first.staging);
        }
        double worst = 0.0;
        for (std::size_t i = 0; i < want.count(); ++i) {
          worst = std::max(worst, std::abs(double{got[i]} - want.data()[i]));
        }
        EXPECT_LE(worst, 2e-4) << isa_name(isa) << (split ? " split" : "") << " " << plan.expand_kernel->name << " "
                               << plan.project_kernel->name << " " << c.input.str() << " -> " << c.expanded << " dw "
                               << c.kernel << "/" << c.stride << " -> " << c.out << " " << c.activation.str();
        EXPECT_EQ(got.back(), 12345.0f) << isa_name(isa) << ": wrote past the image";
      }
    }
  }
}

}  // namespace
}  // namespace corgy::testing
