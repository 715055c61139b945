// The kernels of the direct convolution for few input channels (few_channels_conv.h), one variant per instruction set
// like the GEMM kernels (kernels/few_channels_<isa>.cpp, picked from cpuid), and the buffer sizes they share.
#pragma once

#include <cstddef>
#include <vector>

#include "corgy/activation.h"
#include "corgy/backends/blas/depthwise_kernels.h"
#include "corgy/backends/cpu/cpu_features.h"

namespace corgy::blas {

/// One band of output rows of one image.
struct FewChannelsBandArgs {
  const DepthwiseGeometry* geometry;  ///< the band's (depthwise_band_geometry: its rows of input and of padding)
  const float* input;                 ///< input channel 0 at the band's first input row
  std::size_t input_plane;            ///< floats from one input channel to the next
  int in_channels;
  const float* packed;  ///< pack_few_channels_weights's, for this kernel's block of output channels
  int out_channels;
  Activation activation;
  float* output;             ///< output channel 0 at the band's first row
  std::size_t output_plane;  ///< floats from one output channel to the next
  float* buffer;             ///< few_channels_buffer_floats of them
};

/// A kernel and its register block: `channels` output channels at a time, `step` floats of pixels per block.
struct FewChannelsKernel {
  int channels = 0;
  int step = 0;
  void (*run)(const FewChannelsBandArgs&) = nullptr;
};

/// Floats of a band's buffer: each input channel's phase planes (the kernel writes its results straight to the output).
inline std::size_t few_channels_buffer_floats(const DepthwiseGeometry& g, int in_channels) {
  return static_cast<std::size_t>(in_channels) * g.phase_floats;
}

/// The weights (OIHW, out_channels x in_channels x taps) and bias (null: zeros) for kernels of `channels` output
/// channels per block: per block, weight (c, tap) of its channels as a run of `channels`, then their biases; a last
/// partial block padded with zeros.
std::vector<float> pack_few_channels_weights(const float* weights, const float* bias, int out_channels, int in_channels,
                                             int taps, int channels);

/// The kernel of an instruction set (the CPU must have it), and of the widest this CPU has.
FewChannelsKernel few_channels_kernel(CpuIsa isa);
FewChannelsKernel few_channels_kernel();

FewChannelsKernel generic_few_channels_kernel();
FewChannelsKernel avx2_few_channels_kernel();
FewChannelsKernel avx512_few_channels_kernel();

}  // namespace corgy::blas
