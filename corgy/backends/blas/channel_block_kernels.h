// The kernels of an inverted residual block computed in channel blocks (channel_block_residual.h), one set per
// instruction set like the GEMM kernels (kernels/depthwise_channel_blocks_<isa>.cpp, picked from cpuid).
//
// A channel block is a register's worth of channels (`lanes`) of one image, pixel after pixel: pixel p's channels
// are the register at block + p * lanes. The expansion's GEMM (output channels in the lanes) leaves its rows in that
// form, the depthwise kernel reads and writes it, and the projection's GEMM reads it in place (gemm_kernels.h's
// run_blocked); only the projection's output goes back to channel planes.
#pragma once

#include <cstddef>

#include "corgy/activation.h"
#include "corgy/backends/blas/depthwise_kernels.h"
#include "corgy/backends/cpu/cpu_features.h"

namespace corgy::blas {

struct ChannelBlockKernels {
  /// Channels per block: the register's floats.
  int lanes = 0;
  /// `count` pixels of one block: tile[p * lanes + c] = activation(rows[p * ld + c] + bias[c]), c < lanes (a GEMM's
  /// rows of output pixels, `ld` floats apart, a register of their output channels at `rows`).
  void (*store_rows)(const float* rows, std::size_t ld, int count, const float* bias, Activation activation,
                     float* tile) = nullptr;
  /// The depthwise convolution of one block: `tile` holds its input with the zero border of `geometry`'s padding
  /// ((pad_top + in_h + pad_bottom) x (in_w + 2 padding) pixels), `output` gets out_h x out_w pixels, activated.
  /// `weights` is pack_depthwise_channel_weights's at the block's first channel (row t of the taps, then the bias,
  /// `weight_stride` floats apart). 3 x 3, 5 x 5 and 7 x 7, strides 1 and 2 (depthwise_channel_blocks_apply).
  void (*depthwise)(const DepthwiseGeometry& geometry, const float* tile, const float* weights,
                    std::size_t weight_stride, Activation activation, float* output) = nullptr;
  /// A GEMM's rows of `pixels` output pixels (`ld` floats apart, a register of channels at `rows`) back into
  /// `planes` (<= lanes) consecutive channel planes of `pixels` floats: output = activation(rows + bias [+ residual,
  /// laid out as output, or null]). `staging` holds lanes * pixels + lanes floats; `rows` may be read up to a
  /// register of rows past `pixels`.
  void (*rows_to_planes)(const float* rows, std::size_t ld, int pixels, int planes, const float* bias,
                         const float* residual, Activation activation, float* staging, float* output) = nullptr;
};

ChannelBlockKernels generic_channel_block_kernels();
ChannelBlockKernels avx2_channel_block_kernels();
ChannelBlockKernels avx512_channel_block_kernels();
/// The set of the widest instruction set this CPU has (cpuid, once), or of `isa` (tests).
const ChannelBlockKernels& channel_block_kernels();
ChannelBlockKernels channel_block_kernels(CpuIsa isa);

}  // namespace corgy::blas
