#version 450
// conv2d_implicit_gemm: a convolution as one GEMM whose B operand is gathered from the NCHW input inside the
// kernel (implicit GEMM): no im2col buffer is written or read. C (out channels of a group x columns) =
// weights (out channels x K) x B (K x columns), K = (in channels / groups) * kernel * kernel in the order of the
// OIHW weights, and the columns run over every output pixel of every image (conv_columns.glsl), so a batch is
// one GEMM with no ragged tile per image. Bias, activation and optionally a following 2x2 stride-2 max pool
// are applied as the results are written.
//
// The tiling is gemm_tiled.comp's: a workgroup computes a TILE_M x TILE_N block of C in steps of TILE_K through
// two shared-memory stages, each thread a THREAD_M x THREAD_N block in registers. Each thread gathers B for the
// same four columns at every step, so their image and input position are worked out once; a kernel tap
// (channel, ky, kx) is divided out of k with KERNEL_SIZE a constant.
//
// Split-K: with SPLIT_K, workgroup z = split * groups + group computes the partial sum over its share of K
// (k_per_split, a multiple of TILE_K) and writes it unchanged to a scratch buffer laid out
// [split][group][M][N]; conv2d_split_k_reduce.comp adds the shares and applies bias, activation and pool.
//
// With RESIDUAL the output is activation(conv + bias + residual), the residual read at the element being written
// (a residual connection fused into the convolution: conv2d_add); with SPLIT_K the reduction adds it.
#extension GL_EXT_control_flow_attributes : require
#extension GL_GOOGLE_include_directive : require
#include "activation_functions.glsl"
#include "conv_columns.glsl"
#include "tensor_storage.glsl"

// Mirrors corgy::vulkan::ImplicitGemmConstant.
layout(constant_id = 0) const uint TILE_M = 64;
layout(constant_id = 1) const uint TILE_N = 128;
layout(constant_id = 2) const uint TILE_K = 16;
layout(constant_id = 3) const uint THREAD_M = 4;
layout(constant_id = 4) const uint THREAD_N = 8;
layout(constant_id = 5) const bool A_VEC4 = false;  // K % 4 == 0: weight rows are whole vec4s
layout(constant_id = 6) const uint KERNEL_SIZE = 3;
layout(constant_id = 7) const bool POOL = false;
layout(constant_id = 8) const bool SPLIT_K = false;
layout(constant_id = 12) const bool RESIDUAL = false;  // never with POOL
// = (TILE_M / THREAD_M) * (TILE_N / THREAD_N), set by the host.
layout(local_size_x_id = 9) in;

TENSOR_INPUT(0, source, 10)
layout(binding = 1) readonly buffer Weights { float weights[]; };
layout(binding = 1) readonly buffer Weights4 { vec4 weights4[]; };
layout(binding = 2) readonly buffer Bias { float bias[]; };
TENSOR_OUTPUT(3, result, 11)
TENSOR_INPUT(4, residual, 13)

// Mirrors corgy::vulkan::ImplicitGemmParams.
layout(push_constant) uniform Params {
  uint M;  // output channels per group
  uint N;  // GEMM columns (conv_columns.glsl)
  uint K;  // input channels per group * kernel * kernel
  uint in_channels;
  uint height;
  uint width;
  uint out_channels;
  uint out_height;
  uint out_width;
  uint pool_height;
  uint pool_width;
  uint pool_pad_top;
  uint pool_pad_left;
  uint stride;
  uint padding;
  uint dilation;
  uint groups;
  uint k_per_split;
  uint tiles_m;  // workgroups along M; the dispatch's x and y together count tiles_m * ceil(N / TILE_N)
  uint has_bias;
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
const uint TAPS = KERNEL_SIZE * KERNEL_SIZE;
// vec4 units of the A and B tiles and how many each thread moves per step (the last round may be partial).
const uint A_UNITS = TILE_M * TILE_K / 4;
const uint B_UNITS = TILE_N * TILE_K / 4;
const uint A_LOADS = (A_UNITS + THREADS - 1) / THREADS;
const uint B_LOADS = (B_UNITS + THREADS - 1) / THREADS;
// B unit u covers k = u / TILE_N4 and columns (u % TILE_N4) * 4 .. + 3; THREADS is a multiple of TILE_N4
// (the host checks), so a thread's columns are the same for every unit it loads.
const uint B_K_STRIDE = THREADS / TILE_N4;

shared vec4 a_tile[2 * TILE_K * TILE_M4];
shared vec4 b_tile[2 * TILE_K * TILE_N4];

ConvGeometry geometry() {
  return ConvGeometry(p.out_height, p.out_width, POOL, p.pool_height, p.pool_width, p.pool_pad_top,
                      p.pool_pad_left);
}

uint a_base;
uint k_end;
// This thread's four B columns: input offset of the top-left tap and its (y, x); y is far negative for a
// column that reads nothing (past N, or a padded pool cell), so every bounds check fails.
int column_offset[4];
int column_y[4];
int column_x[4];

vec4 fetch_a(uint m, uint k) {
  if (A_VEC4) {
    if (m >= p.M || k >= k_end) return vec4(0.0);
    return weights4[(a_base + m * p.K + k) / 4];
  }
  vec4 values = vec4(0.0);
  if (m >= p.M) return values;
  [[unroll]] for (uint e = 0; e < 4; ++e) {
    if (k + e < k_end) values[e] = weights[a_base + m * p.K + k + e];
  }
  return values;
}

vec4 fetch_b(uint k) {
  vec4 values = vec4(0.0);
  if (k >= k_end) return values;
  const uint channel = k / TAPS;
  const uint tap = k - channel * TAPS;
  const uint ky = tap / KERNEL_SIZE;
  const uint kx = tap - ky * KERNEL_SIZE;
  const int dy = int(ky * p.dilation);
  const int dx = int(kx * p.dilation);
  const int offset = int(channel * p.height * p.width) + dy * int(p.width) + dx;
  [[unroll]] for (uint e = 0; e < 4; ++e) {
    const int y = column_y[e] + dy;
    const int x = column_x[e] + dx;
    if (uint(y) < p.height && uint(x) < p.width) values[e] = load_source(uint(column_offset[e] + offset));
  }
  return values;
}

// This thread's share of the A tile at (m0, k0) and of the B tile at k0, read from global memory.
// A unit u is rows m = u / (TILE_K / 4), k = (u % (TILE_K / 4)) * 4 .. + 3.
void fetch_tiles(out vec4 a_staged[A_LOADS], out vec4 b_staged[B_LOADS], uint m0, uint k0, uint b_row) {
  [[unroll]] for (uint l = 0; l < A_LOADS; ++l) {
    const uint u = gl_LocalInvocationIndex + l * THREADS;
    a_staged[l] = u < A_UNITS ? fetch_a(m0 + u / (TILE_K / 4), k0 + (u % (TILE_K / 4)) * 4) : vec4(0.0);
  }
  [[unroll]] for (uint l = 0; l < B_LOADS; ++l) {
    const bool mine = gl_LocalInvocationIndex + l * THREADS < B_UNITS;
    b_staged[l] = mine ? fetch_b(k0 + b_row + l * B_K_STRIDE) : vec4(0.0);
  }
}

// ... written to shared-memory stage `slot`, M (or N) running fastest.
void store_tiles(vec4 a_staged[A_LOADS], vec4 b_staged[B_LOADS], uint slot, uint b_row, uint b_column) {
  [[unroll]] for (uint l = 0; l < A_LOADS; ++l) {
    const uint u = gl_LocalInvocationIndex + l * THREADS;
    if (u < A_UNITS) {
      const uint m = u / (TILE_K / 4);
      const uint k = (u % (TILE_K / 4)) * 4;
      [[unroll]] for (uint e = 0; e < 4; ++e) a_tile[(slot * TILE_K + k + e) * TILE_M4 + m / 4][m % 4] = a_staged[l][e];
    }
  }
  [[unroll]] for (uint l = 0; l < B_LOADS; ++l) {
    if (gl_LocalInvocationIndex + l * THREADS < B_UNITS) {
      b_tile[(slot * TILE_K + b_row + l * B_K_STRIDE) * TILE_N4 + b_column / 4] = b_staged[l];
    }
  }
}

void main() {
  const uint tiles_n = (p.N + TILE_N - 1) / TILE_N;
  const uint tile = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (tile >= p.tiles_m * tiles_n) return;  // the dispatch rounds the tile count up
  // Neighbouring workgroups share a column tile, so the input they gather is read from cache.
  const uint m0 = (tile % p.tiles_m) * TILE_M;
  const uint n0 = (tile / p.tiles_m) * TILE_N;
  const uint group = gl_WorkGroupID.z % p.groups;
  const uint split = gl_WorkGroupID.z / p.groups;
  const uint k_begin = split * p.k_per_split;
  k_end = min(p.K, k_begin + p.k_per_split);
  a_base = group * p.M * p.K;

  const uint tid = gl_LocalInvocationIndex;
  const uint tx = tid % THREADS_N;
  const uint ty = tid / THREADS_N;
  const uint b_column = (tid % TILE_N4) * 4;
  const uint b_row = tid / TILE_N4;
  const ConvGeometry g = geometry();
  const uint channels_per_group = p.in_channels / p.groups;
  [[unroll]] for (uint e = 0; e < 4; ++e) {
    const uint n = n0 + b_column + e;
    uint image;
    int y, x;
    conv_column(g, min(n, p.N - 1), image, y, x);
    column_y[e] = (n < p.N && y >= 0) ? y * int(p.stride) - int(p.padding) : -(1 << 30);
    column_x[e] = x * int(p.stride) - int(p.padding);
    column_offset[e] = int((image * p.in_channels + group * channels_per_group) * p.height * p.width) +
                       column_y[e] * int(p.width) + column_x[e];
  }

  vec4 accumulators[THREAD_M][CHUNKS_N];
  vec4 a_staged[A_LOADS];
  vec4 b_staged[B_LOADS];
  [[unroll]] for (uint i = 0; i < THREAD_M; ++i) {
    [[unroll]] for (uint j = 0; j < CHUNKS_N; ++j) accumulators[i][j] = vec4(0.0);
  }

  const uint steps = (k_end - min(k_begin, k_end) + TILE_K - 1) / TILE_K;
  fetch_tiles(a_staged, b_staged, m0, k_begin, b_row);
  store_tiles(a_staged, b_staged, 0, b_row, b_column);
  barrier();
  for (uint step = 0; step < steps; ++step) {
    const uint slot = step % 2;
    const bool more = step + 1 < steps;
    // The next step's tiles are read from global memory while this step's are multiplied, then staged in the
    // other buffer, which nobody reads before the barrier: one barrier per step.
    if (more) fetch_tiles(a_staged, b_staged, m0, k_begin + (step + 1) * TILE_K, b_row);
    [[unroll]] for (uint k = 0; k < TILE_K; ++k) {
      vec4 a_values[CHUNKS_M];
      vec4 b_values[CHUNKS_N];
      const uint row = slot * TILE_K + k;
      [[unroll]] for (uint i = 0; i < CHUNKS_M; ++i) a_values[i] = a_tile[row * TILE_M4 + i * THREADS_M + ty];
      [[unroll]] for (uint j = 0; j < CHUNKS_N; ++j) b_values[j] = b_tile[row * TILE_N4 + j * THREADS_N + tx];
      [[unroll]] for (uint i = 0; i < CHUNKS_M; ++i) {
        [[unroll]] for (uint r = 0; r < 4; ++r) {
          [[unroll]] for (uint j = 0; j < CHUNKS_N; ++j) {
            accumulators[i * 4 + r][j] = fma(vec4(a_values[i][r]), b_values[j], accumulators[i * 4 + r][j]);
          }
        }
      }
    }
    if (more) store_tiles(a_staged, b_staged, 1 - slot, b_row, b_column);
    barrier();
  }

  [[unroll]] for (uint i = 0; i < CHUNKS_M; ++i) {
    [[unroll]] for (uint r = 0; r < 4; ++r) {
      const uint m = m0 + (i * THREADS_M + ty) * 4 + r;
      if (m >= p.M) continue;
      const uint channel = group * p.M + m;
      [[unroll]] for (uint j = 0; j < CHUNKS_N; ++j) {
        const uint n = n0 + (j * THREADS_N + tx) * 4;
        if (n >= p.N) continue;
        const vec4 sum = accumulators[i * 4 + r][j];
        if (SPLIT_K) {
          const uint base = ((split * p.groups + group) * p.M + m) * p.N + n;
          [[unroll]] for (uint e = 0; e < 4; ++e) {
            if (n + e < p.N) store_result(base + e, sum[e]);
          }
          continue;
        }
        const float shift = p.has_bias != 0 ? bias[channel] : 0.0;
        if (POOL) {
          // Four columns are one pooling window (N is a multiple of 4); padded cells take no part.
          float largest = uintBitsToFloat(0xff800000u);  // -infinity
          [[unroll]] for (uint e = 0; e < 4; ++e) {
            uint image;
            int y, x;
            conv_column(g, n + e, image, y, x);
            if (y >= 0) largest = max(largest, activate(p.activation, p.slope, sum[e] + shift));
          }
          store_result(conv_output_index(g, p.out_channels, channel, n), largest);
          continue;
        }
        [[unroll]] for (uint e = 0; e < 4; ++e) {
          if (n + e < p.N) {
            const uint index = conv_output_index(g, p.out_channels, channel, n + e);
            const float added = RESIDUAL ? load_residual(index) : 0.0;
            store_result(index, activate(p.activation, p.slope, sum[e] + shift + added));
          }
        }
      }
    }
  }
}
