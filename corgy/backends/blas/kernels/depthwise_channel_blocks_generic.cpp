// The channel-block depthwise kernel and the channel-block residual kernels (channel_block_kernels.h) for SSE2, the
// x86-64 baseline (see depthwise_channel_block_kernel.h); compiled for that instruction set only.
#include "corgy/backends/blas/kernels/channel_block_residual_kernel.h"
#include "corgy/backends/blas/kernels/depthwise_channel_block_kernel.h"
#include "corgy/backends/blas/kernels/simd_sse2.h"

namespace corgy::blas {

DepthwiseChannelBlockKernel generic_depthwise_channel_block_kernel() {
  return kernels::depthwise_channel_blocks<kernels::Sse2>;
}

ChannelBlockKernels generic_channel_block_kernels() { return kernels::channel_block_kernel_set<kernels::Sse2>(); }

}  // namespace corgy::blas
