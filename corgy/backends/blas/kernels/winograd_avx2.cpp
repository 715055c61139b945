// Winograd F(2x2, 3x3), F(4x4, 3x3) and F(2x2, 5x5)'s transforms for AVX2 + FMA (see winograd_transforms.h); compiled
// for that instruction set only.
#include "corgy/backends/blas/kernels/simd_avx2.h"
#include "corgy/backends/blas/kernels/winograd_transforms.h"

namespace corgy::blas {

WinogradKernelSet avx2_winograd_kernels() {
  return {
      {{kernels::winograd_input<kernels::Avx2, kernels::F2x2>, kernels::winograd_output<kernels::Avx2, kernels::F2x2>},
       {kernels::winograd_input<kernels::Avx2, kernels::F4x4>, kernels::winograd_output<kernels::Avx2, kernels::F4x4>},
       {kernels::winograd_input<kernels::Avx2, kernels::F2x2Kernel5>,
        kernels::winograd_output<kernels::Avx2, kernels::F2x2Kernel5>}}};
}

}  // namespace corgy::blas
