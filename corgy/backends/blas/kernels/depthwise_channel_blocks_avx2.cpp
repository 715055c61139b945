// The channel-block depthwise kernel and the channel-block residual kernels (channel_block_kernels.h) for AVX2 + FMA
// (see depthwise_channel_block_kernel.h); compiled for that instruction set only.
#include "corgy/backends/blas/kernels/channel_block_residual_kernel.h"
#include "corgy/backends/blas/kernels/depthwise_channel_block_kernel.h"
#include "corgy/backends/blas/kernels/simd_avx2.h"

namespace corgy::blas {

DepthwiseChannelBlockKernel avx2_depthwise_channel_block_kernel() {
  return kernels::depthwise_channel_blocks<kernels::Avx2>;
}

ChannelBlockKernels avx2_channel_block_kernels() { return kernels::channel_block_kernel_set<kernels::Avx2>(); }

}  // namespace corgy::blas
