// The channel-block depthwise kernel for AVX-512F (see depthwise_channel_block_kernel.h); compiled for that instruction
// set only.
#include "corgy/backends/blas/kernels/depthwise_channel_block_kernel.h"
#include "corgy/backends/blas/kernels/simd_avx512.h"

namespace corgy::blas {

DepthwiseChannelBlockKernel avx512_depthwise_channel_block_kernel() {
  return kernels::depthwise_channel_blocks<kernels::Avx512>;
}

}  // namespace corgy::blas
