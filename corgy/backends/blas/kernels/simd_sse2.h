// The SIMD operations the CPU kernel templates are written over, for SSE2, the x86-64 baseline: 4 floats per register.
// Include only from kernels/*_generic.cpp, which are compiled for this instruction set (see sgemm_micro_kernel.h).
#pragma once

#include <emmintrin.h>

namespace corgy::blas::kernels {
namespace {

struct Sse2 {
  using Reg = __m128;
  static constexpr int lanes = 4;
  static Reg zero() { return _mm_setzero_ps(); }
  static Reg load(const float* p) { return _mm_loadu_ps(p); }
  static Reg broadcast(const float* p) { return _mm_set1_ps(*p); }
  static Reg fmadd(Reg a, Reg b, Reg c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
  static Reg add(Reg a, Reg b) { return _mm_add_ps(a, b); }
  static Reg sub(Reg a, Reg b) { return _mm_sub_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm_mul_ps(a, b); }
  static Reg set1(float x) { return _mm_set1_ps(x); }
  static Reg max(Reg a, Reg b) { return _mm_max_ps(a, b); }
  static Reg min(Reg a, Reg b) { return _mm_min_ps(a, b); }
  static void store(float* p, Reg v) { _mm_storeu_ps(p, v); }
  static Reg div(Reg a, Reg b) { return _mm_div_ps(a, b); }
  /// if_less in the lanes where x < limit, otherwise elsewhere (NaN compares false).
  static Reg select_less(Reg x, Reg limit, Reg if_less, Reg otherwise) {
    const Reg less = _mm_cmplt_ps(x, limit);
    return _mm_or_ps(_mm_and_ps(less, if_less), _mm_andnot_ps(less, otherwise));
  }
  /// even[k] = x[2 k], odd[k] = x[2 k + 1] for k < 4 (reads x[0, 8)).
  static void deinterleave2(const float* x, Reg& even, Reg& odd) {
    even = _mm_shuffle_ps(load(x), load(x + 4), 0x88);
    odd = _mm_shuffle_ps(load(x), load(x + 4), 0xDD);
  }
  /// r[i][c] becomes r[c][i]: a 4 x 4 block transposed in registers.
  static void transpose(Reg r[4]) { _MM_TRANSPOSE4_PS(r[0], r[1], r[2], r[3]); }
  /// SSE2 has no rounding instruction: truncate, then step down where truncation rounded up (|x| < 2^31).
  static Reg floor(Reg x) {
    const Reg truncated = _mm_cvtepi32_ps(_mm_cvttps_epi32(x));
    return _mm_sub_ps(truncated, _mm_and_ps(_mm_cmpgt_ps(truncated, x), _mm_set1_ps(1.0f)));
  }
  /// 2^n for integer-valued n in [-126, 127], built in the exponent bits.
  static Reg pow2(Reg n) {
    return _mm_castsi128_ps(_mm_slli_epi32(_mm_add_epi32(_mm_cvtps_epi32(n), _mm_set1_epi32(127)), 23));
  }

  static void fill_zero(float* target, int count) {
    for (int i = 0; i < count; ++i) target[i] = 0.0f;
  }
  /// Stores lanes [0, count) of v.
  static void store_first(float* p, Reg v, int count) {
    alignas(16) float lanes_of_v[4];
    _mm_store_ps(lanes_of_v, v);
    for (int i = 0; i < count && i < 4; ++i) p[i] = lanes_of_v[i];
  }
  /// Stores lanes [begin, end) of v, lane begin at `at`.
  static void store_lanes(float* at, Reg v, int begin, int end) {
    alignas(16) float lanes_of_v[4];
    _mm_store_ps(lanes_of_v, v);
    for (int i = begin; i < end && i < 4; ++i) at[i - begin] = lanes_of_v[i];
  }
  /// Lanes row[x + l] where 0 <= x + l < width, zero elsewhere.
  static Reg load_padded(const float* row, int x, int width) {
    alignas(16) float lanes_of_v[4] = {};
    for (int i = 0; i < 4; ++i) {
      if (x + i >= 0 && x + i < width) lanes_of_v[i] = row[x + i];
    }
    return _mm_load_ps(lanes_of_v);
  }

  /// out[s][k] = x[4 k + s] for s < 6, k < 4.
  static void deinterleave4x6(const float* x, Reg out[6]) {
    for (int s = 0; s < 6; ++s) out[s] = _mm_setr_ps(x[s], x[4 + s], x[8 + s], x[12 + s]);
  }

  /// out[s][k] = x[2 k + s] for s < 4, k < 4.
  static void deinterleave2x4(const float* x, Reg out[4]) {
    for (int s = 0; s < 4; ++s) out[s] = _mm_setr_ps(x[s], x[2 + s], x[4 + s], x[6 + s]);
  }

  /// out[s][k] = x[2 k + s] for s < 6: 6x6 tiles that start 2 apart.
  static void deinterleave2x6(const float* x, Reg out[6]) {
    deinterleave2x4(x, out);
    deinterleave2x4(x + 2, out + 2);  // columns 2..5: 2 and 3 again (the same values), then 4 and 5
  }

  /// x[2 k + b] = in[b][k] for 2 k + b < count (count <= 8).
  static void interleave2_store(const Reg in[2], float* x, int count) {
    alignas(16) float rows[2][4];
    for (int b = 0; b < 2; ++b) _mm_store_ps(rows[b], in[b]);
    for (int i = 0; i < count; ++i) x[i] = rows[i % 2][i / 2];
  }

  /// x[4 k + b] = in[b][k] for 4 k + b < count (count <= 16).
  static void interleave4_store(const Reg in[4], float* x, int count) {
    alignas(16) float rows[4][4];
    for (int b = 0; b < 4; ++b) _mm_store_ps(rows[b], in[b]);
    for (int i = 0; i < count; ++i) x[i] = rows[i % 4][i / 4];
  }

  static void copy_padded(const float* source, int first, int count, int width, float* target) {
    for (int i = 0; i < count; ++i) {
      const int x = first + i;
      target[i] = x >= 0 && x < width ? source[x] : 0.0f;
    }
  }
  /// target[j] = source[first + 2 j] for j < count, 0 outside [0, width).
  static void copy_padded_even(const float* source, int first, int count, int width, float* target) {
    for (int j = 0; j < count; ++j) {
      const int x = first + 2 * j;
      target[j] = x >= 0 && x < width ? source[x] : 0.0f;
    }
  }
  /// even[j] = source[first + 2 j], odd[j] = source[first + 2 j + 1] for j < count, 0 outside [0, width).
  static void copy_padded_deinterleaved(const float* source, int first, int count, int width, float* even, float* odd) {
    for (int j = 0; j < count; ++j) {
      const int x = first + 2 * j;
      even[j] = x >= 0 && x < width ? source[x] : 0.0f;
      odd[j] = x + 1 >= 0 && x + 1 < width ? source[x + 1] : 0.0f;
    }
  }
};

}  // namespace
}  // namespace corgy::blas::kernels
