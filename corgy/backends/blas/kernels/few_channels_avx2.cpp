// The direct convolution kernel for few input channels for AVX2 + FMA (see few_channels_kernel.h); compiled for that
// instruction set only.
#include "corgy/backends/blas/kernels/few_channels_kernel.h"
#include "corgy/backends/blas/kernels/simd_avx2.h"

namespace corgy::blas {

FewChannelsKernel avx2_few_channels_kernel() { return kernels::few_channels_kernel_for<kernels::Avx2>(); }

}  // namespace corgy::blas
