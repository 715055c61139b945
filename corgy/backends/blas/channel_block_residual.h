// An inverted residual block (MobileNetV2's: 1x1 expansion, depthwise convolution, 1x1 projection) computed one
// image at a time in channel blocks (channel_block_kernels.h), a few blocks of the expanded channels at a time, end to
// end.
//
// Why: on the small maps of a network's late stages (14 x 14, 7 x 7) the blocks in channel planes pay for layout at
// every step. The GEMMs with pixels in the lanes pad 196 or 49 pixels to whole tiles, and the depthwise kernel that
// wins there (channels in the lanes) transposes its input in and its output back out (MobileNetV2 at batch 8: 7% of
// the forward in those transpositions; its 14 x 14 and 7 x 7 blocks 1.2-1.3x ONNX Runtime's, which computes them in
// NCHWc). Here the expansion's GEMM has output channels in the lanes (its A, the input planes, read in place) and
// leaves a panel of expanded channels as channel blocks with their zero border; the depthwise kernel runs on those
// blocks as they are; the projection's GEMM reads its output in place (gemm_kernels.h's run_blocked) and adds that
// panel's share of the depth to its sums. Each panel's expanded rows, blocks and depthwise output (a few dozen KB)
// stay in L1 and L2 from one step to the next, and the expanded tensor is never whole anywhere. Only the projection's
// output goes back to channel planes, one transposition of the block's narrowest tensor.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "corgy/backend.h"
#include "corgy/backends/blas/channel_block_kernels.h"
#include "corgy/backends/blas/channels_in_lanes_gemm.h"
#include "corgy/backends/blas/depthwise_kernels.h"
#include "corgy/backends/blas/gemm_kernels.h"
#include "corgy/backends/cpu/cpu_features.h"

namespace corgy::blas {

/// True where channel_block_residual_image computes `desc` at one image's `input` (C, H, W): an expansion and a
/// projection, square windows, a depthwise kernel of 3, 5 or 7 at stride 1 or 2 and dilation 1, and a panel's
/// working set (its expanded rows, blocks and depthwise output) within `budget_bytes`; with a squeeze-and-excitation,
/// also the whole image's depthwise output within twice that (the gates need every channel's mean before the
/// projection can start, so the depthwise output waits, in channel blocks, for all of them). `members`: the threads
/// that share each image (run_channel_block_residual splits an image's panels among them), as planned.
bool channel_block_residual_applies(const InvertedResidualDesc& desc, const Shape& input, std::size_t budget_bytes,
                                    int members = 1);

/// The block's weights packed for its GEMMs and depthwise kernel, at one image's input and output shapes.
struct ChannelBlockResidualPlan {
  Shape input;   // one image
  Shape output;  // one image
  ChannelBlockKernels kernels;
  const GemmMicroKernel* expand_kernel = nullptr;
  ChannelPanels expand;  // W^T of the expansion, panels of expanded channels
  Activation expand_activation;
  DepthwiseGeometry depthwise;
  std::vector<float> depthwise_packed;  // pack_depthwise_channel_weights's
  Activation depthwise_activation;
  const GemmMicroKernel* project_kernel = nullptr;
  ChannelPanels project;  // W^T of the projection, its depth the expanded channels
  Activation project_activation;
  std::vector<std::int32_t> input_offsets;     // the expansion's A in place: depth k at k * input plane
  std::vector<std::int32_t> tail_offsets;      // ... and in the copy of the last, partial tile: k * expand mr
  std::vector<std::int32_t> filtered_offsets;  // the projection's A in place: depth k of an expansion panel
  int expanded = 0;                            // channels
  /// The squeeze-and-excitation between the depthwise convolution and the projection (excite.channels 0: none), and
  /// its parameters (OIHW weights; biases null when absent).
  SqueezeExciteDesc excite{};
  const float* reduce_weights = nullptr;
  const float* reduce_bias = nullptr;
  const float* expand_weights = nullptr;
  const float* expand_bias = nullptr;
  std::vector<std::int32_t> excited_offsets;  // the projection's A in place over the whole depth: the image's blocks
  bool excites() const { return excite.channels > 0; }

  /// The packed weights, for the tuner (conv_tuner.h's evict_from_caches).
  std::vector<std::span<const float>> weight_buffers() const;
};

/// `members`: the threads that share each image by the GEMMs' panels of channels, whose width the plan then picks
/// to split evenly among them. `isa`: the kernels of the widest instruction set by default (tests pass others).
ChannelBlockResidualPlan plan_channel_block_residual(const InvertedResidualDesc& desc, const Shape& image_input,
                                                     int members = 1, CpuIsa isa = widest_cpu_isa());

/// One thread's buffers; grown by channel_block_residual_image as it needs.
struct ChannelBlockBuffers {
  std::vector<float> expanded_rows;  // the expansion's rows (pixels) of one panel of expanded channels
  std::vector<float> tiles;          // that panel's channel blocks with their zero border
  std::vector<float> filtered;       // their depthwise output
  std::vector<float> projected;      // the projection's sums, rows of output pixels
  std::vector<float> staging;        // rows_to_planes's
  std::vector<float> tail;           // the input's last, partial tile of pixels
  // With a squeeze-and-excitation:
  std::vector<float> excited;  // the whole image's depthwise output, in channel blocks
  std::vector<float> sums;     // per channel: its sum over the pixels
  std::vector<float> squeezed;
  std::vector<float> gates;
  std::vector<float> gated;  // one panel of the projection's weights, each row scaled by its channel's gate
};

/// Where panels of a block with a squeeze-and-excitation leave their depthwise output: the whole image's, channel
/// block c / lanes at excited + c / lanes * out_pixels * lanes, and each channel's sum over the pixels at sums + c.
struct ExcitedTargets {
  float* excited = nullptr;
  float* sums = nullptr;
};
/// Floats of ExcitedTargets::excited: every channel block, and the projection's reads past the last.
std::size_t channel_block_excited_floats(const ChannelBlockResidualPlan& plan);

/// Expansion panels [first, end) of one image (input (in_c, in_h, in_w)): their share of the projection's sums, into
/// buffers.projected (overwritten). One member's share of an image's work where the team splits it.
/// With a squeeze-and-excitation (plan.excites()) their depthwise output and channel sums go to `excited` instead,
/// and the projection waits for channel_block_excited_projection.
void channel_block_residual_panels(const ChannelBlockResidualPlan& plan, const float* input, int first, int end,
                                   ChannelBlockBuffers& buffers, const ExcitedTargets* excited = nullptr);
/// A block with a squeeze-and-excitation: buffers.gates from every channel's sum over one image's pixels ...
void channel_block_excited_gates(const ChannelBlockResidualPlan& plan, const float* sums, ChannelBlockBuffers& buffers);
/// ... as two steps that members may split by rows (each reads only its rows of the weights, which at batch 1 come
/// from memory: 1.8 MB in MobileNetV3's last blocks): squeezed channels [first, end) from the sums (excite.channels
/// values), then, once every squeezed channel is there, gates [first, end) from them.
void channel_block_excited_squeeze(const ChannelBlockResidualPlan& plan, const float* sums, int first, int end,
                                   float* squeezed);
void channel_block_excited_expand(const ChannelBlockResidualPlan& plan, const float* squeezed, int first, int end,
                                  float* gates);
/// ... then projection panels [first, end) of that image (of plan.project.panels()) from its depthwise output in
/// channel blocks (ExcitedTargets::excited), `gates` folded into the weights (buffers.gated), into `projected`
/// (laid out as ChannelBlockBuffers::projected, which channel_block_residual_output reads).
void channel_block_excited_projection(const ChannelBlockResidualPlan& plan, const float* excited, const float* gates,
                                      int first, int end, ChannelBlockBuffers& buffers, float* projected);
/// Floats of ChannelBlockBuffers::projected.
std::size_t channel_block_projected_floats(const ChannelBlockResidualPlan& plan);
/// Register-wide groups of output channels (the last may be partial): what channel_block_residual_output splits.
int channel_block_output_groups(const ChannelBlockResidualPlan& plan);
/// Output channel groups [first_group, end_group) of one image: the sums of every buffers' projected (the first's
/// take the others' added in), plus the bias and residual (laid out as output, or null), activated, into `output`
/// (out_c, out_h, out_w).
void channel_block_residual_output(const ChannelBlockResidualPlan& plan, std::span<ChannelBlockBuffers* const> sums,
                                   int first_group, int end_group, const float* residual, float* output,
                                   std::vector<float>& staging);

/// One image: output (out_c, out_h, out_w) = the block of input (in_c, in_h, in_w), plus residual (laid out as
/// output; null: none) before the projection's activation.
void channel_block_residual_image(const ChannelBlockResidualPlan& plan, const float* input, const float* residual,
                                  float* output, ChannelBlockBuffers& buffers);

}  // namespace corgy::blas
