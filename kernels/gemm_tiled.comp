#version 450
// gemm_tiled: C = activation(op(A) x op(B) + bias) for a batch of matrices, fp32.
//
// Each workgroup computes a TILE_M x TILE_N block of C. It walks K in steps of TILE_K, staging the A and B
// tiles in shared memory (two buffers, so one barrier per step: threads fill one while computing from the
// other), and each thread accumulates a THREAD_M x THREAD_N block of C in registers (register blocking).
// A thread's rows and columns are groups of 4 spread TILE_M / (THREAD_M / 4) apart, so a warp reads shared
// memory as consecutive vec4s without bank conflicts. Global reads are vec4 when the host says rows are
// 16-byte aligned (A_VEC4, B_VEC4); every read and write is bounds-checked, so any M, N, K works.
//
// Batching: workgroup z = image * groups + group. A advances by a_group_stride per group (weights are shared
// by the images), B and C by their image and group strides. Convolution: A = weights (Cout/g x K),
// B = im2col columns (K x pixels), C = output planes, bias per row. Linear: bias per column.
#extension GL_EXT_control_flow_attributes : require
#extension GL_GOOGLE_include_directive : require
#include "activation_functions.glsl"

// Mirrors corgy::vulkan::GemmConstant (the ids) and corgy::vulkan::GemmTileShape (the values).
layout(constant_id = 0) const uint TILE_M = 128;
layout(constant_id = 1) const uint TILE_N = 128;
layout(constant_id = 2) const uint TILE_K = 8;
layout(constant_id = 3) const uint THREAD_M = 8;
layout(constant_id = 4) const uint THREAD_N = 8;
layout(constant_id = 5) const bool A_TRANSPOSED = false;  // A is stored K x M
layout(constant_id = 6) const bool B_TRANSPOSED = false;  // B is stored N x K
layout(constant_id = 7) const bool A_VEC4 = false;
layout(constant_id = 8) const bool B_VEC4 = false;
layout(constant_id = 9) const bool C_VEC4 = false;
// = (TILE_M / THREAD_M) * (TILE_N / THREAD_N), set by the host.
layout(local_size_x_id = 10) in;

layout(binding = 0) readonly buffer MatrixA { float a[]; };
layout(binding = 0) readonly buffer MatrixA4 { vec4 a4[]; };
layout(binding = 1) readonly buffer MatrixB { float b[]; };
layout(binding = 1) readonly buffer MatrixB4 { vec4 b4[]; };
layout(binding = 2) writeonly buffer MatrixC { float c[]; };
layout(binding = 2) writeonly buffer MatrixC4 { vec4 c4[]; };
layout(binding = 3) readonly buffer Bias { float bias[]; };

const uint BIAS_NONE = 0;
const uint BIAS_PER_ROW = 1;
const uint BIAS_PER_COLUMN = 2;

// Mirrors corgy::vulkan::GemmParams. Leading dimensions are in floats, as stored (before op()).
layout(push_constant) uniform Params {
  uint M;
  uint N;
  uint K;
  uint lda;
  uint ldb;
  uint ldc;
  uint groups;
  uint a_group_stride;
  uint b_image_stride;
  uint b_group_stride;
  uint c_image_stride;
  uint c_group_stride;
  uint bias_mode;
  uint activation;
  float slope;
} p;

const uint THREADS_M = TILE_M / THREAD_M;
const uint THREADS_N = TILE_N / THREAD_N;
const uint THREADS = THREADS_M * THREADS_N;
const uint CHUNKS_M = THREAD_M / 4;
const uint CHUNKS_N = THREAD_N / 4;
const uint TILE_M4 = TILE_M / 4;
const uint TILE_N4 = TILE_N / 4;
// vec4 units of a tile each thread moves per step (the host makes these whole numbers).
const uint A_LOADS = TILE_M * TILE_K / (4 * THREADS);
const uint B_LOADS = TILE_N * TILE_K / (4 * THREADS);

// a_tile[buffer][k][m / 4] holds A(m .. m+3, k): M runs fastest whichever way A is stored.
shared vec4 a_tile[2 * TILE_K * TILE_M4];
shared vec4 b_tile[2 * TILE_K * TILE_N4];

uint a_base;
uint b_base;

float a_at(uint m, uint k) {
  if (m >= p.M || k >= p.K) return 0.0;
  return A_TRANSPOSED ? a[a_base + k * p.lda + m] : a[a_base + m * p.lda + k];
}

float b_at(uint k, uint n) {
  if (k >= p.K || n >= p.N) return 0.0;
  return B_TRANSPOSED ? b[b_base + n * p.ldb + k] : b[b_base + k * p.ldb + n];
}

// Four consecutive elements along the stored rows of A, starting at (m, k): along K, or along M if transposed.
vec4 fetch_a(uint m, uint k) {
  if (A_VEC4) {
    // Rows are whole vec4s: a group of four is entirely inside the matrix or entirely outside.
    if (m >= p.M || k >= p.K) return vec4(0.0);
    return A_TRANSPOSED ? a4[(a_base + k * p.lda + m) / 4] : a4[(a_base + m * p.lda + k) / 4];
  }
  if (A_TRANSPOSED) return vec4(a_at(m, k), a_at(m + 1, k), a_at(m + 2, k), a_at(m + 3, k));
  return vec4(a_at(m, k), a_at(m, k + 1), a_at(m, k + 2), a_at(m, k + 3));
}

vec4 fetch_b(uint k, uint n) {
  if (B_VEC4) {
    if (k >= p.K || n >= p.N) return vec4(0.0);
    return B_TRANSPOSED ? b4[(b_base + n * p.ldb + k) / 4] : b4[(b_base + k * p.ldb + n) / 4];
  }
  if (B_TRANSPOSED) return vec4(b_at(k, n), b_at(k + 1, n), b_at(k + 2, n), b_at(k + 3, n));
  return vec4(b_at(k, n), b_at(k, n + 1), b_at(k, n + 2), b_at(k, n + 3));
}

// Unit u of the A tile at (m0, k0): which four elements it is, depending on how A is stored.
void a_unit_position(uint u, out uint m, out uint k) {
  if (A_TRANSPOSED) {
    k = u / TILE_M4;
    m = (u % TILE_M4) * 4;
  } else {
    m = u / (TILE_K / 4);
    k = (u % (TILE_K / 4)) * 4;
  }
}

void b_unit_position(uint u, out uint k, out uint n) {
  if (B_TRANSPOSED) {
    n = u / (TILE_K / 4);
    k = (u % (TILE_K / 4)) * 4;
  } else {
    k = u / TILE_N4;
    n = (u % TILE_N4) * 4;
  }
}

// The vec4 unit l of this thread's share of the A and B tiles at (m0, n0, k0), read from global memory.
vec4 fetch_a_unit(uint l, uint m0, uint k0) {
  uint m, k;
  a_unit_position(gl_LocalInvocationIndex + l * THREADS, m, k);
  return fetch_a(m0 + m, k0 + k);
}

vec4 fetch_b_unit(uint l, uint n0, uint k0) {
  uint k, n;
  b_unit_position(gl_LocalInvocationIndex + l * THREADS, k, n);
  return fetch_b(k0 + k, n0 + n);
}

// ... and written to shared-memory stage `slot`, M (or N) running fastest.
void store_a_unit(uint l, uint slot, vec4 values) {
  uint m, k;
  a_unit_position(gl_LocalInvocationIndex + l * THREADS, m, k);
  const uint offset = slot * TILE_K * TILE_M4;
  if (A_TRANSPOSED) {
    a_tile[offset + k * TILE_M4 + m / 4] = values;
  } else {
    [[unroll]] for (uint i = 0; i < 4; ++i) a_tile[offset + (k + i) * TILE_M4 + m / 4][m % 4] = values[i];
  }
}

void store_b_unit(uint l, uint slot, vec4 values) {
  uint k, n;
  b_unit_position(gl_LocalInvocationIndex + l * THREADS, k, n);
  const uint offset = slot * TILE_K * TILE_N4;
  if (B_TRANSPOSED) {
    [[unroll]] for (uint i = 0; i < 4; ++i) b_tile[offset + (k + i) * TILE_N4 + n / 4][n % 4] = values[i];
  } else {
    b_tile[offset + k * TILE_N4 + n / 4] = values;
  }
}

float finish(float value, uint m, uint n, uint group) {
  if (p.bias_mode == BIAS_PER_ROW) value += bias[group * p.M + m];
  if (p.bias_mode == BIAS_PER_COLUMN) value += bias[n];
  return activate(p.activation, p.slope, value);
}

void store_result(vec4 sum, uint m, uint n, uint c_base, uint group) {
  if (m >= p.M) return;
  if (C_VEC4) {
    // Rows are whole vec4s: a group of four columns is entirely inside C or entirely outside.
    if (n < p.N) {
      c4[(c_base + m * p.ldc + n) / 4] = vec4(finish(sum.x, m, n, group), finish(sum.y, m, n + 1, group),
                                              finish(sum.z, m, n + 2, group), finish(sum.w, m, n + 3, group));
    }
    return;
  }
  [[unroll]] for (uint e = 0; e < 4; ++e) {
    if (n + e < p.N) c[c_base + m * p.ldc + n + e] = finish(sum[e], m, n + e, group);
  }
}

void main() {
  const uint tx = gl_LocalInvocationIndex % THREADS_N;
  const uint ty = gl_LocalInvocationIndex / THREADS_N;
  const uint m0 = gl_WorkGroupID.y * TILE_M;
  const uint n0 = gl_WorkGroupID.x * TILE_N;
  const uint image = gl_WorkGroupID.z / p.groups;
  const uint group = gl_WorkGroupID.z % p.groups;
  a_base = group * p.a_group_stride;
  b_base = image * p.b_image_stride + group * p.b_group_stride;

  // Locals of main with constant indices after unrolling, so that the compiler keeps them in registers.
  vec4 accumulators[THREAD_M][CHUNKS_N];
  vec4 a_staged[A_LOADS];
  vec4 b_staged[B_LOADS];
  [[unroll]] for (uint i = 0; i < THREAD_M; ++i) {
    [[unroll]] for (uint j = 0; j < CHUNKS_N; ++j) accumulators[i][j] = vec4(0.0);
  }
  [[unroll]] for (uint l = 0; l < A_LOADS; ++l) store_a_unit(l, 0, fetch_a_unit(l, m0, 0));
  [[unroll]] for (uint l = 0; l < B_LOADS; ++l) store_b_unit(l, 0, fetch_b_unit(l, n0, 0));
  barrier();

  const uint steps = (p.K + TILE_K - 1) / TILE_K;
  for (uint step = 0; step < steps; ++step) {
    const bool more = step + 1 < steps;
    // The next tiles are read from global memory while this step's are multiplied.
    if (more) {
      [[unroll]] for (uint l = 0; l < A_LOADS; ++l) a_staged[l] = fetch_a_unit(l, m0, (step + 1) * TILE_K);
      [[unroll]] for (uint l = 0; l < B_LOADS; ++l) b_staged[l] = fetch_b_unit(l, n0, (step + 1) * TILE_K);
    }
    const uint a_offset = (step % 2) * TILE_K * TILE_M4;
    const uint b_offset = (step % 2) * TILE_K * TILE_N4;
    [[unroll]] for (uint k = 0; k < TILE_K; ++k) {
      vec4 a_values[CHUNKS_M];
      vec4 b_values[CHUNKS_N];
      [[unroll]] for (uint i = 0; i < CHUNKS_M; ++i) a_values[i] = a_tile[a_offset + k * TILE_M4 + i * THREADS_M + ty];
      [[unroll]] for (uint j = 0; j < CHUNKS_N; ++j) b_values[j] = b_tile[b_offset + k * TILE_N4 + j * THREADS_N + tx];
      [[unroll]] for (uint i = 0; i < CHUNKS_M; ++i) {
        [[unroll]] for (uint r = 0; r < 4; ++r) {
          [[unroll]] for (uint j = 0; j < CHUNKS_N; ++j) {
            accumulators[i * 4 + r][j] = fma(vec4(a_values[i][r]), b_values[j], accumulators[i * 4 + r][j]);
          }
        }
      }
    }
    if (more) {
      [[unroll]] for (uint l = 0; l < A_LOADS; ++l) store_a_unit(l, (step + 1) % 2, a_staged[l]);
      [[unroll]] for (uint l = 0; l < B_LOADS; ++l) store_b_unit(l, (step + 1) % 2, b_staged[l]);
    }
    barrier();
  }

  const uint c_base = image * p.c_image_stride + group * p.c_group_stride;
  [[unroll]] for (uint i = 0; i < CHUNKS_M; ++i) {
    [[unroll]] for (uint r = 0; r < 4; ++r) {
      [[unroll]] for (uint j = 0; j < CHUNKS_N; ++j) {
        store_result(accumulators[i * 4 + r][j], m0 + (i * THREADS_M + ty) * 4 + r, n0 + (j * THREADS_N + tx) * 4,
                     c_base, group);
      }
    }
  }
}
