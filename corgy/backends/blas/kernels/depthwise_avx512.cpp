// The depthwise convolution kernel for AVX-512F (see depthwise_kernel.h); compiled for that instruction set only.
#include "corgy/backends/blas/kernels/depthwise_kernel.h"
#include "corgy/backends/blas/kernels/simd_avx512.h"

namespace corgy::blas {

DepthwiseKernel avx512_depthwise_kernel(DepthwisePath path) {
  return kernels::depthwise_kernel_for<kernels::Avx512>(path);
}

}  // namespace corgy::blas
