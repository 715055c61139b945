// The depthwise convolution kernel for SSE2, the x86-64 baseline (see depthwise_kernel.h); compiled for that
// instruction set only.
#include "corgy/backends/blas/kernels/depthwise_kernel.h"
#include "corgy/backends/blas/kernels/simd_sse2.h"

namespace corgy::blas {

DepthwiseKernel generic_depthwise_kernel() { return kernels::depthwise_plane<kernels::Sse2>; }

}  // namespace corgy::blas
