// The activation passes for AVX-512F (see activation_kernel.h); compiled for that instruction set only.
#include "corgy/backends/blas/kernels/activation_kernel.h"
#include "corgy/backends/blas/kernels/simd_avx512.h"

namespace corgy::blas {

ActivationKernelSet avx512_activation_kernels() {
  return {kernels::bias_activate<kernels::Avx512>, kernels::add_activate<kernels::Avx512>};
}

}  // namespace corgy::blas
