// The activation passes for AVX2 + FMA (see activation_kernel.h); compiled for that instruction set only.
#include "corgy/backends/blas/kernels/activation_kernel.h"
#include "corgy/backends/blas/kernels/simd_avx2.h"

namespace corgy::blas {

ActivationKernelSet avx2_activation_kernels() {
  return {kernels::bias_activate<kernels::Avx2>, kernels::add_activate<kernels::Avx2>};
}

}  // namespace corgy::blas
