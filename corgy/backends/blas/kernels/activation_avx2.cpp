// The bias + activation pass for AVX2 + FMA (see activation_kernel.h); compiled for that instruction set only.
#include "corgy/backends/blas/kernels/activation_kernel.h"
#include "corgy/backends/blas/kernels/simd_avx2.h"

namespace corgy::blas {

BiasActivationKernel avx2_bias_activation_kernel() { return kernels::bias_activate<kernels::Avx2>; }

}  // namespace corgy::blas
