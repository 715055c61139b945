// The transforms of Winograd F(4x4, 3x3) and F(2x2, 3x3) (winograd_kernels.h), written once over a SIMD type and a
// variant, and compiled per instruction set by kernels/winograd_<isa>.cpp. Same rules as sgemm_micro_kernel.h:
// intrinsics and this header only.
#pragma once

#include <cstddef>

#include "corgy/backends/blas/kernels/simd_activation.h"
#include "corgy/backends/blas/winograd_kernels.h"

namespace corgy::blas::kernels {
namespace {

/// Arithmetic on plain floats and on registers, for the formulas of the variants.
template <class Simd>
struct SimdOps {
  using Value = typename Simd::Reg;
  static Value add(Value a, Value b) { return Simd::add(a, b); }
  static Value sub(Value a, Value b) { return Simd::sub(a, b); }
  static Value scale(float s, Value a) { return Simd::mul(Simd::set1(s), a); }
};

/// F(4x4, 3x3): 6x6 input tiles 4 apart, points 0, +-1, +-2 and infinity (Lavin and Gray's matrices).
struct F4x4 {
  static constexpr int in = 6;
  static constexpr int out = 4;
  /// out[i] = sum_r B^T[i][r] d[r]
  template <class Ops>
  static void input_rows(const typename Ops::Value d[in], typename Ops::Value o[in]) {
    o[0] = Ops::add(Ops::sub(Ops::scale(4.0f, d[0]), Ops::scale(5.0f, d[2])), d[4]);
    o[1] = Ops::sub(Ops::add(d[3], d[4]), Ops::scale(4.0f, Ops::add(d[1], d[2])));
    o[2] = Ops::add(Ops::sub(d[4], d[3]), Ops::scale(4.0f, Ops::sub(d[1], d[2])));
    o[3] = Ops::add(Ops::sub(d[4], d[2]), Ops::scale(2.0f, Ops::sub(d[3], d[1])));
    o[4] = Ops::sub(Ops::sub(d[4], d[2]), Ops::scale(2.0f, Ops::sub(d[3], d[1])));
    o[5] = Ops::add(Ops::sub(Ops::scale(4.0f, d[1]), Ops::scale(5.0f, d[3])), d[5]);
  }
  /// y[a] = sum_j A^T[a][j] m[j]
  template <class Simd>
  static void output_rows(const typename Simd::Reg m[in], typename Simd::Reg y[out]) {
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
  template <class Simd>
  static void gather_columns(const float* x, typename Simd::Reg columns[in]) {
    Simd::deinterleave4x6(x, columns);
  }
  template <class Simd>
  static void scatter_row(const typename Simd::Reg y[out], float* x, int count) {
    Simd::interleave4_store(y, x, count);
  }
};

/// F(2x2, 3x3): 4x4 input tiles 2 apart, points 0, +-1 and infinity. 16 points instead of 36: less than half the
/// transformed weights to read, for layers whose weights, not arithmetic, limit them.
struct F2x2 {
  static constexpr int in = 4;
  static constexpr int out = 2;
  template <class Ops>
  static void input_rows(const typename Ops::Value d[in], typename Ops::Value o[in]) {
    o[0] = Ops::sub(d[0], d[2]);
    o[1] = Ops::add(d[1], d[2]);
    o[2] = Ops::sub(d[2], d[1]);
    o[3] = Ops::sub(d[1], d[3]);
  }
  template <class Simd>
  static void output_rows(const typename Simd::Reg m[in], typename Simd::Reg y[out]) {
    y[0] = Simd::add(Simd::add(m[0], m[1]), m[2]);
    y[1] = Simd::sub(Simd::sub(m[1], m[2]), m[3]);
  }
  template <class Simd>
  static void gather_columns(const float* x, typename Simd::Reg columns[in]) {
    Simd::deinterleave2x4(x, columns);
  }
  template <class Simd>
  static void scatter_row(const typename Simd::Reg y[out], float* x, int count) {
    Simd::interleave2_store(y, x, count);
  }
};

/// F(2x2, 5x5): the 6x6 input tiles of F(4x4, 3x3)'s points (the same B^T) for a 5x5 kernel, 2 apart.
struct F2x2Kernel5 {
  static constexpr int in = 6;
  static constexpr int out = 2;
  template <class Ops>
  static void input_rows(const typename Ops::Value d[in], typename Ops::Value o[in]) {
    F4x4::input_rows<Ops>(d, o);
  }
  /// A^T = [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 1]]
  template <class Simd>
  static void output_rows(const typename Simd::Reg m[in], typename Simd::Reg y[out]) {
    y[0] = Simd::add(Simd::add(Simd::add(m[0], m[1]), Simd::add(m[2], m[3])), m[4]);
    y[1] = Simd::add(Simd::fmadd(Simd::set1(2.0f), Simd::sub(m[3], m[4]), Simd::sub(m[1], m[2])), m[5]);
  }
  template <class Simd>
  static void gather_columns(const float* x, typename Simd::Reg columns[in]) {
    Simd::deinterleave2x6(x, columns);
  }
  template <class Simd>
  static void scatter_row(const typename Simd::Reg y[out], float* x, int count) {
    Simd::interleave2_store(y, x, count);
  }
};

/// Columns of a step's input rows: Simd::lanes tiles and the reach of gather_columns (AVX-512's F(4x4) reads a
/// whole register past the 66th column).
constexpr int kStepColumns = 80;

/// B^T d B for Simd::lanes tiles at a time (one tile per lane): the rows pass runs along the tile row's input rows,
/// then the tiles' columns are gathered into registers (a deinterleave) for the columns pass, and each value is
/// stored as a register into its packed GEMM panel.
template <class Simd, class V>
void winograd_input(const WinogradInputPlane& plane, int ty, int tx, int count, const WinogradPackedTiles& out,
                    int t0) {
  using Reg = typename Simd::Reg;
  constexpr int lanes = Simd::lanes;
  constexpr int span = V::out * lanes + V::in - V::out;
  constexpr int columns = (span + lanes - 1) / lanes * lanes;
  static_assert(columns <= kStepColumns);
  alignas(64) float rows[V::in][kStepColumns];
  alignas(64) float mixed[V::in][kStepColumns];
  for (int done = 0; done < count;) {
    const int t = t0 + done;
    const int lane = t % out.nr;
    int tiles = count - done < lanes ? count - done : lanes;
    if (tiles > out.nr - lane) tiles = out.nr - lane;  // a step stays inside one panel
    const int x0 = V::out * (tx + done) - plane.pad;
    for (int r = 0; r < V::in; ++r) {
      const int y = V::out * ty - plane.pad + r;
      if (y < 0 || y >= plane.height) {
        Simd::fill_zero(rows[r], columns);
      } else {
        Simd::copy_padded(plane.data + static_cast<std::size_t>(y) * plane.width, x0, columns, plane.width, rows[r]);
      }
    }
    for (int x = 0; x < columns; x += lanes) {
      Reg d[V::in];
      Reg m[V::in];
      for (int r = 0; r < V::in; ++r) d[r] = Simd::load(rows[r] + x);
      V::template input_rows<SimdOps<Simd>>(d, m);
      for (int i = 0; i < V::in; ++i) Simd::store(mixed[i] + x, m[i]);
    }
    float* target = out.base + static_cast<std::size_t>(t / out.nr) * out.panel_stride + lane;
    for (int i = 0; i < V::in; ++i) {
      Reg d[V::in];
      Reg v[V::in];
      V::template gather_columns<Simd>(mixed[i], d);
      V::template input_rows<SimdOps<Simd>>(d, v);
      for (int j = 0; j < V::in; ++j) Simd::store_first(target + (i * V::in + j) * out.point_stride, v[j], tiles);
    }
    done += tiles;
  }
}

/// A^T M A for Simd::lanes tiles at a time (one tile per lane), then bias and activation; each output row of those
/// tiles is interleaved into consecutive floats of the plane's row (cropped at its edges).
template <class Simd, class V, ActivationKind kind>
void winograd_output_activated(const WinogradProducts& products, int t0, const WinogradOutputPlane& plane, int ty,
                               int tx, int count) {
  using Reg = typename Simd::Reg;
  constexpr int lanes = Simd::lanes;
  const Reg bias = Simd::set1(plane.bias);
  const Reg slope = Simd::set1(plane.slope);
  for (int g = 0; g < count; g += lanes) {
    const int tiles = count - g < lanes ? count - g : lanes;
    const float* m = products.m + t0 + g;
    Reg columns[V::out][V::in];  // A^T applied down each column
    for (int j = 0; j < V::in; ++j) {
      Reg column[V::in];
      for (int i = 0; i < V::in; ++i) column[i] = Simd::load(m + (i * V::in + j) * products.point_stride);
      Reg y[V::out];
      V::template output_rows<Simd>(column, y);
      for (int a = 0; a < V::out; ++a) columns[a][j] = y[a];
    }
    const int x0 = V::out * (tx + g);
    const int valid = plane.width - x0 < V::out * tiles ? plane.width - x0 : V::out * tiles;
    for (int a = 0; a < V::out && V::out * ty + a < plane.height; ++a) {
      Reg y[V::out];
      V::template output_rows<Simd>(columns[a], y);
      for (int b = 0; b < V::out; ++b) y[b] = activate<Simd, kind>(Simd::add(y[b], bias), slope);
      V::template scatter_row<Simd>(y, plane.data + static_cast<std::size_t>(V::out * ty + a) * plane.width + x0,
                                    valid);
    }
  }
}

template <class Simd, class V>
void winograd_output(const WinogradProducts& products, int t0, const WinogradOutputPlane& plane, int ty, int tx,
                     int count) {
  with_simd_activation(plane.activation, [&]<ActivationKind kind>() {
    winograd_output_activated<Simd, V, kind>(products, t0, plane, ty, tx, count);
  });
}

}  // namespace
}  // namespace corgy::blas::kernels
