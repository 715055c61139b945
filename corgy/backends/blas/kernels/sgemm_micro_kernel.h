// The sgemm micro-kernel, written once over a SIMD type and compiled per instruction set by the files that include
// it (sgemm_avx512.cpp, sgemm_avx2.cpp, sgemm_generic.cpp), each with its own compiler flags.
//
// Include this only from such a file, and use nothing there but intrinsics and this header: an inline function of
// a shared header (a std:: template, say) compiled with AVX-512 flags could be the copy the linker keeps for the
// whole library, and then run on a CPU without AVX-512.
#pragma once

#include <cstddef>
#include <cstdint>

#include "corgy/backends/blas/gemm_kernels.h"
#include "corgy/backends/blas/kernels/simd_activation.h"

namespace corgy::blas::kernels {
namespace {

/// The tile of C lives in MR x NV registers of Simd::lanes floats: for each step of the depth, NV loads of the B
/// panel's row and MR broadcasts of the A panel's column feed MR x NV independent FMAs. B's rows are nr floats
/// apart (a packed panel), or, with kRows, each where `row_offsets` says (rows read in place from an input).
template <class Simd, int MR, int NV, bool kRows>
void micro_kernel_body(std::size_t depth, const float* a, const float* b, const std::int32_t* row_offsets, float* c,
                       std::size_t ldc, bool accumulate, const TileEpilogue* epilogue) {
  using Reg = typename Simd::Reg;
  constexpr int lanes = Simd::lanes;
  constexpr int nr = NV * lanes;
  Reg acc[MR][NV];
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) acc[i][j] = Simd::zero();
  }
  // C's tile (and the residual added to it) is touched only after the depth loop, usually in lines no cache holds
  // (a 56x56 layer's output is megabytes): asking for them now overlaps their misses with the loop instead of
  // stalling the stores at its end.
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) __builtin_prefetch(c + i * ldc + j * lanes, 1, 3);
  }
  if (epilogue && epilogue->residual) {
    for (int i = 0; i < MR; ++i) {
      for (int j = 0; j < NV; ++j) __builtin_prefetch(epilogue->residual + i * epilogue->residual_ld + j * lanes, 0, 3);
    }
  }
  for (std::size_t k = 0; k < depth; ++k) {
    // A (the weights) streams from memory in the GEMMs of 13x13 layers: ask for it ~40 steps (about a DRAM latency
    // of work) ahead; the hardware prefetcher alone sustained ~12 of the 35 GB/s one core reads.
    __builtin_prefetch(a + 40 * MR, 0, 3);
    const float* b_row = kRows ? b + row_offsets[k] : b;
    Reg row[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) row[j] = Simd::load(b_row + j * lanes);
#pragma GCC unroll 32
    for (int i = 0; i < MR; ++i) {
      const Reg column = Simd::broadcast(a + i);
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[i][j] = Simd::fmadd(column, row[j], acc[i][j]);
    }
    a += MR;
    if (!kRows) b += nr;
  }
  if (accumulate) {
#pragma GCC unroll 32
    for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[i][j] = Simd::add(acc[i][j], Simd::load(c + i * ldc + j * lanes));
    }
  }
  if (epilogue) {
    if (epilogue->residual) {
#pragma GCC unroll 32
      for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 8
        for (int j = 0; j < NV; ++j) {
          acc[i][j] = Simd::add(acc[i][j], Simd::load(epilogue->residual + i * epilogue->residual_ld + j * lanes));
        }
      }
    }
    if (epilogue->bias) {
#pragma GCC unroll 32
      for (int i = 0; i < MR; ++i) {
        const Reg bias = Simd::broadcast(epilogue->bias + i);
#pragma GCC unroll 8
        for (int j = 0; j < NV; ++j) acc[i][j] = Simd::add(acc[i][j], bias);
      }
    }
    with_simd_activation(epilogue->activation, [&]<ActivationKind kind>() {
      if constexpr (kind != ActivationKind::none) {
        const Reg slope = Simd::broadcast(&epilogue->slope);
#pragma GCC unroll 32
        for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 8
          for (int j = 0; j < NV; ++j) acc[i][j] = activate<Simd, kind>(acc[i][j], slope);
        }
      }
    });
  }
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) Simd::store(c + i * ldc + j * lanes, acc[i][j]);
  }
}

template <class Simd, int MR, int NV>
void micro_kernel(std::size_t depth, const float* a, const float* b, float* c, std::size_t ldc, bool accumulate,
                  const TileEpilogue* epilogue) {
  micro_kernel_body<Simd, MR, NV, false>(depth, a, b, nullptr, c, ldc, accumulate, epilogue);
}

template <class Simd, int MR, int NV>
void micro_kernel_rows(std::size_t depth, const float* a, const float* b, const std::int32_t* row_offsets, float* c,
                       std::size_t ldc, bool accumulate, const TileEpilogue* epilogue) {
  micro_kernel_body<Simd, MR, NV, true>(depth, a, b, row_offsets, c, ldc, accumulate, epilogue);
}

/// The tile with A read in place (gemm_kernels.h's MicroKernelTaps): at each depth step, MR broadcasts kStep floats
/// apart from where the step's offset points, so that a convolution's taps are read from its padded input as they
/// are, with no im2col panel written and read back.
template <class Simd, int MR, int NV, int kStep>
void micro_kernel_taps(std::size_t depth, const float* a, const std::int32_t* offsets, const float* b, float* c,
                       std::size_t ldc, bool accumulate) {
  using Reg = typename Simd::Reg;
  constexpr int lanes = Simd::lanes;
  constexpr int nr = NV * lanes;
  Reg acc[MR][NV];
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) acc[i][j] = Simd::zero();
  }
  for (std::size_t k = 0; k < depth; ++k) {
    const float* a_k = a + offsets[k];
    Reg row[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) row[j] = Simd::load(b + j * lanes);
#pragma GCC unroll 32
    for (int i = 0; i < MR; ++i) {
      const Reg column = Simd::broadcast(a_k + i * kStep);
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[i][j] = Simd::fmadd(column, row[j], acc[i][j]);
    }
    b += nr;
  }
  if (accumulate) {
#pragma GCC unroll 32
    for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[i][j] = Simd::add(acc[i][j], Simd::load(c + i * ldc + j * lanes));
    }
  }
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) Simd::store(c + i * ldc + j * lanes, acc[i][j]);
  }
}

/// Fills kernel.narrower with the MR x (R registers) tiles, R down to 1.
template <class Simd, int MR, int R>
void add_narrower_tiles(GemmMicroKernel& kernel) {
  if constexpr (R >= 1) {
    kernel.narrower[R - 1] = {R * Simd::lanes, micro_kernel<Simd, MR, R>, micro_kernel_rows<Simd, MR, R>};
    add_narrower_tiles<Simd, MR, R - 1>(kernel);
  }
}

/// The set's entry for the MR x (NV registers) tile: its kernels over packed B, B rows in place, A in place (a
/// convolution's taps at steps 1 and 2, a channel-block tile's pixels a register apart), and its narrower tiles.
template <class Simd, int MR, int NV>
GemmMicroKernel tile_kernels(CpuIsa isa, const char* name) {
  static_assert(NV - 1 <= static_cast<int>(sizeof(GemmMicroKernel::narrower) / sizeof(GemmMicroKernel::Narrower)));
  GemmMicroKernel kernel{isa,
                         MR,
                         NV * Simd::lanes,
                         micro_kernel<Simd, MR, NV>,
                         name,
                         micro_kernel_rows<Simd, MR, NV>,
                         {micro_kernel_taps<Simd, MR, NV, 1>, micro_kernel_taps<Simd, MR, NV, 2>},
                         micro_kernel_taps<Simd, MR, NV, Simd::lanes>};
  add_narrower_tiles<Simd, MR, NV - 1>(kernel);
  return kernel;
}

}  // namespace
}  // namespace corgy::blas::kernels
