// The kernels of ChannelBlockKernels (channel_block_kernels.h), written once over a SIMD type and compiled per
// instruction set by kernels/depthwise_channel_blocks_<isa>.cpp (the rules of sgemm_micro_kernel.h apply).
#pragma once

#include <cstddef>

#include "corgy/backends/blas/channel_block_kernels.h"
#include "corgy/backends/blas/kernels/depthwise_channel_block_kernel.h"
#include "corgy/backends/blas/kernels/simd_activation.h"

namespace corgy::blas::kernels {
namespace {

template <class Simd>
void store_block_rows(const float* rows, std::size_t ld, int count, const float* bias, Activation activation,
                      float* tile) {
  constexpr int lanes = Simd::lanes;
  const typename Simd::Reg b = Simd::load(bias);
  const typename Simd::Reg slope = Simd::set1(activation.slope);
  with_simd_activation(activation.kind, [&]<ActivationKind kind>() {
    for (int p = 0; p < count; ++p) {
      Simd::store(tile + static_cast<std::size_t>(p) * lanes,
                  activate<Simd, kind>(Simd::add(Simd::load(rows + static_cast<std::size_t>(p) * ld), b), slope));
    }
  });
}

template <class Simd>
void depthwise_block(const DepthwiseGeometry& g, const float* tile, const float* weights, std::size_t weight_stride,
                     Activation activation, float* output) {
  constexpr int lanes = Simd::lanes;
  const typename Simd::Reg bias = Simd::load(weights + static_cast<std::size_t>(g.taps) * weight_stride);
  const auto run = [&]<int K, int S>() {
    channel_block_convolution<Simd, K, S>(g, tile, weights, weight_stride, bias, output);
  };
  switch (g.kernel * 10 + g.stride) {
    case 31: run.template operator()<3, 1>(); break;
    case 32: run.template operator()<3, 2>(); break;
    case 51: run.template operator()<5, 1>(); break;
    case 52: run.template operator()<5, 2>(); break;
    case 71: run.template operator()<7, 1>(); break;
    case 72: run.template operator()<7, 2>(); break;
    default: return;
  }
  // The activation over the output while it is in L1 (the convolution's runs store their sums as they are).
  const std::size_t count = static_cast<std::size_t>(g.out_h) * g.out_w * lanes;
  const typename Simd::Reg slope = Simd::set1(activation.slope);
  with_simd_activation(activation.kind, [&]<ActivationKind kind>() {
    if constexpr (kind != ActivationKind::none) {
      for (std::size_t i = 0; i < count; i += lanes)
        Simd::store(output + i, activate<Simd, kind>(Simd::load(output + i), slope));
    }
  });
}

/// Transposed a register of pixels at a time into `staging` (the planes as they are laid out, in L1), then copied
/// out front to back with the residual and the activation: as scatter_channel_block, which says why.
template <class Simd>
void block_rows_to_planes(const float* rows, std::size_t ld, int pixels, int planes, const float* bias,
                          const float* residual, Activation activation, float* staging, float* output) {
  using Reg = typename Simd::Reg;
  constexpr int lanes = Simd::lanes;
  const Reg b = Simd::load(bias);
  // Last register column first: its whole-register stores run past the end of each plane into the next one's first
  // pixels, which the columns after it then overwrite.
  for (int p = (pixels - 1) / lanes * lanes; p >= 0; p -= lanes) {
    Reg r[lanes];
#pragma GCC unroll 16
    for (int i = 0; i < lanes; ++i) r[i] = Simd::add(Simd::load(rows + static_cast<std::size_t>(p + i) * ld), b);
    Simd::transpose(r);
#pragma GCC unroll 16
    for (int c = 0; c < lanes; ++c) Simd::store(staging + static_cast<std::size_t>(c) * pixels + p, r[c]);
  }
  const Reg slope = Simd::set1(activation.slope);
  const std::size_t count = static_cast<std::size_t>(planes) * pixels;
  with_simd_activation(activation.kind, [&]<ActivationKind kind>() {
    const auto value = [&](std::size_t i) {
      const Reg v = Simd::load(staging + i);
      return activate<Simd, kind>(residual ? Simd::add(v, Simd::load(residual + i)) : v, slope);
    };
    std::size_t i = 0;
    for (; i + lanes <= count; i += lanes) Simd::store(output + i, value(i));
    if (i < count) {
      const int rest = static_cast<int>(count - i);
      const Reg v = Simd::load(staging + i);
      const Reg sum = residual ? Simd::add(v, Simd::load_padded(residual + i, 0, rest)) : v;
      Simd::store_first(output + i, activate<Simd, kind>(sum, slope), rest);
    }
  });
}

template <class Simd>
ChannelBlockKernels channel_block_kernel_set() {
  return {Simd::lanes, store_block_rows<Simd>, depthwise_block<Simd>, block_rows_to_planes<Simd>};
}

}  // namespace
}  // namespace corgy::blas::kernels
