// Winograd F(2x2, 3x3), F(4x4, 3x3) and F(2x2, 5x5)'s transforms for SSE2 (any x86-64 CPU) (see winograd_transforms.h);
// compiled for that instruction set only.
#include "corgy/backends/blas/kernels/simd_sse2.h"
#include "corgy/backends/blas/kernels/winograd_transforms.h"

namespace corgy::blas {

WinogradKernelSet generic_winograd_kernels() {
  return {
      {{kernels::winograd_input<kernels::Sse2, kernels::F2x2>, kernels::winograd_output<kernels::Sse2, kernels::F2x2>},
       {kernels::winograd_input<kernels::Sse2, kernels::F4x4>, kernels::winograd_output<kernels::Sse2, kernels::F4x4>},
       {kernels::winograd_input<kernels::Sse2, kernels::F2x2Kernel5>,
        kernels::winograd_output<kernels::Sse2, kernels::F2x2Kernel5>}}};
}

}  // namespace corgy::blas
