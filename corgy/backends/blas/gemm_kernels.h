// The CPU kernels of the blas backend's own GEMM: one set per instruction set, compiled in its own file with that
// set's compiler flags (kernels/*_avx512.cpp, *_avx2.cpp, *_generic.cpp) and picked once from cpuid.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "corgy/activation.h"
#include "corgy/backends/cpu/cpu_features.h"

namespace corgy::blas {

/// What a micro-kernel applies to its tile before storing it, on the last block of the depth.
struct TileEpilogue {
  const float* bias = nullptr;  ///< one value per tile row (output channel), or null
  ActivationKind activation = ActivationKind::none;
  float slope = 0.0f;  ///< Activation::slope: leaky ReLU's slope, clipped ReLU's ceiling
  /// A tile of the same shape added before the bias and activation (a residual connection), rows residual_ld
  /// floats apart, or null.
  const float* residual = nullptr;
  std::size_t residual_ld = 0;
};

/// c[mr x nr] (+)= a_panel x b_panel, where a_panel holds `depth` columns of mr floats (packed A: row block,
/// k-major) and b_panel `depth` rows of nr floats (packed B). Rows of c are `ldc` floats apart. `accumulate` adds to
/// c's values, otherwise they are overwritten. `epilogue` (or null) is applied before the store.
using MicroKernel = void (*)(std::size_t depth, const float* a_panel, const float* b_panel, float* c, std::size_t ldc,
                             bool accumulate, const TileEpilogue* epilogue);

/// The same with B's row k at b_panel + row_offsets[k] instead of b_panel + k * nr: the rows of an input read in
/// place (conv_gemm.h's padded rows), no packing.
using MicroKernelRows = void (*)(std::size_t depth, const float* a_panel, const float* b_panel,
                                 const std::int32_t* row_offsets, float* c, std::size_t ldc, bool accumulate,
                                 const TileEpilogue* epilogue);

/// c[mr x nr] = a x b_panel with A read in place: row i of A at depth k is a[offsets[k] + i * step] (a convolution's
/// output pixels along a row, `step` its stride, reading the taps of a zero-padded input: channels_in_lanes_gemm.h),
/// no packing; `accumulate` adds to c's values, otherwise they are overwritten. No epilogue.
using MicroKernelTaps = void (*)(std::size_t depth, const float* a, const std::int32_t* offsets, const float* b_panel,
                                 float* c, std::size_t ldc, bool accumulate);

/// A micro-kernel and its tile: the GEMM driver packs A in panels of `mr` rows and B in panels of `nr` columns.
struct GemmMicroKernel {
  CpuIsa isa = CpuIsa::generic;
  int mr = 0;
  int nr = 0;
  MicroKernel run = nullptr;
  const char* name = "";
  MicroKernelRows run_rows = nullptr;
  /// The kernel with A read in place at steps 1 and 2 (run_taps[step - 1]); null where the set has none.
  MicroKernelTaps run_taps[2] = {nullptr, nullptr};
  /// The kernel with A read in place from channel blocks (channel_block_residual.h): row i at depth k is
  /// a[offsets[k] + i * lanes], pixel after pixel of a tile whose pixels hold a register of channels each.
  MicroKernelTaps run_blocked = nullptr;
  /// Tiles of the same rows (the same packed A) fewer registers wide, for the last columns of a GEMM that leaves
  /// fewer than nr (narrower_tile): narrower[r - 1] is the tile r registers wide, for r below this tile's registers;
  /// the entries past those have no `run`.
  struct Narrower {
    int nr = 0;
    MicroKernel run = nullptr;
    MicroKernelRows run_rows = nullptr;
  };
  Narrower narrower[3] = {};
};

/// One row (channel, ky, kx) of a convolution's column matrix, read from an input plane: output pixel (oy, ox) reads
/// plane[oy * stride + y_offset][ox * stride + x_offset], or 0 outside the height x width plane.
struct Im2colRow {
  const float* plane = nullptr;
  int height = 0;
  int width = 0;
  int y_offset = 0;
  int x_offset = 0;
  int stride = 1;
  int out_w = 0;
};

/// Writes `count` values of `row` from output pixel `pixel` on into packed B panels of nr columns: value j goes to
/// out[(j / nr) * panel_stride + j % nr].
using Im2colRowPacker = void (*)(const Im2colRow& row, int pixel, int count, int nr, std::size_t panel_stride,
                                 float* out);

/// One row of B read from channel planes (pointwise_batch_gemm.h): the channel's plane in image 0, the floats from
/// one image's plane to the next's, and the affine applied while packing (activation(x * scale + shift)), whose
/// scale image n multiplies by image_scale[n * image_scale_stride] where image_scale is given (a squeeze-and-
/// excitation's gates).
struct PlaneRow {
  const float* plane = nullptr;
  std::size_t image_stride = 0;
  float scale = 1.0f;
  float shift = 0.0f;
  const float* image_scale = nullptr;
  std::size_t image_scale_stride = 0;
};

/// Packs B rows [0, kc) of `rows` at columns [n0, n0 + valid) (column j: pixel j % pixels of image j / pixels) into
/// panels of nr columns (panel_stride floats apart; row k of a panel at k * nr), the last panel's columns past
/// `valid` zero; each value activation(x * scale + shift) (`slope`: Activation::slope) with `affine`, else copied.
using PlaneRowsPacker = void (*)(const PlaneRow* rows, int kc, int pixels, int n0, int valid, int nr,
                                 std::size_t panel_stride, bool affine, ActivationKind activation, float slope,
                                 float* out);

/// The kernels of each instruction set (defined in kernels/sgemm_<isa>.cpp), with tiles of different shapes: a GEMM
/// uses the one that wastes least on its row and column counts (A and B are padded to whole panels). A set with fewer
/// tiles leaves the last ones empty (`run` null).
struct GemmKernelSet {
  static constexpr int size = 4;
  GemmMicroKernel kernels[size];
  Im2colRowPacker pack_im2col_row = nullptr;
  PlaneRowsPacker pack_channel_planes = nullptr;
  /// A tile of 7 rows, for GEMMs whose rows are output pixels (channels_in_lanes_gemm.h): 7 divides the pixel counts
  /// of 7x7, 14x14 and 28x28 maps, so their tiles have no padding rows. `run` is null where the set has none (AVX2's
  /// and SSE2's 16 registers hold no 7-row tile wide enough to pay).
  GemmMicroKernel seven_rows{};
  /// A tile of 14 rows two registers wide, for the same GEMMs where they read a convolution's taps in place, a tile
  /// per stretch of an output row: 14 divides the rows of 14x14, 28x28 and 56x56 maps, and 32 the channel counts
  /// 48 does not (128, 256: ResNet-50's 3x3 / 2 layers of 128 and 256 channels 2.47 -> 2.25 and 2.40 -> 2.19 ms
  /// against 7 x 48, whose last panel is a third empty). `run` is null where the set has none.
  GemmMicroKernel fourteen_rows{};
  /// A tile of 14 rows one register wide, for the same GEMMs of grouped convolutions: a group of one register's
  /// output channels (ResNeXt's 512 and 1024 in 32 groups of 16 and 32 on AVX-512) fills its lanes, which wider tiles
  /// pad, on the short output rows (14, 7) that the one-register tiles' 24 and 28 rows pad. `run` is null where the
  /// set has none (AVX2's two-register tiles are 16 channels wide).
  GemmMicroKernel fourteen_rows_narrow{};
};
GemmKernelSet generic_gemm_kernels();
GemmKernelSet avx2_gemm_kernels();
GemmKernelSet avx512_gemm_kernels();

/// The set for the widest instruction set this CPU has (cpuid, once), or for `isa` when asked (tests, benchmarks).
const GemmKernelSet& gemm_kernels();
const GemmKernelSet& gemm_kernels(CpuIsa isa);

/// True for a tile one SIMD register wide (AVX-512's 28x16, 24x16, 14x16; AVX2's 12x8; SSE2's 8x4): it broadcasts an
/// A value for every register of FMAs, and runs slower than the wider tiles.
bool one_register_wide(const GemmMicroKernel& kernel);

/// The tile for the last `columns` columns of a GEMM by `kernel` (fewer than kernel.nr): the narrowest of its
/// narrower tiles that holds them, as a kernel of its own (run and run_rows only; the name is kernel's), or nothing
/// where none of them does. A 14x14 map's 196 pixels are four panels of 48 columns and four columns: in a 16-column
/// tile those pad 12 columns, not the 44 of a fifth 48-column panel.
std::optional<GemmMicroKernel> narrower_tile(const GemmMicroKernel& kernel, int columns);

/// The kernel of `set` that computes the fewest padded elements for a GEMM of `rows` x `columns` (its tiles cover
/// ceil(rows / mr) * mr rows; the columns by whole tiles of nr and, with `narrower_tails`, the last ones by the
/// narrower tile that holds them, whose elements count more: it loads more per FMA); the first such kernel on a tie.
/// `narrower_tails`: false where B comes packed in panels of nr (Winograd's tiles), which narrower tiles cannot read.
const GemmMicroKernel& kernel_for(const GemmKernelSet& set, int rows, int columns, bool narrower_tails = true);

}  // namespace corgy::blas
