// The depthwise convolution kernel for AVX2 + FMA (see depthwise_kernel.h); compiled for that instruction set only.
#include "corgy/backends/blas/kernels/depthwise_kernel.h"
#include "corgy/backends/blas/kernels/simd_avx2.h"

namespace corgy::blas {

DepthwiseKernel avx2_depthwise_kernel(DepthwisePath path) { return kernels::depthwise_kernel_for<kernels::Avx2>(path); }

}  // namespace corgy::blas
