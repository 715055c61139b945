// A convolution with few input channels (a network's stem: the RGB image in) computed directly, without a GEMM: its
// GEMM would be only in_channels x k x k deep (27 for a 3x3 stem), too shallow for the packed GEMM, whose packing of
// the strided input and write-out then cost more than its multiply-adds (MobileNetV2's stem ran at 18% of the FMA
// peak). Here every output register is a run of pixels of one output channel, accumulated over the taps straight
// from the input's phase planes (few_channels_kernels.h), written to the output in place.
#pragma once

#include <cstddef>
#include <vector>

#include "corgy/backend.h"
#include "corgy/backends/blas/few_channels_kernels.h"
#include "corgy/backends/blas/thread_team.h"
#include "corgy/variable.h"

namespace corgy::blas {

/// The most input channels the direct kernel takes: its multiply-adds per loaded register grow with the output
/// channels, not with the depth, so deep inputs belong to the GEMMs.
constexpr int kMostFewInputChannels = 4;

/// One group, at most kMostFewInputChannels input channels, a square window of at most 11 x 11 (any stride,
/// padding and dilation).
bool few_channels_applies(const Conv2dDesc& desc);

/// Bands of output rows per image, so that a band's phase planes stay in L2 and `threads` have several bands each.
int few_channels_bands(const Conv2dDesc& desc, const Shape& input, int threads);

/// output = activation(conv(input) + bias) for the items (image, band) of `queue` (images x `bands`), with weights
/// packed by pack_few_channels_weights for few_channels_kernel(). `buffer`: this thread's, grown as needed.
void few_channels_conv(const TeamMember& member, WorkQueue& queue, int bands, const Conv2dDesc& desc,
                       const std::vector<float>& packed, const Variable& input, Variable& output,
                       std::vector<float>& buffer);

/// One thread's buffers for few_channels_conv_pooled.
struct FewChannelsPoolBuffers {
  std::vector<float> kernel;     // the kernel's phase planes and output block
  std::vector<float> convolved;  // a band's convolution output, every channel
  std::vector<float> pool_line;  // pool_plane's reduced line
};

/// Bands of pooled output rows per image for few_channels_conv_pooled: each band's convolution rows (every channel)
/// inside an L2-sized budget, and `threads` with several bands each.
int few_channels_pooled_bands(const Pool2dDesc& pool, const Shape& conv_output, const Shape& output, int threads);

/// output = pool(activation(conv(input) + bias)) (`conv_output`: the convolution's shape) for the items (image, band
/// of pooled rows) of `queue` (images x `bands`): each band convolves the rows its windows read (a window's rows
/// past the band's stride, kernel_h - stride_h of them, are computed by both bands that read them) into a buffer
/// and pools them from there, so the convolution's output never goes through memory.
void few_channels_conv_pooled(const TeamMember& member, WorkQueue& queue, int bands, const Conv2dDesc& desc,
                              const Pool2dDesc& pool, const std::vector<float>& packed, const Variable& input,
                              const Shape& conv_output, Variable& output, FewChannelsPoolBuffers& buffers);

}  // namespace corgy::blas
