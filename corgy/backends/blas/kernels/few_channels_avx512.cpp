// The direct convolution kernel for few input channels for AVX-512F (see few_channels_kernel.h); compiled for that
// instruction set only.
#include "corgy/backends/blas/kernels/few_channels_kernel.h"
#include "corgy/backends/blas/kernels/simd_avx512.h"

namespace corgy::blas {

FewChannelsKernel avx512_few_channels_kernel() { return kernels::few_channels_kernel_for<kernels::Avx512>(); }

}  // namespace corgy::blas
