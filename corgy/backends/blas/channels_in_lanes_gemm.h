// A convolution of a small output map as the transposed GEMM C^T = B^T A^T: C^T's rows are output pixels (of every
// image) and its columns output channels, so the micro-kernels' vector lanes run over output channels, which fill
// them (ResNet-50's 512 and 2048), rather than over pixels, which do not (a 7x7 map's 49 pixels fill 49 of the 64
// lanes of the packed GEMM's 12x32 tiles). The input's pixels are packed at each call into k-major panels of a few
// pixels (the micro-kernel's broadcast operand), from the channel planes or by implicit im2col, or, for a window at
// stride 1 or 2, read in place from a zero-padded copy of the input (no panels: each tile of pixels along an output
// row broadcasts its taps from where they lie, which also pays on large maps at stride 2); the weights are
// transposed and packed once, when the layer is planned (its vector operand). Each block of C^T goes back to NCHW
// with the bias, the residual and the activation applied on the way.
//
// A grouped convolution (ResNeXt's 32 groups, RegNet's) is the same GEMM over each group's block of W^T: a panel
// holds the output channels of one group only, and its tiles read that group's input channels, the taps in place,
// so no group is packed at the call and every (group panel, pixel tile) pair is one more tile of the same sweep.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "corgy/backend.h"
#include "corgy/backends/blas/gemm_kernels.h"
#include "corgy/backends/blas/thread_team.h"
#include "corgy/backends/cpu/aligned_buffer.h"
#include "corgy/variable.h"

namespace corgy::blas {

/// True where channels_in_lanes_conv computes `desc` on `input` (square windows, as every planned algorithm): one
/// group, or groups of a multiple of 8 output channels whose taps it reads in place (not depthwise: its own kernels
/// do that).
bool channels_in_lanes_applies(const Conv2dDesc& desc, const Shape& input);
/// True where it reads `desc`'s taps in place from a zero-padded copy of the input (strides 1 and 2, a window
/// larger than 1x1 or padded) rather than packing im2col panels of pixels.
bool channels_in_lanes_reads_taps(const Conv2dDesc& desc);

/// The micro-kernel of the widest instruction set for `desc` at `output` (every image's pixels by its output
/// channels), shared among `members` as channels_in_lanes_conv shares it: of the tiles at least two registers wide,
/// the one whose tiles compute the fewest padded elements per member.
/// `set`: the widest instruction set's by default (tests pass others').
const GemmMicroKernel& channels_in_lanes_kernel(const Conv2dDesc& desc, const Shape& output, int members,
                                                const GemmKernelSet& set = gemm_kernels());

/// Whether channels_in_lanes_conv with `kernel` shares `desc`'s GEMM at `output` among `members` by pixels (each
/// member every output channel of its share of the output rows or pixel panels) rather than by output channels
/// (each member its share of the weights' panels over every pixel): where the panels are too few to go round
/// evenly and the pixels split better.
bool channels_in_lanes_splits_pixels(const Conv2dDesc& desc, const Shape& output, const GemmMicroKernel& kernel,
                                     int members);

/// A convolution's weights (out_channels, in_channels / groups, k, k) as each group's depth x group_channels block
/// of W^T (depth = in_channels / groups * k * k), packed in panels of nr output channels of one group: group g's
/// panels are panels_per_group() from g * panels_per_group(), and its panel q's row k holds channels
/// [g * group_channels + q * nr, + nr) at panel(p) + k * nr, channels past the group's end zero.
struct ChannelPanels {
  std::shared_ptr<cpu::AlignedBuffer> data;  // shared by the plans that packed the same values (share_buffer_if_equal)
  std::vector<float> bias;  // out_channels values rounded up to the panels' nr, zeros where the layer has none
  int depth = 0;
  int channels = 0;
  int nr = 0;
  int groups = 1;
  int group_channels = 0;  // channels / groups
  int panels_per_group() const { return (group_channels + nr - 1) / nr; }
  int panels() const { return groups * panels_per_group(); }
  int group_of(int panel) const { return panel / panels_per_group(); }
  /// The first output channel of a panel, and how many of its nr columns are channels.
  int first_channel(int panel) const { return group_of(panel) * group_channels + panel % panels_per_group() * nr; }
  int channel_count(int panel) const { return std::min(nr, group_channels - panel % panels_per_group() * nr); }
  const float* panel(int index) const { return data->data() + static_cast<std::size_t>(index) * depth * nr; }
  std::size_t floats() const { return static_cast<std::size_t>(panels()) * depth * nr; }
  /// Makes this packing read `other`'s buffer where both hold the same values in the same layout (the same weights
  /// packed again, for another input shape), so that the two plans hold them once; returns whether it does.
  bool share_buffer_if_equal(const ChannelPanels& other);
};
/// `bias` (out_channels values) may be null.
ChannelPanels pack_channel_panels(const Conv2dDesc& desc, const float* weights, const float* bias,
                                  const GemmMicroKernel& kernel);

/// The buffers of channels_in_lanes_conv: the input's pixel panels (written and read by the whole team) and each
/// member's block of C^T.
struct ChannelsInLanesBuffers {
  std::vector<float> pixel_panels;  // or, at strides 1 and 2, the padded input the tiles read in place
  std::vector<std::int32_t> tap_offsets;
  std::vector<std::vector<float>> blocks;
};

/// output (N, out_channels, out_h, out_w) = activation(conv(input) + bias [+ residual]) (residual: output's shape,
/// or null), by the whole team (each member calls it; it returns after the team's barrier): each member its share
/// of the weights' channel panels over every image and pixel, or, where channels_in_lanes_splits_pixels, its share
/// of the pixels over every channel.
void channels_in_lanes_conv(const TeamMember& member, const GemmMicroKernel& kernel, const Conv2dDesc& desc,
                            const ChannelPanels& weights, const Variable& input, const Variable* residual,
                            Activation activation, Variable& output, ChannelsInLanesBuffers& buffers);

}  // namespace corgy::blas
