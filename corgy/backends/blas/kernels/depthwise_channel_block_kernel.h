// The depthwise convolution of a register's worth of planes at once, channels in the lanes (depthwise_kernels.h:
// DepthwiseChannelBlockKernel), written once over a SIMD type and compiled per instruction set by
// kernels/depthwise_channel_blocks_<isa>.cpp (the rules of sgemm_micro_kernel.h apply: intrinsics and this header
// only).
//
// Why: on the small planes of a network's late layers (14 x 14 and 7 x 7, strides 1 and 2) a plane-at-a-time kernel
// spends most of its time on what surrounds the multiply-adds: a 7-wide output row fills 7 of 16 lanes, the phase
// copy and the masked row stores cost more than the taps, and each plane is a call. With the channels in the lanes
// every lane of every multiply-add is an output, the padding is a zero border that is written once, and the cost
// moves to two transpositions (in and out, a few shuffles per element).
#pragma once

#include <cstddef>

#include "corgy/backends/blas/depthwise_kernels.h"
#include "corgy/backends/blas/kernels/simd_activation.h"

namespace corgy::blas::kernels {
namespace {

/// The channel block's tile of the input planes: pixel (y, x) of the padded input (pad_top rows above, `padding`
/// columns left) is the register at tile + (y * padded_w + x) * lanes, lane c holding plane c.
template <class Simd>
void gather_channel_block(const DepthwiseGeometry& g, const float* input, std::size_t in_plane, int planes,
                          float* tile) {
  using Reg = typename Simd::Reg;
  constexpr int lanes = Simd::lanes;
  const int pixels = g.in_h * g.in_w;
  const int padded_w = g.in_w + 2 * g.padding;
  int y = 0;
  int x = 0;  // pixel p's row and column
  for (int p = 0; p < pixels; p += lanes) {
    const int count = pixels - p < lanes ? pixels - p : lanes;
    Reg r[lanes];
#pragma GCC unroll 16
    for (int c = 0; c < lanes; ++c) {
      const float* source = input + c * in_plane + p;
      r[c] = c >= planes ? Simd::zero() : count == lanes ? Simd::load(source) : Simd::load_padded(source, 0, count);
    }
    Simd::transpose(r);
    for (int i = 0; i < count; ++i) {
      Simd::store(tile + (static_cast<std::size_t>(y + g.pad_top) * padded_w + x + g.padding) * lanes, r[i]);
      if (++x == g.in_w) x = 0, ++y;
    }
  }
}

/// Outputs (oy, ox .. ox + R) of a K x K, stride S, dilation 1 convolution into the output tile (register per pixel,
/// rows of out_w): each input register of the K rows they read is loaded once and feeds every output whose window
/// holds it, the row's K weights in registers.
template <class Simd, int K, int S, int R>
void channel_block_outputs(const float* tile, int padded_w, const float* weights, std::size_t weight_stride,
                           typename Simd::Reg bias, int oy, int ox, int out_w, float* out_tile) {
  using Reg = typename Simd::Reg;
  constexpr int lanes = Simd::lanes;
  Reg acc[R];
#pragma GCC unroll 16
  for (int j = 0; j < R; ++j) acc[j] = bias;
#pragma GCC unroll 7
  for (int ky = 0; ky < K; ++ky) {
    Reg w[K];
#pragma GCC unroll 7
    for (int kx = 0; kx < K; ++kx) w[kx] = Simd::load(weights + static_cast<std::size_t>(ky * K + kx) * weight_stride);
    const float* row = tile + (static_cast<std::size_t>(oy * S + ky) * padded_w + ox * S) * lanes;
#pragma GCC unroll 40
    for (int i = 0; i < (R - 1) * S + K; ++i) {
      const Reg v = Simd::load(row + i * lanes);
#pragma GCC unroll 7
      for (int kx = 0; kx < K; ++kx) {
        const int j = i - kx;  // S times the output this tap reads column i for
        if (j >= 0 && j % S == 0 && j / S < R) acc[j / S] = Simd::fmadd(w[kx], v, acc[j / S]);
      }
    }
  }
  float* target = out_tile + (static_cast<std::size_t>(oy) * out_w + ox) * lanes;
#pragma GCC unroll 16
  for (int j = 0; j < R; ++j) Simd::store(target + j * lanes, acc[j]);
}

/// The output tile of the block: every row in runs of kMaxRun outputs, then the rest in one run.
template <class Simd, int K, int S>
void channel_block_convolution(const DepthwiseGeometry& g, const float* tile, const float* weights,
                               std::size_t weight_stride, typename Simd::Reg bias, float* out_tile) {
  // Accumulators, the row's K weights and the loaded register in the 32 registers of AVX-512; half of that in 16.
  constexpr int kMaxRun = Simd::lanes >= 16 ? 8 : 4;
  const int padded_w = g.in_w + 2 * g.padding;
  for (int oy = 0; oy < g.out_h; ++oy) {
    int ox = 0;
    for (; ox + kMaxRun <= g.out_w; ox += kMaxRun) {
      channel_block_outputs<Simd, K, S, kMaxRun>(tile, padded_w, weights, weight_stride, bias, oy, ox, g.out_w,
                                                 out_tile);
    }
    const auto rest = [&]<int R>() {
      channel_block_outputs<Simd, K, S, R>(tile, padded_w, weights, weight_stride, bias, oy, ox, g.out_w, out_tile);
    };
    switch (g.out_w - ox) {
      case 1: rest.template operator()<1>(); break;
      case 2: rest.template operator()<2>(); break;
      case 3: rest.template operator()<3>(); break;
      case 4:
        if constexpr (kMaxRun > 4) rest.template operator()<4>();
        break;
      case 5:
        if constexpr (kMaxRun > 5) rest.template operator()<5>();
        break;
      case 6:
        if constexpr (kMaxRun > 6) rest.template operator()<6>();
        break;
      case 7:
        if constexpr (kMaxRun > 7) rest.template operator()<7>();
        break;
      default: break;
    }
  }
}

/// The output tile, activated, back into `planes` output planes of `pixels` floats, which follow each other in
/// memory: transposed into `staging` (the planes as they are laid out, in L1), then copied out front to back. Stored
/// straight from the transpositions, each register to another plane, the writes went to 16 places at once, and at
/// two threads in a network (MobileNetV3 at batch 8) they took more time than the gather and the convolution
/// together.
/// The tile holds a register of slack past its last pixel and the staging buffer a register past its last plane, so
/// the last transposition reads and writes no further.
template <class Simd, ActivationKind kind>
void scatter_channel_block(const float* out_tile, int pixels, int planes, typename Simd::Reg slope, float* staging,
                           float* output) {
  using Reg = typename Simd::Reg;
  constexpr int lanes = Simd::lanes;
  // Last register column first: its whole-register stores run past the end of each plane into the next one's first
  // pixels, which the columns after it then overwrite.
  for (int p = (pixels - 1) / lanes * lanes; p >= 0; p -= lanes) {
    Reg r[lanes];
#pragma GCC unroll 16
    for (int i = 0; i < lanes; ++i) {
      r[i] = activate<Simd, kind>(Simd::load(out_tile + static_cast<std::size_t>(p + i) * lanes), slope);
    }
    Simd::transpose(r);
#pragma GCC unroll 16
    for (int c = 0; c < lanes; ++c) Simd::store(staging + static_cast<std::size_t>(c) * pixels + p, r[c]);
  }
  const std::size_t count = static_cast<std::size_t>(planes) * pixels;
  std::size_t i = 0;
  for (; i + lanes <= count; i += lanes) Simd::store(output + i, Simd::load(staging + i));
  if (i < count) Simd::store_first(output + i, Simd::load(staging + i), static_cast<int>(count - i));
}

template <class Simd, int K, int S, ActivationKind kind>
void depthwise_channel_blocks_with(const DepthwiseGeometry& g, const float* input, std::size_t first, std::size_t end,
                                   int channels, const float* packed, float slope, float* output, float* buffer) {
  constexpr int lanes = Simd::lanes;
  const std::size_t in_plane = static_cast<std::size_t>(g.in_h) * g.in_w;
  const std::size_t out_plane = static_cast<std::size_t>(g.out_h) * g.out_w;
  const std::size_t stride = static_cast<std::size_t>(channels) + kDepthwiseChannelBlock;
  float* tile = buffer;
  float* out_tile = buffer + g.channel_tile_floats;
  float* staging = out_tile + (out_plane + kDepthwiseChannelBlock) * kDepthwiseChannelBlock;
  const typename Simd::Reg slope_reg = Simd::set1(slope);
  for (std::size_t plane = first; plane < end; plane += lanes) {
    const int planes = end - plane < static_cast<std::size_t>(lanes) ? static_cast<int>(end - plane) : lanes;
    // Lane c is plane + c, of channel (plane + c) % channels: the packed rows repeat their first channels past the
    // last, so a block that runs into the next image reads its weights in one register too.
    const float* weights = packed + plane % channels;
    gather_channel_block<Simd>(g, input + plane * in_plane, in_plane, planes, tile);
    channel_block_convolution<Simd, K, S>(g, tile, weights, stride,
                                          Simd::load(weights + static_cast<std::size_t>(g.taps) * stride), out_tile);
    scatter_channel_block<Simd, kind>(out_tile, static_cast<int>(out_plane), planes, slope_reg, staging,
                                      output + plane * out_plane);
  }
}

/// The kernel over one SIMD type: 3 x 3, 5 x 5 and 7 x 7 at strides 1 and 2 (depthwise_channel_blocks_apply).
template <class Simd>
void depthwise_channel_blocks(const DepthwiseGeometry& g, const float* input, std::size_t first, std::size_t end,
                              int channels, const float* packed, Activation activation, float* output, float* buffer) {
  with_simd_activation(activation.kind, [&]<ActivationKind kind>() {
    const auto run = [&]<int K, int S>() {
      depthwise_channel_blocks_with<Simd, K, S, kind>(g, input, first, end, channels, packed, activation.slope, output,
                                                      buffer);
    };
    switch (g.kernel * 10 + g.stride) {
      case 31: return run.template operator()<3, 1>();
      case 32: return run.template operator()<3, 2>();
      case 51: return run.template operator()<5, 1>();
      case 52: return run.template operator()<5, 2>();
      case 71: return run.template operator()<7, 1>();
      case 72: return run.template operator()<7, 2>();
      default: return;
    }
  });
}

}  // namespace
}  // namespace corgy::blas::kernels
