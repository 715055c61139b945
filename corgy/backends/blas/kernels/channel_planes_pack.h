// Packing B of a pointwise convolution over a batch straight from the input planes, with a per-channel affine and
// activation applied on the way: activation(x * scale + shift), a batch norm and its ReLU before the convolution
// (DenseNet's BN-ReLU-Conv), or a squeeze-and-excitation's per-(image, channel) gates (MobileNetV3's and
// EfficientNet's projections), computed while the GEMM packs its input instead of as a pass of its own. Compiled per
// instruction set like the micro-kernels (included only by kernels/sgemm_<isa>.cpp; the rules of
// sgemm_micro_kernel.h).
#pragma once

#include <cstddef>

#include "corgy/backends/blas/gemm_kernels.h"
#include "corgy/backends/blas/kernels/simd_activation.h"

namespace corgy::blas::kernels {
namespace {

/// out[i] = activation(source[i] * scale + shift) for i < count.
template <class Simd, ActivationKind kind, bool kAffine>
void pack_run(const float* source, int count, typename Simd::Reg scale, typename Simd::Reg shift,
              typename Simd::Reg slope, float* out) {
  using Reg = typename Simd::Reg;
  constexpr int lanes = Simd::lanes;
  const auto transform = [&](Reg x) {
    if constexpr (kAffine) {
      return activate<Simd, kind>(Simd::fmadd(x, scale, shift), slope);
    } else {
      return x;
    }
  };
  int i = 0;
  for (; i + lanes <= count; i += lanes) Simd::store(out + i, transform(Simd::load(source + i)));
  if (i < count) {
    alignas(64) float tail[lanes] = {};
    for (int j = i; j < count; ++j) tail[j - i] = source[j];
    Simd::store_first(out + i, transform(Simd::load(tail)), count - i);
  }
}

template <class Simd, ActivationKind kind, bool kAffine>
void pack_rows(const PlaneRow* rows, int kc, int pixels, int n0, int valid, int nr, std::size_t panel_stride,
               float slope_value, float* out) {
  using Reg = typename Simd::Reg;
  const Reg slope = Simd::set1(slope_value);
  for (int k = 0; k < kc; ++k) {
    const PlaneRow& row = rows[k];
    // The scale of image n: the row's own, times the image's gate where the row has gates.
    const auto scale_of = [&](int n) {
      return Simd::set1(row.image_scale ? row.scale * row.image_scale[n * row.image_scale_stride] : row.scale);
    };
    const Reg shift = Simd::set1(row.shift);
    float* row_out = out + static_cast<std::size_t>(k) * nr;
    int image = n0 / pixels;
    int pixel = n0 - image * pixels;
    Reg scale = scale_of(image);
    const float* source = row.plane + image * row.image_stride + pixel;
    // Runs that end at a panel's or an image's last column.
    for (int j = 0; j < valid;) {
      const int lane = j % nr;
      int length = valid - j;
      if (length > nr - lane) length = nr - lane;
      if (length > pixels - pixel) length = pixels - pixel;
      pack_run<Simd, kind, kAffine>(source, length, scale, shift, slope,
                                    row_out + static_cast<std::size_t>(j / nr) * panel_stride + lane);
      j += length;
      pixel += length;
      source += length;
      if (pixel == pixels) {
        pixel = 0;
        ++image;
        source = row.plane + image * row.image_stride;
        if (row.image_scale && j < valid) scale = scale_of(image);
      }
    }
    const int tail = valid % nr;  // the last panel's columns past the matrix are zero
    if (tail != 0) Simd::fill_zero(row_out + static_cast<std::size_t>(valid / nr) * panel_stride + tail, nr - tail);
  }
}

/// PlaneRowsPacker (gemm_kernels.h) for one instruction set.
template <class Simd>
void pack_channel_planes(const PlaneRow* rows, int kc, int pixels, int n0, int valid, int nr, std::size_t panel_stride,
                         bool affine, ActivationKind activation, float slope, float* out) {
  if (!affine) {
    return pack_rows<Simd, ActivationKind::none, false>(rows, kc, pixels, n0, valid, nr, panel_stride, 0.0f, out);
  }
  with_simd_activation(activation, [&]<ActivationKind kind>() {
    pack_rows<Simd, kind, true>(rows, kc, pixels, n0, valid, nr, panel_stride, slope, out);
  });
}

}  // namespace
}  // namespace corgy::blas::kernels
