// The activation passes for SSE2, the x86-64 baseline (see activation_kernel.h); compiled for that instruction set
// only.
#include "corgy/backends/blas/kernels/activation_kernel.h"
#include "corgy/backends/blas/kernels/simd_sse2.h"

namespace corgy::blas {

ActivationKernelSet generic_activation_kernels() {
  return {kernels::bias_activate<kernels::Sse2>, kernels::add_activate<kernels::Sse2>};
}

}  // namespace corgy::blas
