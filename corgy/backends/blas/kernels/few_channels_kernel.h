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

/// block[o * block_stride + q + i] = bias[o] + sum over the taps of weights[tap][o] * phases[offset(tap) + q + i], for
/// the register block at extended position q (the phase planes of input channel c at phases + c * phase_floats).
template <class Simd>
void few_channels_registers(const float* phases, std::size_t phase_floats, int in_channels, const std::int32_t* offsets,
                            int taps, const float* weights, const float* bias, int q, float* block,
                            std::size_t block_stride) {
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
#pragma GCC unroll 8
  for (int o = 0; o < kChannels; ++o) {
#pragma GCC unroll 3
    for (int v = 0; v < kRegisters; ++v) Simd::store(block + o * block_stride + q + v * lanes, acc[o][v]);
  }
}

/// The first out_w columns of `rows` extended rows (phase_w apart) into output rows (out_w apart), activated.
template <class Simd, ActivationKind kind>
void few_channels_copy_out(const float* block, int rows, int phase_w, int out_w, float slope, float* output) {
  constexpr int lanes = Simd::lanes;
  const typename Simd::Reg slope_reg = Simd::set1(slope);
  for (int r = 0; r < rows; ++r) {
    const float* source = block + static_cast<std::size_t>(r) * phase_w;
    float* target = output + static_cast<std::size_t>(r) * out_w;
    for (int x = 0; x < out_w; x += lanes) {
      Simd::store_first(target + x, activate<Simd, kind>(Simd::load(source + x), slope_reg), out_w - x);
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
  float* block = a.buffer + static_cast<std::size_t>(a.in_channels) * g.phase_floats;
  const std::size_t block_stride = few_channels_block_stride(g, step);
  const int taps = g.taps;
  const std::size_t weights_per_group = static_cast<std::size_t>(a.in_channels) * taps * kChannels + kChannels;
  for (int group = 0; group * kChannels < a.out_channels; ++group) {
    const float* weights = a.packed + group * weights_per_group;
    const float* bias = weights + static_cast<std::size_t>(a.in_channels) * taps * kChannels;
    const int channels =
        a.out_channels - group * kChannels < kChannels ? a.out_channels - group * kChannels : kChannels;
    for (int oy = 0; oy < g.out_h; oy += g.block_rows) {
      const int rows = g.out_h - oy < g.block_rows ? g.out_h - oy : g.block_rows;
      const float* phases = a.buffer + static_cast<std::size_t>(oy) * g.phase_w;
      const int count = rows * g.phase_w;
      for (int q = 0; q < count; q += step) {
        few_channels_registers<Simd>(phases, g.phase_floats, a.in_channels, g.tap_offsets, taps, weights, bias, q,
                                     block, block_stride);
      }
      with_simd_activation(a.activation.kind, [&]<ActivationKind kind>() {
        for (int o = 0; o < channels; ++o) {
          float* target = a.output + static_cast<std::size_t>(group * kChannels + o) * a.output_plane +
                          static_cast<std::size_t>(oy) * g.out_w;
          few_channels_copy_out<Simd, kind>(block + o * block_stride, rows, g.phase_w, g.out_w, a.activation.slope,
                                            target);
        }
      });
    }
  }
}

template <class Simd>
FewChannelsKernel few_channels_kernel_for() {
  return {kFewChannelsBlock<Simd>, kFewChannelsRegisters<Simd> * Simd::lanes, &few_channels_band<Simd>};
}

}  // namespace
}  // namespace corgy::blas::kernels
