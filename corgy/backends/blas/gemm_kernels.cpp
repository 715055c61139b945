#include "corgy/backends/blas/gemm_kernels.h"

#include <fmt/format.h>

#include "corgy/backends/blas/winograd_kernels.h"
#include "corgy/error.h"

namespace corgy::blas {

namespace {

/// The padded work of a tile one register wide (avx512 24x16, 28x16), counted up by this against the wider tiles':
/// it broadcasts an A value for every register of FMAs, and runs at 0.88-0.90x the 8x48 tile's rate on L1 panels
/// (conv_benchmark micro_kernel, depths 64 and 128, AMD EPYC; AVX2's 0.84x). Enough to tip only near ties, where
/// the narrow tile pads a few percent less: ResNeXt-50's 28x28 512 -> 256 pointwise layers (24x16: 1% less padding
/// than 8x48) took 2.33 ms on it against 2.23 on 8x48 at two threads (noisy: 1.9-2.5). Where it pads much less
/// (196-pixel maps: 208 columns against 224) it is still the choice.
constexpr double kNarrowTileCost = 1.05;

}  // namespace

const GemmKernelSet& gemm_kernels(CpuIsa isa) {
  if (!cpu_has(isa)) throw Error(fmt::format("blas: this CPU cannot run the {} GEMM kernels", isa_name(isa)));
  static const GemmKernelSet generic = generic_gemm_kernels();
  static const GemmKernelSet avx2 = avx2_gemm_kernels();
  static const GemmKernelSet avx512 = avx512_gemm_kernels();
  switch (isa) {
    case CpuIsa::avx512: return avx512;
    case CpuIsa::avx2: return avx2;
    case CpuIsa::generic: break;
  }
  return generic;
}

const WinogradKernelSet& winograd_kernels(CpuIsa isa) {
  if (!cpu_has(isa)) throw Error(fmt::format("blas: this CPU cannot run the {} Winograd kernels", isa_name(isa)));
  static const WinogradKernelSet generic = generic_winograd_kernels();
  static const WinogradKernelSet avx2 = avx2_winograd_kernels();
  static const WinogradKernelSet avx512 = avx512_winograd_kernels();
  switch (isa) {
    case CpuIsa::avx512: return avx512;
    case CpuIsa::avx2: return avx2;
    case CpuIsa::generic: break;
  }
  return generic;
}

bool one_register_wide(const GemmMicroKernel& kernel) {
  const int lanes = kernel.isa == CpuIsa::avx512 ? 16 : kernel.isa == CpuIsa::avx2 ? 8 : 4;
  return kernel.nr < 2 * lanes;
}

const GemmMicroKernel& kernel_for(const GemmKernelSet& set, int rows, int columns) {
  const GemmMicroKernel* best = &set.kernels[0];
  double best_area = 0.0;
  for (const GemmMicroKernel& kernel : set.kernels) {
    if (!kernel.run) continue;
    const double padded_rows = (rows + kernel.mr - 1) / kernel.mr * kernel.mr;
    const double padded_columns = (columns + kernel.nr - 1) / kernel.nr * kernel.nr;
    const double area = padded_rows * padded_columns * (one_register_wide(kernel) ? kNarrowTileCost : 1.0);
    if (best_area == 0.0 || area < best_area) {
      best = &kernel;
      best_area = area;
    }
  }
  return *best;
}

const GemmKernelSet& gemm_kernels() {
  static const GemmKernelSet& best = gemm_kernels(widest_cpu_isa());
  return best;
}

}  // namespace corgy::blas
