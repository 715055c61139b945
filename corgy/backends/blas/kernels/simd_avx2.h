// The SIMD operations the CPU kernel templates are written over, for AVX2 + FMA: 8 floats per register (compiled with
// -mavx2 -mfma). Include only from kernels/*_avx2.cpp, which are compiled for this instruction set (see
// sgemm_micro_kernel.h).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace corgy::blas::kernels {
namespace {

struct Avx2 {
  using Reg = __m256;
  static constexpr int lanes = 8;
  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static Reg broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static Reg fmadd(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
  static Reg sub(Reg a, Reg b) { return _mm256_sub_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
  static Reg set1(float x) { return _mm256_set1_ps(x); }
  static Reg max(Reg a, Reg b) { return _mm256_max_ps(a, b); }
  static Reg min(Reg a, Reg b) { return _mm256_min_ps(a, b); }
  static void store(float* p, Reg v) { _mm256_storeu_ps(p, v); }
  static Reg div(Reg a, Reg b) { return _mm256_div_ps(a, b); }
  /// if_less in the lanes where x < limit, otherwise elsewhere (NaN compares false).
  static Reg select_less(Reg x, Reg limit, Reg if_less, Reg otherwise) {
    return _mm256_blendv_ps(otherwise, if_less, _mm256_cmp_ps(x, limit, _CMP_LT_OQ));
  }
  /// even[k] = x[2 k], odd[k] = x[2 k + 1] for k < 8 (reads x[0, 16)): shuffles within each 128-bit half, then the
  /// halves' 64-bit quarters put in order.
  static void deinterleave2(const float* x, Reg& even, Reg& odd) {
    const Reg low = load(x);
    const Reg high = load(x + 8);
    even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(low, high, 0x88)), 0xD8));
    odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(low, high, 0xDD)), 0xD8));
  }
  /// r[i][c] becomes r[c][i]: an 8 x 8 block transposed in registers (24 shuffles).
  static void transpose(Reg r[8]) {
    Reg t[8];
    for (int i = 0; i < 4; ++i) {
      t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    // r[4 i + e], half k: rows 4 i .. 4 i + 3 of column 4 k + e.
    for (int i = 0; i < 2; ++i) {
      const __m256d a = _mm256_castps_pd(t[4 * i]);
      const __m256d b = _mm256_castps_pd(t[4 * i + 2]);
      const __m256d c = _mm256_castps_pd(t[4 * i + 1]);
      const __m256d d = _mm256_castps_pd(t[4 * i + 3]);
      r[4 * i] = _mm256_castpd_ps(_mm256_unpacklo_pd(a, b));
      r[4 * i + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(a, b));
      r[4 * i + 2] = _mm256_castpd_ps(_mm256_unpacklo_pd(c, d));
      r[4 * i + 3] = _mm256_castpd_ps(_mm256_unpackhi_pd(c, d));
    }
    for (int e = 0; e < 4; ++e) {
      t[e] = _mm256_permute2f128_ps(r[e], r[4 + e], 0x20);
      t[4 + e] = _mm256_permute2f128_ps(r[e], r[4 + e], 0x31);
    }
    for (int i = 0; i < 8; ++i) r[i] = t[i];
  }
  static Reg floor(Reg x) { return _mm256_floor_ps(x); }
  /// 2^n for integer-valued n in [-126, 127], built in the exponent bits.
  static Reg pow2(Reg n) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
  }

  /// All-ones in lanes i with low <= i < high (of 8).
  static __m256i lanes_between(int low, int high) {
    const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i above_low = _mm256_cmpgt_epi32(index, _mm256_set1_epi32(low - 1));
    const __m256i below_high = _mm256_cmpgt_epi32(_mm256_set1_epi32(high), index);
    return _mm256_and_si256(above_low, below_high);
  }
  static void fill_zero(float* target, int count) {
    for (int i = 0; i < count; i += 8)
      _mm256_maskstore_ps(target + i, lanes_between(0, count - i), _mm256_setzero_ps());
  }
  /// Stores lanes [0, count) of v.
  static void store_first(float* p, Reg v, int count) { _mm256_maskstore_ps(p, lanes_between(0, count), v); }
  /// Stores lanes [begin, end) of v, lane begin at `at` (the masked store starts begin lanes before it, and touches
  /// nothing there).
  static void store_lanes(float* at, Reg v, int begin, int end) {
    float* lane_zero = reinterpret_cast<float*>(reinterpret_cast<std::uintptr_t>(at) - sizeof(float) * begin);
    _mm256_maskstore_ps(lane_zero, lanes_between(begin, end), v);
  }
  /// Lanes row[x + l] where 0 <= x + l < width, zero elsewhere (masked-off lanes are never read).
  static Reg load_padded(const float* row, int x, int width) { return load_masked(row + x, padded_lanes(x, width)); }
  /// The lanes of load_padded(row, x, width), for loads of every row at that column (padded_lanes once, not per row).
  using Mask = __m256i;
  static Mask padded_lanes(int x, int width) { return lanes_between(-x, width - x); }
  static Reg load_masked(const float* p, Mask lanes) { return _mm256_maskload_ps(p, lanes); }

  /// out[s][k] = x[4 k + s] for s < 6, k < 8 (reads x[0, 34)).
  static void deinterleave4x6(const float* x, Reg out[6]) {
    const __m256i index = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    for (int s = 0; s < 6; ++s) out[s] = _mm256_i32gather_ps(x + s, index, 4);
  }

  /// out[s][k] = x[2 k + s] for s < 4, k < 8 (reads x[0, 18)).
  static void deinterleave2x4(const float* x, Reg out[4]) {
    const __m256i index = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    for (int s = 0; s < 4; ++s) out[s] = _mm256_i32gather_ps(x + s, index, 4);
  }

  /// out[s][k] = x[2 k + s] for s < 6: 6x6 tiles that start 2 apart.
  static void deinterleave2x6(const float* x, Reg out[6]) {
    deinterleave2x4(x, out);
    deinterleave2x4(x + 2, out + 2);  // columns 2..5: 2 and 3 again (the same values), then 4 and 5
  }

  /// x[2 k + b] = in[b][k] for 2 k + b < count (count <= 16).
  static void interleave2_store(const Reg in[2], float* x, int count) {
    alignas(32) float rows[2][8];
    for (int b = 0; b < 2; ++b) _mm256_store_ps(rows[b], in[b]);
    for (int i = 0; i < count; ++i) x[i] = rows[i % 2][i / 2];
  }

  /// x[4 k + b] = in[b][k] for 4 k + b < count (count <= 32).
  static void interleave4_store(const Reg in[4], float* x, int count) {
    alignas(32) float rows[4][8];
    for (int b = 0; b < 4; ++b) _mm256_store_ps(rows[b], in[b]);
    for (int i = 0; i < count; ++i) x[i] = rows[i % 4][i / 4];
  }

  /// The even lanes of the 16 floats low, high (low[0], low[2], ..., high[6]), and the odd ones: a stride-2 row's
  /// two column phases.
  static Reg even_lanes(Reg low, Reg high) {
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(low, high, 0x88)), 0xD8));
  }
  static Reg odd_lanes(Reg low, Reg high) {
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(low, high, 0xDD)), 0xD8));
  }
  /// even[k] = row[x + 2 k], odd[k] = row[x + 2 k + 1] for k < 8, zero outside [0, width) (masked loads).
  /// deinterleave2 with masked loads (padded_lanes of its two registers): a row's two column phases at its edges.
  static void deinterleave2_masked(const float* x, Mask low_lanes, Mask high_lanes, Reg& even, Reg& odd) {
    const Reg low = load_masked(x, low_lanes);
    const Reg high = load_masked(x + 8, high_lanes);
    even = even_lanes(low, high);
    odd = odd_lanes(low, high);
  }
  static void deinterleave2_padded(const float* row, int x, int width, Reg& even, Reg& odd) {
    const Reg low = load_padded(row, x, width);
    const Reg high = load_padded(row, x + 8, width);
    even = even_lanes(low, high);
    odd = odd_lanes(low, high);
  }
  /// Masked loads never touch the lanes outside [0, width), so reading the padding needs no branch.
  static void copy_padded(const float* source, int first, int count, int width, float* target) {
    for (int i = 0; i < count; i += 8) {
      const int x = first + i;
      const __m256i stored = lanes_between(0, count - i);
      const __m256i inside = _mm256_and_si256(lanes_between(-x, width - x), stored);
      _mm256_maskstore_ps(target + i, stored, _mm256_maskload_ps(source + x, inside));
    }
  }
  /// target[j] = source[first + 2 j] for j < count, 0 where the index is outside [0, width): a row of a stride-2
  /// column matrix (implicit im2col), its padding and its ends by masked loads rather than one value at a time.
  static void copy_padded_even(const float* source, int first, int count, int width, float* target) {
    for (int j = 0; j < count; j += 8) {
      const int x = first + 2 * j;
      const Reg low = load_padded(source, x, width);
      const Reg high = load_padded(source, x + 8, width);
      store_first(target + j, even_lanes(low, high), count - j);
    }
  }
  /// even[j] = source[first + 2 j], odd[j] = source[first + 2 j + 1] for j < count, 0 where the index is outside
  /// [0, width): a stride-2 row split into its two column phases, the padding by masked loads.
  static void copy_padded_deinterleaved(const float* source, int first, int count, int width, float* even, float* odd) {
    for (int j = 0; j < count; j += 8) {
      const int x = first + 2 * j;
      const Reg low = load_padded(source, x, width);
      const Reg high = load_padded(source, x + 8, width);
      store_first(even + j, even_lanes(low, high), count - j);
      store_first(odd + j, odd_lanes(low, high), count - j);
    }
  }
};

}  // namespace
}  // namespace corgy::blas::kernels
