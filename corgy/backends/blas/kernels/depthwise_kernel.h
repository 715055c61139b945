// The depthwise convolution of one plane (depthwise_kernels.h), written once over a SIMD type and compiled per
// instruction set by kernels/depthwise_<isa>.cpp (the rules of sgemm_micro_kernel.h apply: intrinsics and this
// header only).
#pragma once

#include <cstddef>
#include <cstdint>

#include "corgy/backends/blas/depthwise_kernels.h"
#include "corgy/backends/blas/kernels/simd_activation.h"

namespace corgy::blas::kernels {
namespace {

/// Phase columns [begin, end) of phase rx of one padded row: column j is input column j * stride + rx - padding, zero
/// outside the input row `source` (null for a row of padding).
inline void fill_phase_columns(const DepthwiseGeometry& g, const float* source, int rx, int begin, int end,
                               float* row) {
  for (int j = begin; j < end; ++j) {
    const int x = j * g.stride + rx - g.padding;
    row[j] = source && x >= 0 && x < g.in_w ? source[x] : 0.0f;
  }
}

/// Copies `input` (in_h x in_w) into the stride x stride zero-padded phase planes of `g` at `phases`: at strides 1
/// and 2 a register at a time, the padding by masked loads (at stride 2 a pair of registers split into the two
/// column phases by permutes); at larger strides one value at a time.
template <class Simd>
void fill_phases(const DepthwiseGeometry& g, const float* input, float* phases) {
  const int s = g.stride;
  const std::size_t phase_size = static_cast<std::size_t>(g.phase_h) * g.phase_w;
  // Padded rows in order (pad_top of them above the input), so that the input is read front to back, one stream the
  // prefetcher follows (the phases' rows interleave: padded row r is row r / s of the phases of row phase r % s).
  for (int r = 0; r < s * g.phase_h; ++r) {
    const int ry = r % s;
    const int i = r / s;
    const int y = r - g.pad_top;
    const float* source = y >= 0 && y < g.in_h ? input + static_cast<std::size_t>(y) * g.in_w : nullptr;
    // The input row 8 ahead, asked for now: a plane of an early layer streams from memory, and the hardware
    // prefetcher alone let the copy wait for it (the layer's copy ran at a third of the memory's rate).
    if (y + 8 >= 0 && y + 8 < g.in_h) {
      const char* ahead = reinterpret_cast<const char*>(input + static_cast<std::size_t>(y + 8) * g.in_w);
      for (int byte = 0; byte < g.in_w * 4; byte += 64) __builtin_prefetch(ahead + byte, 0, 3);
    }
    float* row0 = phases + static_cast<std::size_t>(ry * s) * phase_size + static_cast<std::size_t>(i) * g.phase_w;
    if (s == 1) {  // one phase: the row with its padding, by masked loads
      if (source) {
        Simd::copy_padded(source, -g.padding, g.phase_w, g.in_w, row0);
      } else {
        Simd::fill_zero(row0, g.phase_w);
      }
      continue;
    }
    if (s == 2) {  // two column phases of the row at once, by masked loads and register permutes
      float* row1 = row0 + phase_size;
      if (source) {
        Simd::copy_padded_deinterleaved(source, -g.padding, g.phase_w, g.in_w, row0, row1);
      } else {
        Simd::fill_zero(row0, g.phase_w);
        Simd::fill_zero(row1, g.phase_w);
      }
      continue;
    }
    for (int rx = 0; rx < s; ++rx) {
      fill_phase_columns(g, source, rx, 0, g.phase_w, row0 + static_cast<std::size_t>(rx) * phase_size);
    }
  }
}

/// Registers [q, q + kCount * lanes) of an extended block: out[q + i] = activation(bias + sum over taps of weight[t] *
/// phases[offsets[t] + q + i]). kTaps is the tap count when known at compile time (9, 25), 0 otherwise. The
/// kCount accumulators are independent chains of multiply-adds, which keep the FMA units busy (each has a latency
/// of several cycles), and share each weight's broadcast.
template <class Simd, int kTaps, ActivationKind kind, int kCount>
void depthwise_registers(const float* phases, const std::int32_t* offsets, int taps, const float* weights,
                         typename Simd::Reg bias, typename Simd::Reg slope, int q, float* out) {
  using Reg = typename Simd::Reg;
  constexpr int lanes = Simd::lanes;
  const int tap_count = kTaps > 0 ? kTaps : taps;
  Reg acc[kCount];
#pragma GCC unroll 8
  for (int v = 0; v < kCount; ++v) acc[v] = bias;
#pragma GCC unroll 25
  for (int t = 0; t < tap_count; ++t) {
    const Reg w = Simd::broadcast(weights + t);
    const float* source = phases + offsets[t] + q;
#pragma GCC unroll 8
    for (int v = 0; v < kCount; ++v) acc[v] = Simd::fmadd(w, Simd::load(source + v * lanes), acc[v]);
  }
#pragma GCC unroll 8
  for (int v = 0; v < kCount; ++v) Simd::store(out + q + v * lanes, activate<Simd, kind>(acc[v], slope));
}

/// out[q] for q in [0, count) rounded up to whole registers, eight registers at a time, then the rest (one to eight)
/// in one go.
template <class Simd, int kTaps, ActivationKind kind>
void depthwise_extended_rows(const float* phases, const std::int32_t* offsets, int taps, const float* weights,
                             float bias, float slope, int count, float* out) {
  constexpr int lanes = Simd::lanes;
  constexpr int group = 8;
  const typename Simd::Reg bias_reg = Simd::set1(bias);
  const typename Simd::Reg slope_reg = Simd::set1(slope);
  int q = 0;
  for (; q + group * lanes <= count; q += group * lanes) {
    depthwise_registers<Simd, kTaps, kind, group>(phases, offsets, taps, weights, bias_reg, slope_reg, q, out);
  }
  const auto rest = [&]<int kCount>() {
    depthwise_registers<Simd, kTaps, kind, kCount>(phases, offsets, taps, weights, bias_reg, slope_reg, q, out);
  };
  switch ((count - q + lanes - 1) / lanes) {
    case 1: return rest.template operator()<1>();
    case 2: return rest.template operator()<2>();
    case 3: return rest.template operator()<3>();
    case 4: return rest.template operator()<4>();
    case 5: return rest.template operator()<5>();
    case 6: return rest.template operator()<6>();
    case 7: return rest.template operator()<7>();
    case 8: return rest.template operator()<8>();
    default: return;
  }
}

template <class Simd, int kTaps, ActivationKind kind>
void depthwise_plane_with(const DepthwiseGeometry& g, const float* input, const float* weights, float bias, float slope,
                          float* output, float* buffer) {
  constexpr int lanes = Simd::lanes;
  float* phases = buffer;
  float* block = buffer + g.phase_floats;
  fill_phases<Simd>(g, input, phases);
  for (int oy = 0; oy < g.out_h; oy += g.block_rows) {
    const int rows = g.out_h - oy < g.block_rows ? g.out_h - oy : g.block_rows;
    const std::size_t first = static_cast<std::size_t>(oy) * g.phase_w;
    depthwise_extended_rows<Simd, kTaps, kind>(phases + first, g.tap_offsets, g.taps, weights, bias, slope,
                                               rows * g.phase_w, block);
    // The first out_w columns of each extended row are the output row (the block has a register of slack to read).
    for (int r = 0; r < rows; ++r) {
      const float* source = block + static_cast<std::size_t>(r) * g.phase_w;
      float* target = output + static_cast<std::size_t>(oy + r) * g.out_w;
      for (int x = 0; x < g.out_w; x += lanes) Simd::store_first(target + x, Simd::load(source + x), g.out_w - x);
    }
  }
}

template <class Simd>
void depthwise_plane(const DepthwiseGeometry& g, const float* input, const float* weights, float bias,
                     Activation activation, float* output, float* buffer) {
  with_simd_activation(activation.kind, [&]<ActivationKind kind>() {
    switch (g.taps) {
      case 9: return depthwise_plane_with<Simd, 9, kind>(g, input, weights, bias, activation.slope, output, buffer);
      case 25: return depthwise_plane_with<Simd, 25, kind>(g, input, weights, bias, activation.slope, output, buffer);
      default: return depthwise_plane_with<Simd, 0, kind>(g, input, weights, bias, activation.slope, output, buffer);
    }
  });
}

}  // namespace
}  // namespace corgy::blas::kernels
