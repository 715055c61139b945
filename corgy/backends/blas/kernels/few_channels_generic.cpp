// The direct convolution kernel for few input channels for SSE2, the x86-64 baseline (see few_channels_kernel.h);
// compiled for that instruction set only.
#include "corgy/backends/blas/kernels/few_channels_kernel.h"
#include "corgy/backends/blas/kernels/simd_sse2.h"

namespace corgy::blas {

FewChannelsKernel generic_few_channels_kernel() { return kernels::few_channels_kernel_for<kernels::Sse2>(); }

}  // namespace corgy::blas
