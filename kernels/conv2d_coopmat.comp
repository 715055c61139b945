#version 450
// conv2d_coopmat: the implicit-GEMM convolution of conv2d_implicit_gemm.comp on tensor cores, through
// GL_NV_cooperative_matrix: fp16 operands, fp32 accumulation. Built as conv2d_coopmat_fp16 (TENSOR_FP16) only;
// the backend uses it with fp16 precision on devices that offer 16x16x16 fp16 cooperative matrices with an
// fp32 accumulator, and conv2d_implicit_gemm_fp16 elsewhere.
//
// A workgroup of WARPS_M x WARPS_N subgroups (32 invocations each) computes a TILE_M x TILE_N block of C, each
// subgroup FRAGS_M x FRAGS_N 16x16 accumulator fragments. Per step of TILE_K, every invocation reads its share
// of the A tile (fp16 weights, rows padded to a multiple of 8 so that 16-byte loads always fit) and gathers its
// share of B from the input (8 columns per unit, packed to fp16), into registers; the tiles go to shared memory
// as 16-byte units with rows padded by 16 bytes against bank conflicts; the subgroups load fragments from there
// and multiply. The next step's global reads are issued before this step's multiplications.
//
// Results go through a per-subgroup 16x16 fp32 scratch in shared memory (fp16 for an fp16 result in the vector
// epilogue; a fragment's layout across the invocations is the driver's) to the same epilogue as
// conv2d_implicit_gemm: bias, activation, fused 2x2 max pool, or with SPLIT_K the raw partial sums for
// conv2d_split_k_reduce.comp; with RESIDUAL a residual connection added before the activation.
#extension GL_EXT_control_flow_attributes : require
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "activation_functions.glsl"
#include "conv_columns.glsl"
#include "tensor_storage.glsl"

// Mirrors corgy::vulkan::CoopmatConstant.
layout(constant_id = 0) const uint WARPS_M = 2;
layout(constant_id = 1) const uint WARPS_N = 4;
layout(constant_id = 2) const uint FRAGS_M = 4;
layout(constant_id = 3) const uint FRAGS_N = 2;
layout(constant_id = 4) const uint TILE_K = 32;
layout(constant_id = 5) const uint KERNEL_SIZE = 3;
layout(constant_id = 6) const bool POOL = false;
layout(constant_id = 7) const bool SPLIT_K = false;
// A 1x1, stride-1, unpadded convolution of an fp16 source whose planes are whole 16-byte units (the host checks):
// a B unit's 8 columns are 8 consecutive halves of one input plane, read with one 16-byte load.
layout(constant_id = 9) const bool CONTIGUOUS_B = false;
// activation(conv + bias + residual), the residual read at the element written (conv2d_add); never with POOL.
layout(constant_id = 12) const bool RESIDUAL = false;
// Whole 16-byte units of 8 consecutive output columns per lane in the epilogue (below): set by the host where no pool
// and no split of K is fused and the output planes are whole units of 8 (every image starts a unit).
layout(constant_id = 14) const bool VECTOR_EPILOGUE = false;
// The activation (a kind of activation_functions.glsl; the push constant's is ignored): only its code is compiled.
// With all ten behind a switch on a push constant, 1x1 layers with 128x128x64 tiles ran 1.35x slower on an H200,
// but with 128x64x32 tiles 1.3x faster (the driver's compiler schedules them differently; conv_plan.cpp's table
// follows the measurement).
layout(constant_id = 15) const uint ACTIVATION = 0;
// = WARPS_M * WARPS_N * 32, set by the host.
layout(local_size_x_id = 8) in;

TENSOR_INPUT(0, source, 10)
layout(binding = 0) readonly buffer SourceUnits { uvec4 source_units[]; };  // CONTIGUOUS_B's view of the source
layout(binding = 1) readonly buffer Weights { uvec4 weights[]; };  // fp16 [groups * M][k_padded], 8 a unit
layout(binding = 2) readonly buffer Bias { float bias[]; };
TENSOR_OUTPUT(3, result, 11)
TENSOR_INPUT(4, residual, 13)
// VECTOR_EPILOGUE's views of the result and the residual: 8 halves or 4 floats a unit.
layout(binding = 3) writeonly buffer ResultUnits { uvec4 result_units[]; };
layout(binding = 4) readonly buffer ResidualUnits { uvec4 residual_units[]; };

// Mirrors corgy::vulkan::ImplicitGemmParams (conv2d_implicit_gemm.comp); lda is the padded row of the weights.
layout(push_constant) uniform Params {
  uint M;
  uint N;
  uint K;
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
  uint tiles_m;
  uint has_bias;
  uint activation;
  float slope;
  uint lda;  // halves per weight row: K rounded up to a multiple of 8
} p;

const uint SUBGROUP = 32;
const uint THREADS = WARPS_M * WARPS_N * SUBGROUP;
const uint TILE_M = WARPS_M * FRAGS_M * 16;
const uint TILE_N = WARPS_N * FRAGS_N * 16;
const uint TAPS = KERNEL_SIZE * KERNEL_SIZE;
// Shared tiles in 16-byte units (8 halves), each row padded by one unit.
const uint A_STRIDE = TILE_K / 8 + 1;
const uint B_STRIDE = TILE_N / 8 + 1;
const uint A_UNITS = TILE_M * TILE_K / 8;
const uint B_UNITS = TILE_K * TILE_N / 8;
const uint A_LOADS = (A_UNITS + THREADS - 1) / THREADS;
const uint B_LOADS = (B_UNITS + THREADS - 1) / THREADS;
// B unit u covers row k = u / (TILE_N / 8) and columns (u % (TILE_N / 8)) * 8 .. + 7; THREADS is a multiple of
// TILE_N / 8 (the host checks), so an invocation gathers the same 8 columns at every step.
const uint B_K_STRIDE = THREADS / (TILE_N / 8);

// One shared array for both phases: the A and B tiles of the main loop, then the epilogue's per-subgroup scratch
// over them (a 16x16 fp32 fragment, 64 units, and an fp16 one, 32 units, per subgroup). With 48 KB of shared memory
// per workgroup (NVIDIA's limit), the scratch's 12 KB beside the tiles kept 256x128 tiles out.
const uint A_BASE = 0;
const uint B_BASE = TILE_M * A_STRIDE;
const uint STAGE_UNITS = B_BASE + TILE_K * B_STRIDE;
const uint SCRATCH_BASE = 0;                            // fp32 fragments, 64 units per subgroup
// VECTOR_EPILOGUE's with an fp16 result: a fragment in fp16, rows of 16 halves (two units), so that lane l reads
// unit l (row l / 2, columns (l % 2) * 8 .. + 7) in one conflict-free 16-byte load; 32 units per subgroup.
const uint HALF_SCRATCH_BASE = WARPS_M * WARPS_N * 64;
const uint EPILOGUE_UNITS = HALF_SCRATCH_BASE + WARPS_M * WARPS_N * 32;
shared uvec4 tiles[STAGE_UNITS > EPILOGUE_UNITS ? STAGE_UNITS : EPILOGUE_UNITS];

// A float of the fp32 scratch, by its index among the floats.
float scratch_float(uint index) { return uintBitsToFloat(tiles[SCRATCH_BASE + index / 4][index % 4]); }

uint k_end;
int column_offset[8];
int column_y[8];
int column_x[8];

uvec4 fetch_a(uint m, uint k, uint group) {
  if (m >= p.M || k >= k_end) return uvec4(0);
  // Rows are zero-padded to lda, so a unit that starts before K ends inside the row.
  return weights[((group * p.M + m) * p.lda + k) / 8];
}

uvec4 fetch_b(uint k) {
  if (CONTIGUOUS_B) {
    // column_offset[0] is a multiple of 8: the plane and the unit's first column are.
    if (k >= k_end || column_y[0] < 0) return uvec4(0);
    return source_units[(uint(column_offset[0]) + k * p.height * p.width) / 8];
  }
  vec4 lo = vec4(0.0);
  vec4 hi = vec4(0.0);
  if (k < k_end) {
    const uint channel = k / TAPS;
    const uint tap = k - channel * TAPS;
    const uint ky = tap / KERNEL_SIZE;
    const uint kx = tap - ky * KERNEL_SIZE;
    const int dy = int(ky * p.dilation);
    const int dx = int(kx * p.dilation);
    const int offset = int(channel * p.height * p.width) + dy * int(p.width) + dx;
    [[unroll]] for (uint e = 0; e < 4; ++e) {
      int y = column_y[e] + dy;
      int x = column_x[e] + dx;
      if (uint(y) < p.height && uint(x) < p.width) lo[e] = load_source(uint(column_offset[e] + offset));
      y = column_y[e + 4] + dy;
      x = column_x[e + 4] + dx;
      if (uint(y) < p.height && uint(x) < p.width) hi[e] = load_source(uint(column_offset[e + 4] + offset));
    }
  }
  return uvec4(packHalf2x16(lo.xy), packHalf2x16(lo.zw), packHalf2x16(hi.xy), packHalf2x16(hi.zw));
}

void main() {
  const uint tiles_n = (p.N + TILE_N - 1) / TILE_N;
  const uint tile = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (tile >= p.tiles_m * tiles_n) return;
  const uint m0 = (tile % p.tiles_m) * TILE_M;
  const uint n0 = (tile / p.tiles_m) * TILE_N;
  const uint group = gl_WorkGroupID.z % p.groups;
  const uint split = gl_WorkGroupID.z / p.groups;
  const uint k_begin = split * p.k_per_split;
  k_end = min(p.K, k_begin + p.k_per_split);

  const uint tid = gl_LocalInvocationIndex;
  // The host uses this kernel only where subgroups have 32 invocations.
  const uint warp = gl_SubgroupID;
  const uint lane = gl_SubgroupInvocationID;
  const uint warp_m = warp / WARPS_N;
  const uint warp_n = warp % WARPS_N;
  const uint b_column = (tid % (TILE_N / 8)) * 8;
  const uint b_row = tid / (TILE_N / 8);
  const ConvGeometry g = ConvGeometry(p.out_height, p.out_width, POOL, p.pool_height, p.pool_width,
                                      p.pool_pad_top, p.pool_pad_left);
  const uint channels_per_group = p.in_channels / p.groups;
  [[unroll]] for (uint e = 0; e < 8; ++e) {
    const uint n = n0 + b_column + e;
    uint image;
    int y, x;
    conv_column(g, min(n, p.N - 1), image, y, x);
    column_y[e] = (n < p.N && y >= 0) ? y * int(p.stride) - int(p.padding) : -(1 << 30);
    column_x[e] = x * int(p.stride) - int(p.padding);
    column_offset[e] = int((image * p.in_channels + group * channels_per_group) * p.height * p.width) +
                       column_y[e] * int(p.width) + column_x[e];
  }

  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> accumulators[FRAGS_M][FRAGS_N];
  [[unroll]] for (uint i = 0; i < FRAGS_M; ++i) {
    [[unroll]] for (uint j = 0; j < FRAGS_N; ++j) accumulators[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
  }

  uvec4 a_staged[A_LOADS];
  uvec4 b_staged[B_LOADS];
  const uint steps = (k_end - min(k_begin, k_end) + TILE_K - 1) / TILE_K;
  // A unit u: row m = u / (TILE_K / 8), halves k = (u % (TILE_K / 8)) * 8 .. + 7.
  [[unroll]] for (uint l = 0; l < A_LOADS; ++l) {
    const uint u = tid + l * THREADS;
    a_staged[l] = u < A_UNITS ? fetch_a(m0 + u / (TILE_K / 8), k_begin + (u % (TILE_K / 8)) * 8, group) : uvec4(0);
  }
  [[unroll]] for (uint l = 0; l < B_LOADS; ++l) {
    b_staged[l] = tid + l * THREADS < B_UNITS ? fetch_b(k_begin + b_row + l * B_K_STRIDE) : uvec4(0);
  }
  for (uint step = 0; step < steps; ++step) {
    barrier();  // every subgroup is done with the last step's tiles
    [[unroll]] for (uint l = 0; l < A_LOADS; ++l) {
      const uint u = tid + l * THREADS;
      if (u < A_UNITS) tiles[A_BASE + (u / (TILE_K / 8)) * A_STRIDE + u % (TILE_K / 8)] = a_staged[l];
    }
    [[unroll]] for (uint l = 0; l < B_LOADS; ++l) {
      if (tid + l * THREADS < B_UNITS) {
        tiles[B_BASE + (b_row + l * B_K_STRIDE) * B_STRIDE + b_column / 8] = b_staged[l];
      }
    }
    barrier();
    // The next step's global reads go out before the multiplications, which hide them.
    if (step + 1 < steps) {
      const uint k_next = k_begin + (step + 1) * TILE_K;
      [[unroll]] for (uint l = 0; l < A_LOADS; ++l) {
        const uint u = tid + l * THREADS;
        if (u < A_UNITS) a_staged[l] = fetch_a(m0 + u / (TILE_K / 8), k_next + (u % (TILE_K / 8)) * 8, group);
      }
      [[unroll]] for (uint l = 0; l < B_LOADS; ++l) {
        if (tid + l * THREADS < B_UNITS) b_staged[l] = fetch_b(k_next + b_row + l * B_K_STRIDE);
      }
    }
    [[unroll]] for (uint kk = 0; kk < TILE_K / 16; ++kk) {
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a_fragments[FRAGS_M];
      [[unroll]] for (uint i = 0; i < FRAGS_M; ++i) {
        const uint row = (warp_m * FRAGS_M + i) * 16;
        coopMatLoadNV(a_fragments[i], tiles, A_BASE + row * A_STRIDE + kk * 2, A_STRIDE, false);
      }
      [[unroll]] for (uint j = 0; j < FRAGS_N; ++j) {
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> b_fragment;
        const uint column = (warp_n * FRAGS_N + j) * 16;
        coopMatLoadNV(b_fragment, tiles, B_BASE + kk * 16 * B_STRIDE + column / 8, B_STRIDE, false);
        [[unroll]] for (uint i = 0; i < FRAGS_M; ++i) {
          accumulators[i][j] = coopMatMulAddNV(a_fragments[i], b_fragment, accumulators[i][j]);
        }
      }
    }
  }

  barrier();  // every subgroup is done with the tiles before the scratch overwrites them
  const uint scratch_base = warp * 256;  // in floats
  if (VECTOR_EPILOGUE) {
    // Lane l takes row l / 2 of a fragment and its 8 columns (l % 2) * 8 .. + 7, which are consecutive elements of
    // one output plane: one 16-byte store (two in fp32) and as many residual loads, where one element per lane and
    // row made the stores, not the tensor cores, the bound of 1x1 layers (64->256 at 56x56, batch 32, on an H100:
    // 29 TFLOP/s, 0.45 TB/s of output).
    const uint plane = p.out_height * p.out_width;
    const uint unit_row = lane / 2;
    const uint unit_column = (lane % 2) * 8;
    [[unroll]] for (uint j = 0; j < FRAGS_N; ++j) {
      const uint n = n0 + (warp_n * FRAGS_N + j) * 16 + unit_column;
      const uint image = n / plane;
      const uint channel0_index = image * p.out_channels * plane + (n - image * plane);
      [[unroll]] for (uint i = 0; i < FRAGS_M; ++i) {
        float values[8];
        if (result_fp16) {
          // The sums are rounded to fp16 before the bias is added: one rounding more than the fp32 path, within
          // the fp16 result's own. The epilogue alone (1x1 1024 -> 1024 at 32x32, batch 32, H200) took 0.08-0.14
          // ms through the fp32 scratch, whose eight 4-byte reads per lane conflict 8-way; 0.04 through this one.
          coopMatStoreNV(fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>(accumulators[i][j]), tiles,
                         HALF_SCRATCH_BASE + warp * 32, 2, false);
          subgroupBarrier();
          const uvec4 unit = tiles[HALF_SCRATCH_BASE + warp * 32 + lane];
          subgroupBarrier();
          [[unroll]] for (uint q = 0; q < 4; ++q) {
            const vec2 pair = unpackHalf2x16(unit[q]);
            values[2 * q] = pair.x;
            values[2 * q + 1] = pair.y;
          }
        } else {
          coopMatStoreNV(accumulators[i][j], tiles, SCRATCH_BASE + scratch_base / 4, 4, false);
          subgroupBarrier();
          [[unroll]] for (uint q = 0; q < 8; ++q) {
            values[q] = scratch_float(scratch_base + unit_row * 16 + unit_column + q);
          }
          subgroupBarrier();
        }
        const uint m = m0 + (warp_m * FRAGS_M + i) * 16 + unit_row;
        if (n >= p.N || m >= p.M) continue;  // N is a multiple of 8: a unit is wholly inside or outside
        const uint channel = group * p.M + m;
        const uint index = channel0_index + channel * plane;  // a multiple of 8
        const float shift = p.has_bias != 0 ? bias[channel] : 0.0;
        if (RESIDUAL) {
          if (residual_fp16) {
            const uvec4 unit = residual_units[index / 8];
            [[unroll]] for (uint q = 0; q < 4; ++q) {
              const vec2 pair = unpackHalf2x16(unit[q]);
              values[2 * q] += pair.x;
              values[2 * q + 1] += pair.y;
            }
          } else {
            [[unroll]] for (uint u = 0; u < 2; ++u) {
              const uvec4 unit = residual_units[index / 4 + u];
              [[unroll]] for (uint q = 0; q < 4; ++q) values[4 * u + q] += uintBitsToFloat(unit[q]);
            }
          }
        }
        [[unroll]] for (uint q = 0; q < 8; ++q) values[q] = activate(ACTIVATION, p.slope, values[q] + shift);
        if (result_fp16) {
          result_units[index / 8] =
              uvec4(packHalf2x16(vec2(values[0], values[1])), packHalf2x16(vec2(values[2], values[3])),
                    packHalf2x16(vec2(values[4], values[5])), packHalf2x16(vec2(values[6], values[7])));
        } else {
          result_units[index / 4] = floatBitsToUint(vec4(values[0], values[1], values[2], values[3]));
          result_units[index / 4 + 1] = floatBitsToUint(vec4(values[4], values[5], values[6], values[7]));
        }
      }
    }
    return;
  }

  // Epilogue, one fragment at a time through this subgroup's scratch. Lanes take columns, so that the lanes of a
  // subgroup store to consecutive addresses of an output row: without a pool lane l takes column l % 16 and rows
  // (l / 16) * 8 .. + 7; with one, lane l takes pooling window l % 4 (its four columns) and rows (l / 4) * 2 .. + 1.
  // Where a column's output lands depends only on the column, so the divisions are done once per fragment column.
  const uint lane_column = POOL ? (lane % 4) * 4 : lane % 16;
  const uint lane_row = POOL ? (lane / 4) * 2 : (lane / 16) * 8;
  const uint ROWS = POOL ? 2 : 8;
  const uint plane = POOL ? p.pool_height * p.pool_width : p.out_height * p.out_width;
  [[unroll]] for (uint j = 0; j < FRAGS_N; ++j) {
    const uint n = n0 + (warp_n * FRAGS_N + j) * 16 + lane_column;
    // The column's output element for channel 0 (its image's first channel), and with a pool which of the window's
    // cells lie inside the convolution's output.
    uint channel0_index = 0;
    bool inside[4];
    if (POOL) {
      const uint window = n / 4;
      const uint image = window / plane;
      const uint pixel = window - image * plane;
      channel0_index = image * p.out_channels * plane + pixel;
      const uint py = pixel / p.pool_width;
      const uint px = pixel - py * p.pool_width;
      [[unroll]] for (uint q = 0; q < 4; ++q) {
        const int y = int(2 * py + q / 2) - int(p.pool_pad_top);
        const int x = int(2 * px + q % 2) - int(p.pool_pad_left);
        inside[q] = uint(y) < p.out_height && uint(x) < p.out_width;
      }
    } else {
      const uint image = n / plane;
      channel0_index = image * p.out_channels * plane + (n - image * plane);
    }
    [[unroll]] for (uint i = 0; i < FRAGS_M; ++i) {
      coopMatStoreNV(accumulators[i][j], tiles, SCRATCH_BASE + scratch_base / 4, 4, false);
      subgroupBarrier();
      float sums[8];
      [[unroll]] for (uint r = 0; r < ROWS; ++r) {
        [[unroll]] for (uint q = 0; q < 8 / ROWS; ++q) {
          sums[r * (8 / ROWS) + q] = scratch_float(scratch_base + (lane_row + r) * 16 + lane_column + q);
        }
      }
      // Every lane has read before the next fragment overwrites the scratch.
      subgroupBarrier();
      if (n < p.N) {
        const uint m_first = m0 + (warp_m * FRAGS_M + i) * 16 + lane_row;
        [[unroll]] for (uint r = 0; r < ROWS; ++r) {
          const uint m = m_first + r;
          if (m < p.M) {
            const uint channel = group * p.M + m;
            if (SPLIT_K) {
              // The raw sums of every column, the pool's cells included; the reduction pools them.
              const uint base = ((split * p.groups + group) * p.M + m) * p.N + n;
              [[unroll]] for (uint q = 0; q < 8 / ROWS; ++q) store_result(base + q, sums[r * (8 / ROWS) + q]);
            } else {
              const float shift = p.has_bias != 0 ? bias[channel] : 0.0;
              float value;
              if (POOL) {
                value = uintBitsToFloat(0xff800000u);  // -infinity
                [[unroll]] for (uint q = 0; q < 4; ++q) {
                  if (inside[q]) value = max(value, activate(ACTIVATION, p.slope, sums[r * 4 + q] + shift));
                }
              } else {
                const float added = RESIDUAL ? load_residual(channel0_index + channel * plane) : 0.0;
                value = activate(ACTIVATION, p.slope, sums[r] + shift + added);
              }
              store_result(channel0_index + channel * plane, value);
            }
          }
        }
      }
    }
  }
}
