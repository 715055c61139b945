// The sgemm micro-kernels for AVX2 + FMA (8 floats per register, 16 registers). Compiled with -mavx2 -mfma; called
// only when cpuid reports both (gemm_kernels()).

#include "corgy/backends/blas/kernels/channel_planes_pack.h"
#include "corgy/backends/blas/kernels/im2col_pack.h"
#include "corgy/backends/blas/kernels/sgemm_micro_kernel.h"
#include "corgy/backends/blas/kernels/simd_avx2.h"

namespace corgy::blas {

// 12 accumulators in each (15 of the 16 registers with the B row and the broadcast): 6 x 16 is Haswell's classic,
// 4 x 24 fits channel counts that are multiples of 4, 12 x 8 maps of few pixels.
GemmKernelSet avx2_gemm_kernels() {
  return {{kernels::tile_kernels<kernels::Avx2, 4, 3>(CpuIsa::avx2, "avx2 4x24"),
           kernels::tile_kernels<kernels::Avx2, 6, 2>(CpuIsa::avx2, "avx2 6x16"),
           kernels::tile_kernels<kernels::Avx2, 12, 1>(CpuIsa::avx2, "avx2 12x8"),
           {}},
          kernels::pack_im2col_row<kernels::Avx2>,
          kernels::pack_channel_planes<kernels::Avx2>,
          {},
          {}};
}

}  // namespace corgy::blas
