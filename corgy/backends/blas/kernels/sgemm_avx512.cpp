// The sgemm micro-kernels for AVX-512F (16 floats per register, 32 registers). Compiled with -mavx512f -mfma;
// called only when cpuid reports AVX-512F (gemm_kernels()).

#include "corgy/backends/blas/kernels/channel_planes_pack.h"
#include "corgy/backends/blas/kernels/im2col_pack.h"
#include "corgy/backends/blas/kernels/sgemm_micro_kernel.h"
#include "corgy/backends/blas/kernels/simd_avx512.h"

namespace corgy::blas {

// 24 accumulators in each (27-29 of the 32 registers with the B row and the broadcast): 8 x 48 fits channel counts
// that are multiples of 8, 12 x 32 others, 28 x 16 maps of few pixels. 7 x 48 (21 accumulators) has pixels for rows
// and output channels in the lanes (channels_in_lanes_gemm.h), 14 x 32 (28) the same reading a convolution's taps,
// 14 x 16 (14) those of a grouped convolution's groups of 16 channels.
GemmKernelSet avx512_gemm_kernels() {
  return {{kernels::tile_kernels<kernels::Avx512, 8, 3>(CpuIsa::avx512, "avx512 8x48"),
           kernels::tile_kernels<kernels::Avx512, 12, 2>(CpuIsa::avx512, "avx512 12x32"),
           kernels::tile_kernels<kernels::Avx512, 28, 1>(CpuIsa::avx512, "avx512 28x16"),
           // 24 rows divide the channel counts of MobileNets and EfficientNets (96, 144, 192, 384, 576, 960, 1152)
           // that 28 does not, over pixel counts (196, 49) that 16 columns pad least.
           kernels::tile_kernels<kernels::Avx512, 24, 1>(CpuIsa::avx512, "avx512 24x16")},
          kernels::pack_im2col_row<kernels::Avx512>,
          kernels::pack_channel_planes<kernels::Avx512>,
          kernels::tile_kernels<kernels::Avx512, 7, 3>(CpuIsa::avx512, "avx512 7x48"),
          kernels::tile_kernels<kernels::Avx512, 14, 2>(CpuIsa::avx512, "avx512 14x32"),
          kernels::tile_kernels<kernels::Avx512, 14, 1>(CpuIsa::avx512, "avx512 14x16")};
}

}  // namespace corgy::blas
