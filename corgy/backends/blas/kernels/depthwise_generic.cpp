// The depthwise convolution kernel for SSE2, the x86-64 baseline (see depthwise_kernel.h); compiled for that
// instruction set only.
#include "corgy/backends/blas/kernels/depthwise_kernel.h"
#include "corgy/backends/blas/kernels/simd_sse2.h"

namespace corgy::blas {

DepthwiseKernel generic_depthwise_kernel(DepthwisePath path) {
  return kernels::depthwise_kernel_for<kernels::Sse2>(path);
}

}  // namespace corgy::blas
