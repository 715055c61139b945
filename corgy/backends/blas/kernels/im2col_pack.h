// Implicit im2col's inner loop: one row of a convolution's column matrix written into packed B panels, compiled per
// instruction set like the micro-kernels (included only by kernels/sgemm_<isa>.cpp; same rules as
// sgemm_micro_kernel.h: intrinsics and this header only).
#pragma once

#include <cstddef>

#include "corgy/backends/blas/gemm_kernels.h"

namespace corgy::blas::kernels {
namespace {

/// Writes `count` values of one column-matrix row, from output pixel `pixel` on: the pixel (oy, ox) reads
/// plane[oy * stride + y_offset][ox * stride + x_offset], or 0 outside the plane. Value j goes to
/// out[(j / nr) * panel_stride + j % nr]: B's panels of nr columns. Simd::copy_padded(source, first, count, width,
/// target) copies target[i] = source[first + i] where 0 <= first + i < width, else 0; copy_padded_even the same
/// from source[first + 2 i] (stride 2).
template <class Simd>
void pack_im2col_row(const Im2colRow& row, int pixel, int count, int nr, std::size_t panel_stride, float* out) {
  int lane = 0;  // position inside the current panel
  while (count > 0) {
    const int oy = pixel / row.out_w;
    const int ox = pixel - oy * row.out_w;
    int run = row.out_w - ox;  // along one output row ...
    if (run > count) run = count;
    if (run > nr - lane) run = nr - lane;  // ... and inside one panel
    const int iy = oy * row.stride + row.y_offset;
    float* target = out + lane;
    if (iy < 0 || iy >= row.height) {
      Simd::fill_zero(target, run);
    } else {
      const float* source = row.plane + static_cast<std::size_t>(iy) * row.width;
      const int ix = ox * row.stride + row.x_offset;
      if (row.stride == 1) {
        Simd::copy_padded(source, ix, run, row.width, target);
      } else if (row.stride == 2) {
        Simd::copy_padded_even(source, ix, run, row.width, target);
      } else {
        for (int i = 0; i < run; ++i) {
          const int x = ix + i * row.stride;
          target[i] = x >= 0 && x < row.width ? source[x] : 0.0f;
        }
      }
    }
    pixel += run;
    count -= run;
    lane += run;
    if (lane == nr) {
      lane = 0;
      out += panel_stride;
    }
  }
}

}  // namespace
}  // namespace corgy::blas::kernels
