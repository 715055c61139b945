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

/// activation(x) over `count` floats in place, by whole registers and a masked last one.
template <class Simd, ActivationKind kind>
void activate_in_place(float* data, std::size_t count, float slope_value) {
  constexpr std::size_t lanes = Simd::lanes;
  const typename Simd::Reg slope = Simd::set1(slope_value);
  std::size_t i = 0;
  for (; i + lanes <= count; i += lanes) Simd::store(data + i, activate<Simd, kind>(Simd::load(data + i), slope));
  if (i < count) {
    alignas(64) float tail[lanes] = {};
    for (std::size_t j = i; j < count; ++j) tail[j - i] = data[j];
    Simd::store_first(data + i, activate<Simd, kind>(Simd::load(tail), slope), static_cast<int>(count - i));
  }
}

/// Calls body.template operator()<kind>() for the activation the kernels apply in their registers, as
/// with_simd_activation does, for the activations of a few instructions (ReLU, its leaky and clipped forms, hard
/// swish). The others (an exponential or more each: sigmoid, swish, tanh, mish, GELU) run the body without one, then
/// one pass over the output plane (out_h x out_w at `output`) while it is in cache: inlined into every path, tap count
/// and register count below, they took half of each instruction set's compile time (depthwise_avx512.cpp: 31 s in
/// Release, 15.5 s without them), for the cost of reading a plane again from L1 or L2.
template <class Simd, class Body>
void with_register_activation(const DepthwiseGeometry& g, Activation activation, float* output, Body&& body) {
  switch (activation.kind) {
    case ActivationKind::none: return body.template operator()<ActivationKind::none>();
    case ActivationKind::relu: return body.template operator()<ActivationKind::relu>();
    case ActivationKind::leaky_relu: return body.template operator()<ActivationKind::leaky_relu>();
    case ActivationKind::clipped_relu: return body.template operator()<ActivationKind::clipped_relu>();
    case ActivationKind::hard_swish: return body.template operator()<ActivationKind::hard_swish>();
    default: break;
  }
  body.template operator()<ActivationKind::none>();
  with_simd_activation(activation.kind, [&]<ActivationKind kind>() {
    activate_in_place<Simd, kind>(output, static_cast<std::size_t>(g.out_h) * g.out_w, activation.slope);
  });
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

/// Output rows [oy, oy + R) at register column x of a K x K, stride S, dilation 1 convolution, straight into the
/// output plane (masked past out_w). Tap (ky, kx) lives in phase plane (ky % S, kx % S) at row offset ky / S and
/// column offset kx / S, so each phase row is loaded once per column offset and feeds every one of the R output rows
/// whose taps read it: for 3 x 3 at stride 1 and R = 4, 18 loads for 36 multiply-adds where the extended-row path
/// loads once per multiply-add (and most of those loads straddle two cache lines).
template <class Simd, int K, int S, int R, ActivationKind kind>
void depthwise_row_block(const DepthwiseGeometry& g, const float* phases, const float* weights, typename Simd::Reg bias,
                         typename Simd::Reg slope, int oy, int x, float* output) {
  using Reg = typename Simd::Reg;
  const std::size_t phase_size = static_cast<std::size_t>(g.phase_h) * g.phase_w;
  Reg acc[R];
#pragma GCC unroll 8
  for (int j = 0; j < R; ++j) acc[j] = bias;
#pragma GCC unroll 2
  for (int py = 0; py < S; ++py) {
#pragma GCC unroll 2
    for (int px = 0; px < S; ++px) {
      const int rows = (K - 1 - py) / S + 1;     // taps of this phase along y: ky = py + S * dy
      const int columns = (K - 1 - px) / S + 1;  // and along x: kx = px + S * dx
      const float* plane =
          phases + static_cast<std::size_t>(py * S + px) * phase_size + static_cast<std::size_t>(oy) * g.phase_w + x;
#pragma GCC unroll 16
      for (int i = 0; i < R + rows - 1; ++i) {
#pragma GCC unroll 8
        for (int dx = 0; dx < columns; ++dx) {
          const Reg v = Simd::load(plane + static_cast<std::size_t>(i) * g.phase_w + dx);
#pragma GCC unroll 8
          for (int dy = 0; dy < rows; ++dy) {
            const int j = i - dy;
            if (j >= 0 && j < R)
              acc[j] = Simd::fmadd(Simd::broadcast(weights + (py + S * dy) * K + px + S * dx), v, acc[j]);
          }
        }
      }
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < R; ++j) {
    Simd::store_first(output + static_cast<std::size_t>(oy + j) * g.out_w + x, activate<Simd, kind>(acc[j], slope),
                      g.out_w - x);
  }
}

/// activation(acc[j]) into output row j of a direct block (rows out_w apart), masked past the `count` outputs left in
/// the row.
template <class Simd, int R, ActivationKind kind>
void store_direct_rows(const typename Simd::Reg (&acc)[R], typename Simd::Reg slope, float* output, int out_w,
                       int count) {
#pragma GCC unroll 8
  for (int j = 0; j < R; ++j) {
    const typename Simd::Reg value = activate<Simd, kind>(acc[j], slope);
    if (count >= Simd::lanes) {
      Simd::store(output + static_cast<std::size_t>(j) * out_w, value);
    } else {
      Simd::store_first(output + static_cast<std::size_t>(j) * out_w, value, count);
    }
  }
}

/// Output rows [oy, oy + R) at register column x of a K x K, stride 1, dilation 1 convolution, read straight from
/// the input plane (no phase copy): rows above and below the input read `zero_row`, columns outside it come from
/// masked loads as zeros (kEdge: some of the register's columns lie outside the row; otherwise the loads are plain).
/// Otherwise as depthwise_row_block: each input row is loaded once per column offset for the R output rows whose
/// taps read it. `output` is the block's first output, `count` the outputs left in its row.
template <class Simd, int K, int R, ActivationKind kind, bool kEdge>
void depthwise_direct_block(const float* input, int in_h, int in_w, const float* zero_row, int first_row,
                            int first_column, const float* weights, typename Simd::Reg bias, typename Simd::Reg slope,
                            float* output, int out_w, int count) {
  using Reg = typename Simd::Reg;
  Reg acc[R];
#pragma GCC unroll 8
  for (int j = 0; j < R; ++j) acc[j] = bias;
  // The edge masks, once per block: they depend on the column, not the row.
  typename Simd::Mask lanes[K];
  if constexpr (kEdge) {
#pragma GCC unroll 8
    for (int dx = 0; dx < K; ++dx) lanes[dx] = Simd::padded_lanes(first_column + dx, in_w);
  }
#pragma GCC unroll 16
  for (int i = 0; i < R + K - 1; ++i) {
    // No branch on the row: rows outside the input read zero_row.
    const int y = first_row + i;
    const float* row = y >= 0 && y < in_h ? input + static_cast<std::size_t>(y) * in_w : zero_row;
#pragma GCC unroll 8
    for (int dx = 0; dx < K; ++dx) {
      const int column = first_column + dx;
      Reg v;
      if constexpr (kEdge) {
        v = Simd::load_masked(row + column, lanes[dx]);
      } else {
        v = Simd::load(row + column);
      }
#pragma GCC unroll 8
      for (int dy = 0; dy < K; ++dy) {
        const int j = i - dy;
        if (j >= 0 && j < R) acc[j] = Simd::fmadd(Simd::broadcast(weights + dy * K + dx), v, acc[j]);
      }
    }
  }
  store_direct_rows<Simd, R, kind>(acc, slope, output, out_w, count);
}

/// Output rows [oy, oy + R) at register column x of a K x K, stride 2, dilation 1 convolution, read straight from
/// the input plane: each input row is loaded once per pair of column offsets, two registers of it split into their
/// even and odd columns in registers (taps kx and kx + 1), and each tap row feeds every output row of the block
/// that reads it (at stride 2, most input rows feed two). The phase copy this replaces took more than half of a
/// plane's time (112 x 112 -> 56 x 56: masked loads and stores at every register of the copy). kEdge: some of the
/// columns read lie outside the row (masked loads); otherwise none do and the loads are plain.
template <class Simd, int K, int R, ActivationKind kind, bool kEdge>
void depthwise_direct_block_s2(const float* input, int in_h, int in_w, const float* zero_row, int first_row,
                               int first_column, const float* weights, typename Simd::Reg bias,
                               typename Simd::Reg slope, float* output, int out_w, int count) {
  using Reg = typename Simd::Reg;
  constexpr int pairs = (K + 1) / 2;  // column offsets kx = 2p and 2p + 1 come from one split
  Reg acc[R];
#pragma GCC unroll 8
  for (int j = 0; j < R; ++j) acc[j] = bias;
  // The edge masks of each pair's two registers, once per block: they depend on the column, not the row (computed
  // per row, their scalar work took more time than the multiply-adds in a 112 x 112 -> 56 x 56 plane, half of whose
  // blocks are edges).
  typename Simd::Mask low_lanes[pairs];
  typename Simd::Mask high_lanes[pairs];
  if constexpr (kEdge) {
#pragma GCC unroll 4
    for (int p = 0; p < pairs; ++p) {
      low_lanes[p] = Simd::padded_lanes(first_column + 2 * p, in_w);
      high_lanes[p] = Simd::padded_lanes(first_column + 2 * p + Simd::lanes, in_w);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < 2 * R + K - 2; ++i) {
    // Rows above and below the input read zeros (no branch on the row).
    const int y = first_row + i;
    const float* row = y >= 0 && y < in_h ? input + static_cast<std::size_t>(y) * in_w : zero_row;
#pragma GCC unroll 4
    for (int p = 0; p < pairs; ++p) {
      Reg split[2];
      if constexpr (kEdge) {
        Simd::deinterleave2_masked(row + first_column + 2 * p, low_lanes[p], high_lanes[p], split[0], split[1]);
      } else {
        Simd::deinterleave2(row + first_column + 2 * p, split[0], split[1]);
      }
#pragma GCC unroll 2
      for (int half = 0; half < 2; ++half) {
        const int dx = 2 * p + half;
        if (dx >= K) continue;
#pragma GCC unroll 8
        for (int j = 0; j < R; ++j) {
          const int dy = i - 2 * j;
          if (dy >= 0 && dy < K) acc[j] = Simd::fmadd(Simd::broadcast(weights + dy * K + dx), split[half], acc[j]);
        }
      }
    }
  }
  store_direct_rows<Simd, R, kind>(acc, slope, output, out_w, count);
}

/// Output rows [oy, oy + R) by direct blocks at stride S (depthwise_direct_block, depthwise_direct_block_s2),
/// register column after register column: plain loads where a register's columns lie inside the input row, masked
/// ones at its ends.
template <class Simd, int K, int S, int R, ActivationKind kind>
void depthwise_rows_direct(const DepthwiseGeometry& g, const float* input, const float* zero_row, const float* weights,
                           typename Simd::Reg bias, typename Simd::Reg slope, int oy, float* output) {
  constexpr int lanes = Simd::lanes;
  // Columns a register's loads span from its first: K - 1 taps past a register at stride 1; at stride 2 the pairs of
  // registers split into even and odd columns, the last pair 2 (ceil(K / 2) - 1) columns on.
  constexpr int reach = S == 1 ? K - 1 + lanes : 2 * ((K + 1) / 2 - 1) + 2 * lanes;
  const int in_w = g.in_w;
  const int out_w = g.out_w;
  const int first_row = S * oy - g.pad_top;
  float* out_row = output + static_cast<std::size_t>(oy) * out_w;
  const auto block = [&]<bool kEdge>(int x) {
    const int first_column = S * x - g.padding;
    if constexpr (S == 1) {
      depthwise_direct_block<Simd, K, R, kind, kEdge>(input, g.in_h, in_w, zero_row, first_row, first_column, weights,
                                                      bias, slope, out_row + x, out_w, out_w - x);
    } else {
      depthwise_direct_block_s2<Simd, K, R, kind, kEdge>(input, g.in_h, in_w, zero_row, first_row, first_column,
                                                         weights, bias, slope, out_row + x, out_w, out_w - x);
    }
  };
  for (int x = 0; x < out_w; x += lanes) {
    const int first_column = S * x - g.padding;
    if (first_column >= 0 && first_column + reach <= in_w) {
      block.template operator()<false>(x);
    } else {
      block.template operator()<true>(x);
    }
  }
}

/// The plane by direct blocks at stride S: four output rows at a time, then one at a time. The start of `buffer` (the
/// phase planes, unused here, at least an input row long) becomes the row of zeros that rows outside the input read.
template <class Simd, int K, int S, ActivationKind kind>
void depthwise_plane_direct(const DepthwiseGeometry& g, const float* input, const float* weights, float bias,
                            float slope, float* output, float* buffer) {
  constexpr int block = 4;
  const typename Simd::Reg bias_reg = Simd::set1(bias);
  const typename Simd::Reg slope_reg = Simd::set1(slope);
  Simd::fill_zero(buffer, g.in_w);
  int oy = 0;
  for (; oy + block <= g.out_h; oy += block) {
    depthwise_rows_direct<Simd, K, S, block, kind>(g, input, buffer, weights, bias_reg, slope_reg, oy, output);
  }
  for (; oy < g.out_h; ++oy) {
    depthwise_rows_direct<Simd, K, S, 1, kind>(g, input, buffer, weights, bias_reg, slope_reg, oy, output);
  }
}

/// The plane by row blocks (depthwise_row_block): four output rows at a time, the last one to three after them.
template <class Simd, int K, int S, ActivationKind kind>
void depthwise_plane_by_rows(const DepthwiseGeometry& g, const float* input, const float* weights, float bias,
                             float slope, float* output, float* buffer) {
  constexpr int lanes = Simd::lanes;
  constexpr int block = 4;
  fill_phases<Simd>(g, input, buffer);
  const typename Simd::Reg bias_reg = Simd::set1(bias);
  const typename Simd::Reg slope_reg = Simd::set1(slope);
  int oy = 0;
  for (; oy + block <= g.out_h; oy += block) {
    for (int x = 0; x < g.out_w; x += lanes) {
      depthwise_row_block<Simd, K, S, block, kind>(g, buffer, weights, bias_reg, slope_reg, oy, x, output);
    }
  }
  for (; oy < g.out_h; ++oy) {
    for (int x = 0; x < g.out_w; x += lanes) {
      depthwise_row_block<Simd, K, S, 1, kind>(g, buffer, weights, bias_reg, slope_reg, oy, x, output);
    }
  }
}

/// Row blocks pay where an output row fills most of its registers; on narrow planes (7 x 7) a register holds parts
/// of several extended rows, and the extended-row path wastes fewer lanes.
/// (depthwise_direct_blocks_apply, outside the kernels, states the same rule for the plan's description.)
constexpr int kMinRowBlockWidth = 12;

/// The extended-row path alone, for every geometry.
template <class Simd>
void depthwise_plane_extended(const DepthwiseGeometry& g, const float* input, const float* weights, float bias,
                              Activation activation, float* output, float* buffer) {
  with_register_activation<Simd>(g, activation, output, [&]<ActivationKind kind>() {
    switch (g.taps) {
      case 9: return depthwise_plane_with<Simd, 9, kind>(g, input, weights, bias, activation.slope, output, buffer);
      case 25: return depthwise_plane_with<Simd, 25, kind>(g, input, weights, bias, activation.slope, output, buffer);
      default: return depthwise_plane_with<Simd, 0, kind>(g, input, weights, bias, activation.slope, output, buffer);
    }
  });
}

/// Phase row blocks (depthwise_row_block) where they apply: 3 x 3 and 5 x 5, strides 1 and 2, dilation 1, outputs
/// at least kMinRowBlockWidth wide; the extended rows otherwise.
template <class Simd>
void depthwise_plane_row_blocks(const DepthwiseGeometry& g, const float* input, const float* weights, float bias,
                                Activation activation, float* output, float* buffer) {
  if (g.dilation != 1 || g.out_w < kMinRowBlockWidth || (g.kernel != 3 && g.kernel != 5) ||
      (g.stride != 1 && g.stride != 2)) {
    return depthwise_plane_extended<Simd>(g, input, weights, bias, activation, output, buffer);
  }
  with_register_activation<Simd>(g, activation, output, [&]<ActivationKind kind>() {
    const float slope = activation.slope;
    if (g.kernel == 3 && g.stride == 1)
      return depthwise_plane_by_rows<Simd, 3, 1, kind>(g, input, weights, bias, slope, output, buffer);
    if (g.kernel == 3) return depthwise_plane_by_rows<Simd, 3, 2, kind>(g, input, weights, bias, slope, output, buffer);
    if (g.stride == 1) return depthwise_plane_by_rows<Simd, 5, 1, kind>(g, input, weights, bias, slope, output, buffer);
    return depthwise_plane_by_rows<Simd, 5, 2, kind>(g, input, weights, bias, slope, output, buffer);
  });
}

/// Direct blocks (depthwise_direct_block, depthwise_direct_block_s2: no phase copy) where they apply: 3 x 3 and
/// 5 x 5 at strides 1 and 2, dilation 1, outputs at least kMinRowBlockWidth wide; the phase row blocks otherwise.
template <class Simd>
void depthwise_plane_direct_blocks(const DepthwiseGeometry& g, const float* input, const float* weights, float bias,
                                   Activation activation, float* output, float* buffer) {
  if (g.dilation != 1 || g.out_w < kMinRowBlockWidth || (g.kernel != 3 && g.kernel != 5) ||
      (g.stride != 1 && g.stride != 2)) {
    return depthwise_plane_row_blocks<Simd>(g, input, weights, bias, activation, output, buffer);
  }
  with_register_activation<Simd>(g, activation, output, [&]<ActivationKind kind>() {
    const float slope = activation.slope;
    if (g.stride == 2) {
      if (g.kernel == 3)
        return depthwise_plane_direct<Simd, 3, 2, kind>(g, input, weights, bias, slope, output, buffer);
      return depthwise_plane_direct<Simd, 5, 2, kind>(g, input, weights, bias, slope, output, buffer);
    }
    if (g.kernel == 3) return depthwise_plane_direct<Simd, 3, 1, kind>(g, input, weights, bias, slope, output, buffer);
    return depthwise_plane_direct<Simd, 5, 1, kind>(g, input, weights, bias, slope, output, buffer);
  });
}

/// The path the backend uses (DepthwisePath::automatic): direct blocks where they apply (3 x 3 and 5 x 5, strides 1
/// and 2, dilation 1, outputs at least kMinRowBlockWidth wide), the extended rows otherwise. Measured
/// (benchmarks/depthwise_benchmark, AMD EPYC Zen 5, one core): at stride 1, once their edge registers (masked loads)
/// were a block of their own and rows outside the input read a row of zeros, the direct blocks took 0.77-0.85 of the
/// time of the rule before them (direct from 48 wide, row blocks below) on 3 x 3 layers 56 to 14 wide (MobileNetV2's
/// 144 x 56 x 56: 0.162 ms against 0.211) and the same on 5 x 5 ones (before, the edge checks in every row made them
/// lose below 48 wide: 1.05-1.21 of the extended rows' time at 28 and 14 on an Intel Xeon); at stride 2 they
/// took 0.54-0.83 of the extended rows' time from 56 down to 14 wide (benchmarks/depthwise_benchmark, interleaved,
/// two runs: 3 x 3 from 112 x 112 0.187-0.191 ms against 0.265-0.276 for 96 planes, from 28 x 28 0.032-0.034
/// against 0.059 for 192; 5 x 5 from 56 x 56 0.068-0.072 against 0.081-0.086, from 28 x 28 0.071-0.076 against
/// 0.094-0.096), where the phase row blocks had not beaten the extended rows.
template <class Simd>
void depthwise_plane_automatic(const DepthwiseGeometry& g, const float* input, const float* weights, float bias,
                               Activation activation, float* output, float* buffer) {
  depthwise_plane_direct_blocks<Simd>(g, input, weights, bias, activation, output, buffer);
}

/// The kernel of `path` over one SIMD type (depthwise_kernels.h: DepthwisePath).
template <class Simd>
DepthwiseKernel depthwise_kernel_for(DepthwisePath path) {
  switch (path) {
    case DepthwisePath::extended_rows: return depthwise_plane_extended<Simd>;
    case DepthwisePath::row_blocks: return depthwise_plane_row_blocks<Simd>;
    case DepthwisePath::direct_blocks: return depthwise_plane_direct_blocks<Simd>;
    case DepthwisePath::automatic: break;
  }
  return depthwise_plane_automatic<Simd>;
}

}  // namespace
}  // namespace corgy::blas::kernels
