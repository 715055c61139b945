// The bias + activation pass for SSE2, the x86-64 baseline (see activation_kernel.h); compiled for that instruction set
// only.
#include "corgy/backends/blas/kernels/activation_kernel.h"
#include "corgy/backends/blas/kernels/simd_sse2.h"

namespace corgy::blas {

BiasActivationKernel generic_bias_activation_kernel() { return kernels::bias_activate<kernels::Sse2>; }

}  // namespace corgy::blas
