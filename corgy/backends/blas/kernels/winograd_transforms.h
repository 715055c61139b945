// The transforms of Winograd F(4x4, 3x3) (winograd_kernels.h), written once over a SIMD type and compiled per
// instruction set by kernels/winograd_<isa>.cpp. Same rules as sgemm_micro_kernel.h: intrinsics and this header only.
#pragma once

#include <cstddef>

#include "corgy/backends/blas/winograd_kernels.h"

namespace corgy::blas::kernels {
namespace {

/// The columns of a step's six input rows (Simd::lanes tiles, 4 columns apart): what deinterleave4x6 reads.
constexpr int kStepColumns = 80;

/// Arithmetic on plain floats, for the formulas below.
struct ScalarOps {
  using Value = float;
  static float add(float a, float b) { return a + b; }
  static float sub(float a, float b) { return a - b; }
  static float scale(float s, float a) { return s * a; }
};

/// The same on registers of a SIMD type.
template <class Simd>
struct SimdOps {
  using Value = typename Simd::Reg;
  static Value add(Value a, Value b) { return Simd::add(a, b); }
  static Value sub(Value a, Value b) { return Simd::sub(a, b); }
  static Value scale(float s, Value a) { return Simd::mul(Simd::set1(s), a); }
};

/// The rows of B^T (6 x 6) applied to six values d0..d5: out[i] = sum_r B^T[i][r] d[r].
template <class Ops>
void input_rows(const typename Ops::Value d[6], typename Ops::Value out[6]) {
  out[0] = Ops::add(Ops::sub(Ops::scale(4.0f, d[0]), Ops::scale(5.0f, d[2])), d[4]);
  out[1] = Ops::sub(Ops::add(d[3], d[4]), Ops::scale(4.0f, Ops::add(d[1], d[2])));
  out[2] = Ops::add(Ops::sub(d[4], d[3]), Ops::scale(4.0f, Ops::sub(d[1], d[2])));
  out[3] = Ops::add(Ops::sub(d[4], d[2]), Ops::scale(2.0f, Ops::sub(d[3], d[1])));
  out[4] = Ops::sub(Ops::sub(d[4], d[2]), Ops::scale(2.0f, Ops::sub(d[3], d[1])));
  out[5] = Ops::add(Ops::sub(Ops::scale(4.0f, d[1]), Ops::scale(5.0f, d[3])), d[5]);
}

/// B^T d B for Simd::lanes tiles at a time (one tile per lane): the rows pass runs along the six input rows, then
/// the tiles' columns are gathered into registers (deinterleave4x6) for the columns pass, and each of the 36 values
/// is stored as a register into its packed panel.
template <class Simd>
void winograd_input(const WinogradInputPlane& plane, int ty, int tx, int count, const WinogradPackedTiles& out,
                    int t0) {
  using Reg = typename Simd::Reg;
  constexpr int lanes = Simd::lanes;
  alignas(64) float rows[6][kStepColumns];
  alignas(64) float mixed[6][kStepColumns];
  for (int done = 0; done < count;) {
    const int t = t0 + done;
    const int lane = t % out.nr;
    int tiles = count - done < lanes ? count - done : lanes;
    if (tiles > out.nr - lane) tiles = out.nr - lane;  // a step stays inside one panel
    const int x0 = 4 * (tx + done) - plane.pad;
    for (int r = 0; r < 6; ++r) {
      const int y = 4 * ty - plane.pad + r;
      if (y < 0 || y >= plane.height) {
        Simd::fill_zero(rows[r], kStepColumns);
      } else {
        Simd::copy_padded(plane.data + static_cast<std::size_t>(y) * plane.width, x0, kStepColumns, plane.width,
                          rows[r]);
      }
    }
    for (int x = 0; x < kStepColumns; x += lanes) {
      Reg d[6];
      Reg m[6];
      for (int r = 0; r < 6; ++r) d[r] = Simd::load(rows[r] + x);
      input_rows<SimdOps<Simd>>(d, m);
      for (int i = 0; i < 6; ++i) Simd::store(mixed[i] + x, m[i]);
    }
    float* target = out.base + static_cast<std::size_t>(t / out.nr) * out.panel_stride + lane;
    for (int i = 0; i < 6; ++i) {
      Reg d[6];
      Reg v[6];
      Simd::deinterleave4x6(mixed[i], d);
      input_rows<SimdOps<Simd>>(d, v);
      for (int j = 0; j < 6; ++j) Simd::store_first(target + (i * 6 + j) * out.point_stride, v[j], tiles);
    }
    done += tiles;
  }
}

/// A^T (4 x 6) applied to six values: y[a] = sum_j A^T[a][j] m[j].
template <class Simd>
void output_rows(const typename Simd::Reg m[6], typename Simd::Reg y[4]) {
  using Reg = typename Simd::Reg;
  const Reg sum12 = Simd::add(m[1], m[2]);
  const Reg diff12 = Simd::sub(m[1], m[2]);
  const Reg sum34 = Simd::add(m[3], m[4]);
  const Reg diff34 = Simd::sub(m[3], m[4]);
  y[0] = Simd::add(Simd::add(m[0], sum12), sum34);
  y[1] = Simd::fmadd(Simd::set1(2.0f), diff34, diff12);
  y[2] = Simd::fmadd(Simd::set1(4.0f), sum34, sum12);
  y[3] = Simd::add(Simd::fmadd(Simd::set1(8.0f), diff34, diff12), m[5]);
}

/// A^T M A for Simd::lanes tiles at a time (one tile per lane), then bias and activation; each of the four output
/// rows of those tiles is interleaved into consecutive floats of the plane's row (cropped at its edges).
template <class Simd>
void winograd_output(const WinogradProducts& products, int t0, const WinogradOutputPlane& plane, int ty, int tx,
                     int count) {
  using Reg = typename Simd::Reg;
  constexpr int lanes = Simd::lanes;
  const Reg bias = Simd::set1(plane.bias);
  const Reg zero = Simd::zero();
  const Reg slope = Simd::set1(plane.slope);
  for (int g = 0; g < count; g += lanes) {
    const int tiles = count - g < lanes ? count - g : lanes;
    const float* m = products.m + t0 + g;
    Reg columns[4][6];  // A^T applied down each of the six columns
    for (int j = 0; j < 6; ++j) {
      Reg column[6];
      for (int i = 0; i < 6; ++i) column[i] = Simd::load(m + (i * 6 + j) * products.point_stride);
      Reg y[4];
      output_rows<Simd>(column, y);
      for (int a = 0; a < 4; ++a) columns[a][j] = y[a];
    }
    const int x0 = 4 * (tx + g);
    const int valid = plane.width - x0 < 4 * tiles ? plane.width - x0 : 4 * tiles;
    for (int a = 0; a < 4 && 4 * ty + a < plane.height; ++a) {
      Reg y[4];
      output_rows<Simd>(columns[a], y);
      for (int b = 0; b < 4; ++b) {
        y[b] = Simd::add(y[b], bias);
        if (plane.activation == 1) {
          y[b] = Simd::max(y[b], zero);
        } else if (plane.activation == 2) {
          y[b] = Simd::fmadd(slope, Simd::min(y[b], zero), Simd::max(y[b], zero));
        }
      }
      Simd::interleave4_store(y, plane.data + static_cast<std::size_t>(4 * ty + a) * plane.width + x0, valid);
    }
  }
}

}  // namespace
}  // namespace corgy::blas::kernels
