// The channel-block depthwise kernel and the channel-block residual kernels (channel_block_kernels.h) for AVX-512F (see
// depthwise_channel_block_kernel.h); compiled for that instruction set only.
#include "corgy/backends/blas/kernels/channel_block_residual_kernel.h"
#include "corgy/backends/blas/kernels/depthwise_channel_block_kernel.h"
#include "corgy/backends/blas/kernels/simd_avx512.h"

namespace corgy::blas {

DepthwiseChannelBlockKernel avx512_depthwise_channel_block_kernel() {
  return kernels::depthwise_channel_blocks<kernels::Avx512>;
}

ChannelBlockKernels avx512_channel_block_kernels() { return kernels::channel_block_kernel_set<kernels::Avx512>(); }

}  // namespace corgy::blas
