// The SIMD operations the CPU kernel templates are written over, for AVX-512F: 16 floats per register (compiled with
// -mavx512f -mfma). Include only from kernels/*_avx512.cpp, which are compiled for this instruction set (see
// sgemm_micro_kernel.h).
#pragma once

#include <immintrin.h>

#include <cstdint>

// GCC 12 reports a false -Wmaybe-uninitialized (at -O2/-O3) or -Wuninitialized (at -Og) inside avx512fintrin.h's
// intrinsics that start from _mm512_undefined_ps() (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)  // clang has no -Wmaybe-uninitialized, and no such report
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace corgy::blas::kernels {
namespace {

struct Avx512 {
  using Reg = __m512;
  static constexpr int lanes = 16;
  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg load(const float* p) { return _mm512_loadu_ps(p); }
  static Reg broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static Reg fmadd(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  static Reg sub(Reg a, Reg b) { return _mm512_sub_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
  static Reg set1(float x) { return _mm512_set1_ps(x); }
  static Reg max(Reg a, Reg b) { return _mm512_max_ps(a, b); }
  static Reg min(Reg a, Reg b) { return _mm512_min_ps(a, b); }
  static void store(float* p, Reg v) { _mm512_storeu_ps(p, v); }
  static Reg div(Reg a, Reg b) { return _mm512_div_ps(a, b); }
  /// if_less in the lanes where x < limit, otherwise elsewhere (NaN compares false).
  static Reg select_less(Reg x, Reg limit, Reg if_less, Reg otherwise) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, limit, _CMP_LT_OQ), otherwise, if_less);
  }
  /// r[i][c] becomes r[c][i]: a 16 x 16 block transposed in registers (pairs of rows interleaved, then quads, then
  /// 128-bit quarters twice; 64 shuffles).
  static void transpose(Reg r[16]) {
    Reg t[16];
    for (int i = 0; i < 8; ++i) {
      t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    // r[4 i + e], quarter k: rows 4 i .. 4 i + 3 of column 4 k + e.
    for (int i = 0; i < 4; ++i) {
      const __m512d a = _mm512_castps_pd(t[4 * i]);
      const __m512d b = _mm512_castps_pd(t[4 * i + 2]);
      const __m512d c = _mm512_castps_pd(t[4 * i + 1]);
      const __m512d d = _mm512_castps_pd(t[4 * i + 3]);
      r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
      r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
      r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d));
      r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d));
    }
    // t[e]: rows 0-3 and 4-7 of columns e and 8 + e; t[4 + e] of columns 4 + e and 12 + e; t[8 + e], t[12 + e]
    // the same of rows 8-15.
    for (int e = 0; e < 4; ++e) {
      t[e] = _mm512_shuffle_f32x4(r[e], r[4 + e], 0x88);
      t[4 + e] = _mm512_shuffle_f32x4(r[e], r[4 + e], 0xDD);
      t[8 + e] = _mm512_shuffle_f32x4(r[8 + e], r[12 + e], 0x88);
      t[12 + e] = _mm512_shuffle_f32x4(r[8 + e], r[12 + e], 0xDD);
    }
    for (int e = 0; e < 4; ++e) {
      r[e] = _mm512_shuffle_f32x4(t[e], t[8 + e], 0x88);
      r[8 + e] = _mm512_shuffle_f32x4(t[e], t[8 + e], 0xDD);
      r[4 + e] = _mm512_shuffle_f32x4(t[4 + e], t[12 + e], 0x88);
      r[12 + e] = _mm512_shuffle_f32x4(t[4 + e], t[12 + e], 0xDD);
    }
  }
  /// even[k] = x[2 k], odd[k] = x[2 k + 1] for k < 16 (reads x[0, 32)).
  static void deinterleave2(const float* x, Reg& even, Reg& odd) {
    const __m512i even_index = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd_index = _mm512_add_epi32(even_index, _mm512_set1_epi32(1));
    const Reg low = load(x);
    const Reg high = load(x + 16);
    even = _mm512_permutex2var_ps(low, even_index, high);
    odd = _mm512_permutex2var_ps(low, odd_index, high);
  }
  /// The same from row[x, x + 32), zero outside [0, width) (masked loads: the lanes outside are never read).
  static void deinterleave2_padded(const float* row, int x, int width, Reg& even, Reg& odd) {
    const __m512i even_index = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd_index = _mm512_add_epi32(even_index, _mm512_set1_epi32(1));
    const Reg low = load_padded(row, x, width);
    const Reg high = load_padded(row, x + 16, width);
    even = _mm512_permutex2var_ps(low, even_index, high);
    odd = _mm512_permutex2var_ps(low, odd_index, high);
  }
  static Reg floor(Reg x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
  /// 2^n for integer-valued n in [-126, 127], built in the exponent bits.
  static Reg pow2(Reg n) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
  }

  /// Lanes [0, count) of 16 (count may be <= 0 or > 16).
  static __mmask16 first_lanes(int count) {
    return count >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>(count <= 0 ? 0u : (1u << count) - 1u);
  }
  static void fill_zero(float* target, int count) {
    for (int i = 0; i < count; i += 16) _mm512_mask_storeu_ps(target + i, first_lanes(count - i), _mm512_setzero_ps());
  }
  /// Stores lanes [0, count) of v.
  static void store_first(float* p, Reg v, int count) { _mm512_mask_storeu_ps(p, first_lanes(count), v); }
  /// Stores lanes [begin, end) of v, lane begin at `at` (the masked store starts begin lanes before it, and touches
  /// nothing there).
  static void store_lanes(float* at, Reg v, int begin, int end) {
    float* lane_zero = reinterpret_cast<float*>(reinterpret_cast<std::uintptr_t>(at) - sizeof(float) * begin);
    _mm512_mask_storeu_ps(lane_zero, static_cast<__mmask16>(first_lanes(end) & ~first_lanes(begin)), v);
  }
  /// Lanes row[x + l] where 0 <= x + l < width, zero elsewhere: a register of a row with its zero padding (masked-off
  /// lanes are never read, so x may be negative or the register may reach past the row).
  static Reg load_padded(const float* row, int x, int width) { return load_masked(row + x, padded_lanes(x, width)); }
  /// The lanes of load_padded(row, x, width), for loads of every row at that column (padded_lanes once, not per row).
  using Mask = __mmask16;
  static Mask padded_lanes(int x, int width) {
    return static_cast<__mmask16>(first_lanes(width - x) & ~first_lanes(-x));
  }
  static Reg load_masked(const float* p, Mask lanes) { return _mm512_maskz_loadu_ps(lanes, p); }
  /// deinterleave2 with masked loads (padded_lanes of its two registers): a row's two column phases at its edges.
  static void deinterleave2_masked(const float* x, Mask low_lanes, Mask high_lanes, Reg& even, Reg& odd) {
    const __m512i even_index = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd_index = _mm512_add_epi32(even_index, _mm512_set1_epi32(1));
    const Reg low = load_masked(x, low_lanes);
    const Reg high = load_masked(x + 16, high_lanes);
    even = _mm512_permutex2var_ps(low, even_index, high);
    odd = _mm512_permutex2var_ps(low, odd_index, high);
  }

  /// out[s][k] = x[4 k + s] for s < 6, k < 16 (reads x[0, 80)): the columns of 16 consecutive 6x6 tiles of a row
  /// whose tiles start 4 apart. Two rounds of two-source permutes.
  static void deinterleave4x6(const float* x, Reg out[6]) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    const Reg evens_low = _mm512_permutex2var_ps(load(x), even, load(x + 16));        // x[0], x[2], ... x[30]
    const Reg odds_low = _mm512_permutex2var_ps(load(x), odd, load(x + 16));          // x[1], x[3], ... x[31]
    const Reg evens_high = _mm512_permutex2var_ps(load(x + 32), even, load(x + 48));  // x[32], x[34], ...
    const Reg odds_high = _mm512_permutex2var_ps(load(x + 32), odd, load(x + 48));
    out[0] = _mm512_permutex2var_ps(evens_low, even, evens_high);  // x[0], x[4], ... x[60]
    out[2] = _mm512_permutex2var_ps(evens_low, odd, evens_high);   // x[2], x[6], ...
    out[1] = _mm512_permutex2var_ps(odds_low, even, odds_high);    // x[1], x[5], ...
    out[3] = _mm512_permutex2var_ps(odds_low, odd, odds_high);     // x[3], x[7], ...
    // Columns 4 and 5 are columns 0 and 1 of the next tile: shift by one lane, the last from x[64], x[65].
    const __m512i next = _mm512_setr_epi32(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);      // .., x[64]
    const __m512i next_odd = _mm512_setr_epi32(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 17);  // .., x[65]
    const Reg tail = load(x + 64);
    out[4] = _mm512_permutex2var_ps(out[0], next, tail);
    out[5] = _mm512_permutex2var_ps(out[1], next_odd, tail);
  }

  /// out[s][k] = x[2 k + s] for s < 4, k < 16 (reads x[0, 34)): the columns of 16 consecutive 4x4 tiles of a row
  /// whose tiles start 2 apart.
  static void deinterleave2x4(const float* x, Reg out[4]) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    out[0] = _mm512_permutex2var_ps(load(x), even, load(x + 16));
    out[1] = _mm512_permutex2var_ps(load(x), odd, load(x + 16));
    out[2] = _mm512_permutex2var_ps(load(x + 2), even, load(x + 18));
    out[3] = _mm512_permutex2var_ps(load(x + 2), odd, load(x + 18));
  }

  /// out[s][k] = x[2 k + s] for s < 6, k < 16 (reads x[0, 36)): 6x6 tiles that start 2 apart.
  static void deinterleave2x6(const float* x, Reg out[6]) {
    deinterleave2x4(x, out);
    deinterleave2x4(x + 2, out + 2);  // columns 2..5: 2 and 3 again (the same values), then 4 and 5
  }

  /// x[2 k + b] = in[b][k] for 2 k + b < count (count <= 32).
  static void interleave2_store(const Reg in[2], float* x, int count) {
    const __m512i zip_low = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i zip_high = _mm512_add_epi32(zip_low, _mm512_set1_epi32(8));
    store_first(x, _mm512_permutex2var_ps(in[0], zip_low, in[1]), count);
    store_first(x + 16, _mm512_permutex2var_ps(in[0], zip_high, in[1]), count - 16);
  }

  /// x[4 k + b] = in[b][k] for 4 k + b < count (count <= 64): the rows of 16 consecutive 4x4 output tiles, as the
  /// 64 consecutive floats of one output row. The inverse of deinterleave4x6's first four columns.
  static void interleave4_store(const Reg in[4], float* x, int count) {
    const __m512i zip_low = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i zip_high = _mm512_add_epi32(zip_low, _mm512_set1_epi32(8));
    const Reg even_low = _mm512_permutex2var_ps(in[0], zip_low, in[2]);  // in0[0], in2[0], in0[1], in2[1], ...
    const Reg even_high = _mm512_permutex2var_ps(in[0], zip_high, in[2]);
    const Reg odd_low = _mm512_permutex2var_ps(in[1], zip_low, in[3]);
    const Reg odd_high = _mm512_permutex2var_ps(in[1], zip_high, in[3]);
    store_first(x, _mm512_permutex2var_ps(even_low, zip_low, odd_low), count);
    store_first(x + 16, _mm512_permutex2var_ps(even_low, zip_high, odd_low), count - 16);
    store_first(x + 32, _mm512_permutex2var_ps(even_high, zip_low, odd_high), count - 32);
    store_first(x + 48, _mm512_permutex2var_ps(even_high, zip_high, odd_high), count - 48);
  }

  /// Masked loads never touch the lanes outside [0, width), so reading the padding needs no branch.
  static void copy_padded(const float* source, int first, int count, int width, float* target) {
    for (int i = 0; i < count; i += 16) {
      const int x = first + i;
      const __mmask16 inside = static_cast<__mmask16>(first_lanes(width - x) & ~first_lanes(-x));
      const __m512 values = _mm512_maskz_loadu_ps(inside & first_lanes(count - i), source + x);
      _mm512_mask_storeu_ps(target + i, first_lanes(count - i), values);
    }
  }
  /// target[j] = source[first + 2 j] for j < count, 0 where the index is outside [0, width): a row of a stride-2
  /// column matrix (implicit im2col), its padding and its ends by masked loads rather than one value at a time.
  static void copy_padded_even(const float* source, int first, int count, int width, float* target) {
    const __m512i even_index = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (int j = 0; j < count; j += 16) {
      const int x = first + 2 * j;
      const Reg low = load_padded(source, x, width);
      const Reg high = load_padded(source, x + 16, width);
      store_first(target + j, _mm512_permutex2var_ps(low, even_index, high), count - j);
    }
  }
  /// even[j] = source[first + 2 j], odd[j] = source[first + 2 j + 1] for j < count, 0 where the index is outside
  /// [0, width): a stride-2 row split into its two column phases, the padding by masked loads.
  static void copy_padded_deinterleaved(const float* source, int first, int count, int width, float* even, float* odd) {
    const __m512i even_index = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd_index = _mm512_add_epi32(even_index, _mm512_set1_epi32(1));
    for (int j = 0; j < count; j += 16) {
      const int x = first + 2 * j;
      const Reg low = load_padded(source, x, width);
      const Reg high = load_padded(source, x + 16, width);
      store_first(even + j, _mm512_permutex2var_ps(low, even_index, high), count - j);
      store_first(odd + j, _mm512_permutex2var_ps(low, odd_index, high), count - j);
    }
  }
};

}  // namespace
}  // namespace corgy::blas::kernels
