#include "corgy/backends/blas/gemm_kernels.h"

#include <fmt/format.h>

#include "corgy/backends/blas/winograd_kernels.h"
#include "corgy/error.h"

namespace corgy::blas {

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

const GemmMicroKernel& kernel_for(const GemmKernelSet& set, int rows, int columns) {
  const GemmMicroKernel* best = &set.kernels[0];
  double best_area = 0.0;
  for (const GemmMicroKernel& kernel : set.kernels) {
    if (!kernel.run) continue;
    const double padded_rows = (rows + kernel.mr - 1) / kernel.mr * kernel.mr;
    const double padded_columns = (columns + kernel.nr - 1) / kernel.nr * kernel.nr;
    const double area = padded_rows * padded_columns;
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
