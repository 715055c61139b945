// The sgemm micro-kernels in plain C++ (SSE2, the x86-64 baseline): for CPUs without AVX2, and the reference the
// wider kernels' tests agree with.

#include "corgy/backends/blas/kernels/channel_planes_pack.h"
#include "corgy/backends/blas/kernels/im2col_pack.h"
#include "corgy/backends/blas/kernels/sgemm_micro_kernel.h"
#include "corgy/backends/blas/kernels/simd_sse2.h"

namespace corgy::blas {

// 8 accumulators of the 16 registers.
GemmKernelSet generic_gemm_kernels() {
  return {{{CpuIsa::generic, 2, 16, kernels::micro_kernel<kernels::Sse2, 2, 4>, "sse2 2x16",
            kernels::micro_kernel_rows<kernels::Sse2, 2, 4>},
           {CpuIsa::generic, 4, 8, kernels::micro_kernel<kernels::Sse2, 4, 2>, "sse2 4x8",
            kernels::micro_kernel_rows<kernels::Sse2, 4, 2>},
           {CpuIsa::generic, 8, 4, kernels::micro_kernel<kernels::Sse2, 8, 1>, "sse2 8x4",
            kernels::micro_kernel_rows<kernels::Sse2, 8, 1>}},
          kernels::pack_im2col_row<kernels::Sse2>,
          kernels::pack_channel_planes<kernels::Sse2>,
          {}};
}

}  // namespace corgy::blas
