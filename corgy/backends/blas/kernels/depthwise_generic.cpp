// The depthwise convolution kernel for SSE2, the x86-64 baseline (see depthwise_kernel.h); compiled for that
// instruction set only.
#include "corgy/backends/blas/kernels/depthwise_kernel.h"
#include "corgy/backends/blas/kernels/simd_sse2.h"

namespace corgy::blas {

// Every path is the extended rows here: the row and direct blocks were measured on AVX-512 only, CPUs without AVX2
// are rare, and their instances (every block size and activation, fully unrolled) made this the slowest file of the
// build (56 s of CI's release build).
DepthwiseKernel generic_depthwise_kernel(DepthwisePath /*path*/) {
  return kernels::depthwise_plane_extended<kernels::Sse2>;
}

}  // namespace corgy::blas
