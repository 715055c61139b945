// The depthwise convolution kernel for AVX-512F (see depthwise_kernel.h); compiled for that instruction set only.
#include "corgy/backends/blas/kernels/depthwise_kernel.h"
#include "corgy/backends/blas/kernels/simd_avx512.h"

namespace corgy::blas {

DepthwiseKernel avx512_depthwise_kernel() { return kernels::depthwise_plane<kernels::Avx512>; }

}  // namespace corgy::blas
