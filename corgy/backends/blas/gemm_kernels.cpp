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
/// than 8x48) took 2.33 ms on it against 2.23 on 8x48 at two threads (noisy: 1.9-2.5). (196-pixel maps, where it
/// pads 208 columns against 8x48's 240, now go to 8x48 with a narrower last tile: 192 + 16 columns.)
constexpr double kNarrowTileCost = 1.05;
/// The same for the columns of a narrower tile at a GEMM's end (GemmMicroKernel::narrower), by its registers (1, 2,
/// 3): it loads more per FMA (8x16: 9 loads for 8 FMAs, 8x32: 10 for 16, 8x48: 11 for 24). On L1 panels at depths 64
/// and 128 (conv_benchmark micro_kernel, AMD EPYC Zen 5) 8x16 ran at 0.70-0.83x 8x48's rate, 8x32 at 0.85-0.86x,
/// 12x16 at 0.70x 12x32's; AVX2's 4x8 at 0.57x 4x24's, 4x16 at 0.92x, 6x8 at 0.75x 6x16's.
constexpr double kNarrowerTileCost[] = {1.35, 1.15, 1.05};

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

namespace {

/// Floats per SIMD register of the kernels of `isa`.
int register_lanes(CpuIsa isa) { return isa == CpuIsa::avx512 ? 16 : isa == CpuIsa::avx2 ? 8 : 4; }

}  // namespace

bool one_register_wide(const GemmMicroKernel& kernel) { return kernel.nr < 2 * register_lanes(kernel.isa); }

std::optional<GemmMicroKernel> narrower_tile(const GemmMicroKernel& kernel, int columns) {
  for (const GemmMicroKernel::Narrower& narrower : kernel.narrower) {
    if (!narrower.run || narrower.nr < columns) continue;
    GemmMicroKernel tile;
    tile.isa = kernel.isa;
    tile.mr = kernel.mr;
    tile.nr = narrower.nr;
    tile.run = narrower.run;
    tile.name = kernel.name;
    tile.run_rows = narrower.run_rows;
    return tile;
  }
  return std::nullopt;
}

const GemmMicroKernel& kernel_for(const GemmKernelSet& set, int rows, int columns, bool narrower_tails) {
  const GemmMicroKernel* best = &set.kernels[0];
  double best_area = 0.0;
  for (const GemmMicroKernel& kernel : set.kernels) {
    if (!kernel.run) continue;
    const double padded_rows = (rows + kernel.mr - 1) / kernel.mr * kernel.mr;
    double padded_columns = (columns + kernel.nr - 1) / kernel.nr * kernel.nr;
    const int last = columns % kernel.nr;
    if (narrower_tails && last != 0) {
      if (const std::optional<GemmMicroKernel> tail = narrower_tile(kernel, last)) {
        const int registers = tail->nr / register_lanes(kernel.isa);
        padded_columns = columns - last + tail->nr * kNarrowerTileCost[registers - 1];
      }
    }
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
