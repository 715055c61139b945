// The direct convolution for few input channels (few_channels_conv.h), written once over a SIMD type and compiled per
// instruction set by kernels/few_channels_<isa>.cpp (the rules of sgemm_micro_kernel.h apply: intrinsics and this
// header only).
//
// Each input channel of a band of rows is copied into its zero-padded phase planes (depthwise_kernel.h's fill_phases),
// so that every tap (channel, ky, kx) of an output register reads one contiguous run of them. A register block holds
// kRegisters registers of output pixels (of the band's extended grid) for kChannels output channels: per tap, those
// registers are loaded once and each output channel's weight broadcast once, for kChannels x kRegisters multiply-adds.
#pragma once

#include <cstddef>
#include <cstdint>

#include "corgy/backends/blas/few_channels_kernels.h"
#include "corgy/backends/blas/kernels/depthwise_kernel.h"

namespace corgy::blas::kernels {
namespace {

/// Output channels and pixel registers of one register block: 8 x 3 accumulators of AVX-512's 32 registers (three
/// pixel loads and a broadcast besides), 4 x 2 of AVX2's and SSE2's 16.
template <class Simd>
constexpr int kFewChannelsBlock = Simd::lanes == 16 ? 8 : 4;
template <class Simd>
constexpr int kFewChannelsRegisters = Simd::lanes == 16 ? 3 : 2;

/// Where a register block's results go: `rows` points at output channel 0's first row of the block, `row_count` rows
/// of `out_w` columns (`phase_w` of them in the extended rows the registers cover), `plane` floats from one channel
/// to the next; `channels` (<= the block's) of them are written, activated with `slope` where the activation has one.
struct FewChannelsOutput {
  float* rows;
  std::size_t plane;
  int row_count;
  int out_w;
  int phase_w;
  int channels;
  float slope;
};

/// Output channels [o, o + kChannels) of the register block at extended position q (row `row`, column `column` of the
/// extended rows): bias[o] + sum over the taps of weights[tap][o] * phases[offset(tap) + q + i], activated and written
/// straight to the output rows, the columns past out_w (the extended rows' padding) skipped. Written from registers
/// rather than through a buffer, so that the output's cache misses overlap the next block's multiply-adds (with a
/// buffer and a pass copying it out, MobileNetV2's 3 -> 32 stem at batch 8 spent 40% of its time in that pass).
template <class Simd, ActivationKind kind>
void few_channels_registers(const float* phases, std::size_t phase_floats, int in_channels, const std::int32_t* offsets,
                            int taps, const float* weights, const float* bias, int q, int row, int column,
                            const FewChannelsOutput& out) {
  using Reg = typename Simd::Reg;
  constexpr int lanes = Simd::lanes;
  constexpr int kChannels = kFewChannelsBlock<Simd>;
  constexpr int kRegisters = kFewChannelsRegisters<Simd>;
  Reg acc[kChannels][kRegisters];
#pragma GCC unroll 8
  for (int o = 0; o < kChannels; ++o) {
    const Reg b = Simd::broadcast(bias + o);
#pragma GCC unroll 3
    for (int v = 0; v < kRegisters; ++v) acc[o][v] = b;
  }
  for (int c = 0; c < in_channels; ++c) {
    const float* plane = phases + static_cast<std::size_t>(c) * phase_floats + q;
    const float* channel_weights = weights + static_cast<std::size_t>(c) * taps * kChannels;
    for (int t = 0; t < taps; ++t) {
      const float* source = plane + offsets[t];
      Reg x[kRegisters];
#pragma GCC unroll 3
      for (int v = 0; v < kRegisters; ++v) x[v] = Simd::load(source + v * lanes);
      const float* w = channel_weights + t * kChannels;
#pragma GCC unroll 8
      for (int o = 0; o < kChannels; ++o) {
        const Reg weight = Simd::broadcast(w + o);
#pragma GCC unroll 3
        for (int v = 0; v < kRegisters; ++v) acc[o][v] = Simd::fmadd(weight, x[v], acc[o][v]);
      }
    }
  }
  const Reg slope = Simd::set1(out.slope);
#pragma GCC unroll 8
  for (int o = 0; o < kChannels; ++o) {
#pragma GCC unroll 3
    for (int v = 0; v < kRegisters; ++v) acc[o][v] = activate<Simd, kind>(acc[o][v], slope);
  }
#pragma GCC unroll 3
  for (int v = 0; v < kRegisters; ++v) {
    int r = row;
    int x = column + v * lanes;
    while (x >= out.phase_w) x -= out.phase_w, ++r;
    if (r >= out.row_count) break;
    if (x + lanes <= out.out_w) {
      float* target = out.rows + static_cast<std::size_t>(r) * out.out_w + x;
      for (int o = 0; o < out.channels; ++o) Simd::store(target + o * out.plane, acc[o][v]);
      continue;
    }
    // The register ends past the row's last output column: its lanes in runs, one per extended row they cover.
    for (int lane = 0; lane < lanes && r < out.row_count; x = 0, ++r) {
      const int run = lanes - lane < out.phase_w - x ? lanes - lane : out.phase_w - x;
      const int kept = out.out_w - x < run ? out.out_w - x : run;
      if (kept > 0) {
        float* target = out.rows + static_cast<std::size_t>(r) * out.out_w + x;
        for (int o = 0; o < out.channels; ++o) Simd::store_lanes(target + o * out.plane, acc[o][v], lane, lane + kept);
      }
      lane += run;
    }
  }
}

/// One band of one image (few_channels_kernels.h's FewChannelsBand).
template <class Simd>
void few_channels_band(const FewChannelsBandArgs& a) {
  constexpr int kChannels = kFewChannelsBlock<Simd>;
  constexpr int step = kFewChannelsRegisters<Simd> * Simd::lanes;
  const DepthwiseGeometry& g = *a.geometry;
  for (int c = 0; c < a.in_channels; ++c) {
    fill_phases<Simd>(g, a.input + static_cast<std::size_t>(c) * a.input_plane,
                      a.buffer + static_cast<std::size_t>(c) * g.phase_floats);
  }
  const int taps = g.taps;
  const std::size_t weights_per_group = static_cast<std::size_t>(a.in_channels) * taps * kChannels + kChannels;
  with_simd_activation(a.activation.kind, [&]<ActivationKind kind>() {
    for (int group = 0; group * kChannels < a.out_channels; ++group) {
      const float* weights = a.packed + group * weights_per_group;
      const float* bias = weights + static_cast<std::size_t>(a.in_channels) * taps * kChannels;
      const int channels =
          a.out_channels - group * kChannels < kChannels ? a.out_channels - group * kChannels : kChannels;
      for (int oy = 0; oy < g.out_h; oy += g.block_rows) {
        const int rows = g.out_h - oy < g.block_rows ? g.out_h - oy : g.block_rows;
        const float* phases = a.buffer + static_cast<std::size_t>(oy) * g.phase_w;
        const FewChannelsOutput out{a.output + static_cast<std::size_t>(group * kChannels) * a.output_plane +
                                        static_cast<std::size_t>(oy) * g.out_w,
                                    a.output_plane,
                                    rows,
                                    g.out_w,
                                    g.phase_w,
                                    channels,
                                    a.activation.slope};
        const int count = rows * g.phase_w;
        int row = 0;
        int column = 0;
        for (int q = 0; q < count; q += step) {
          few_channels_registers<Simd, kind>(phases, g.phase_floats, a.in_channels, g.tap_offsets, taps, weights, bias,
                                             q, row, column, out);
          for (column += step; column >= g.phase_w; column -= g.phase_w) ++row;
        }
      }
    }
  });
}

template <class Simd>
FewChannelsKernel few_channels_kernel_for() {
  return {kFewChannelsBlock<Simd>, kFewChannelsRegisters<Simd> * Simd::lanes, &few_channels_band<Simd>};
}

}  // namespace
}  // namespace corgy::blas::kernels
