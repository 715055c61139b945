// The channel-block depthwise kernel for AVX2 + FMA (see depthwise_channel_block_kernel.h); compiled for that
// instruction set only.
#include "corgy/backends/blas/kernels/depthwise_channel_block_kernel.h"
#include "corgy/backends/blas/kernels/simd_avx2.h"

namespace corgy::blas {

DepthwiseChannelBlockKernel avx2_depthwise_channel_block_kernel() {
  return kernels::depthwise_channel_blocks<kernels::Avx2>;
}

}  // namespace corgy::blas
