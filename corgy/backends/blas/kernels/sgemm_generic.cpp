// The sgemm micro-kernels in plain C++ (SSE2, the x86-64 baseline): for CPUs without AVX2, and the reference the
// wider kernels' tests agree with.

#include "corgy/backends/blas/kernels/channel_planes_pack.h"
#include "corgy/backends/blas/kernels/im2col_pack.h"
#include "corgy/backends/blas/kernels/sgemm_micro_kernel.h"
#include "corgy/backends/blas/kernels/simd_sse2.h"

namespace corgy::blas {

// 8 accumulators of the 16 registers.
GemmKernelSet generic_gemm_kernels() {
  return {{kernels::tile_kernels<kernels::Sse2, 2, 4>(CpuIsa::generic, "sse2 2x16"),
           kernels::tile_kernels<kernels::Sse2, 4, 2>(CpuIsa::generic, "sse2 4x8"),
           kernels::tile_kernels<kernels::Sse2, 8, 1>(CpuIsa::generic, "sse2 8x4"),
           {}},
          kernels::pack_im2col_row<kernels::Sse2>,
          kernels::pack_channel_planes<kernels::Sse2>,
          {},
          {}};
}

}  // namespace corgy::blas
