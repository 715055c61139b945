#version 450
// conv2d_patch_coopmat: a convolution on tensor cores (GL_NV_cooperative_matrix, fp16
// operands, fp32 accumulation), as an implicit GEMM whose B operand is never gathered: the workgroup stages the
// input patch under its output pixels in shared memory, channels innermost, and every 16x16 B fragment (16 input
// channels at one tap x 16 consecutive output pixels of a row) is then a plain column-major load from that patch,
// at any tap. conv2d_coopmat.comp instead gathers each B element from global memory once per tap, which at the
// first layers of a network (K = channels x 9 of a few hundred, millions of pixels) costs more than the
// arithmetic; on large images of more channels the gather is the bound too. Built as conv2d_patch_coopmat_fp16
// only.
//
// A workgroup of 8 subgroups covers 8 ROW_PAIRS x 32 convolution pixels of one image (with POOL, the 4 ROW_PAIRS x
// 16 windows of a fused 2x2 stride-2 max pool, which may start on the pool's padding: cell_top, cell_left) for
// M_FRAGS x 16 output channels (workgroup z = image * channel_blocks + block). Subgroup w computes the 16 pixels
// (w % 2) * 16 .. + 15 of rows 2 (w / 2) + 8 r and 2 (w / 2) + 8 r + 1 (a pool window's two rows), r < ROW_PAIRS,
// for every output channel: M_FRAGS x 2 ROW_PAIRS accumulators. Input channels go through the patch 16 at a time
// (p.chunks of them), and with them the weights of those channels, arranged by the host as fp16
// [channel_blocks * M_FRAGS * 16][chunks][taps][16]: the A fragments come from shared memory too.
#extension GL_EXT_control_flow_attributes : require
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "activation_functions.glsl"
#include "tensor_storage.glsl"

// Mirrors corgy::vulkan::PatchCoopmatConstant.
layout(constant_id = 0) const uint M_FRAGS = 2;  // 16 output channels each
layout(constant_id = 2) const uint KERNEL_SIZE = 3;
layout(constant_id = 3) const bool POOL = false;
layout(constant_id = 4) const uint STRIDE = 1;
layout(constant_id = 5) const uint DILATION = 1;
layout(constant_id = 6) const uint ROW_PAIRS = 1;  // the block is 8 ROW_PAIRS rows high
layout(local_size_x = 256) in;

TENSOR_INPUT(0, source, 10)
layout(binding = 1) readonly buffer Weights { uvec4 weights[]; };  // fp16, 8 a unit
layout(binding = 2) readonly buffer Bias { float bias[]; };
TENSOR_OUTPUT(3, result, 11)

// Mirrors corgy::vulkan::PatchConvParams.
layout(push_constant) uniform Params {
  uint in_channels;
  uint height;
  uint width;
  uint out_channels;
  uint out_height;  // the convolution's output
  uint out_width;
  uint cells_height;  // cells of 2x2 pixels: the pooled output with POOL
  uint cells_width;
  uint cell_top;  // the pool's padding: the block of workgroup (x, y) starts at pixel (8 y - cell_top, 32 x - cell_left)
  uint cell_left;
  uint channel_blocks;
  uint padding;
  uint has_bias;
  uint activation;
  float slope;
  uint chunks;  // of 16 input channels
} p;

const uint SUBGROUP = 32;
const uint THREADS = 256;
const uint BLOCK_H = 8 * ROW_PAIRS;
const uint BLOCK_W = 32;
const uint TAPS = KERNEL_SIZE * KERNEL_SIZE;
const uint M_TILE = M_FRAGS * 16;
// Halves per weight row and chunk: taps x 16 (a row is p.chunks of them).
const uint CHUNK_ROW = TAPS * 16;
// The chunk's weights in shared memory: M_TILE rows of CHUNK_ROW halves, each padded by 16 bytes against bank
// conflicts, in 16-byte units.
const uint A_STRIDE = CHUNK_ROW / 8 + 1;
const uint A_UNITS = M_TILE * CHUNK_ROW / 8;
const uint A_ROUNDS = (A_UNITS + 256 - 1) / 256;
// The input under the block, one chunk of 16 channels: PATCH_H x PATCH_W pixels of two 16-byte units each.
const uint PATCH_H = (BLOCK_H - 1) * STRIDE + (KERNEL_SIZE - 1) * DILATION + 1;
const uint PATCH_W = (BLOCK_W - 1) * STRIDE + (KERNEL_SIZE - 1) * DILATION + 1;
const uint PATCH_PIXELS = PATCH_H * PATCH_W;
const uint PATCH_UNITS = PATCH_PIXELS * 2;
const uint STAGE_ROUNDS = (PATCH_UNITS + THREADS - 1) / THREADS;

// input_patch[pixel * 2 + u] holds channels chunk * 16 + u * 8 .. + 7 of patch pixel (row, column), pixel = row *
// PATCH_W + column, input pixel (block_top * STRIDE - padding + row, block_left * STRIDE - padding + column).
shared uvec4 input_patch[PATCH_UNITS];
shared uvec4 a_tile[M_TILE * A_STRIDE];
// Two 16x16 fp32 fragments per subgroup for the epilogue.
shared float scratch[8 * 512];

// Reads chunk `chunk` of the patch and of the weights into registers. Each thread reads its units' 8 channels
// (consecutive threads take consecutive pixels of a row, so each channel's reads coalesce).
void stage_chunk(uint chunk, uint image_base, int input_top, int input_left, uint block,
                 out uvec4 staged[STAGE_ROUNDS], out uvec4 a_staged[A_ROUNDS]) {
  const uint tid = gl_LocalInvocationIndex;
  const uint plane = p.height * p.width;
  [[unroll]] for (uint r = 0; r < STAGE_ROUNDS; ++r) {
    const uint unit = tid + r * THREADS;
    const uint half_index = unit / PATCH_PIXELS;  // channels 0-7 or 8-15 of the chunk
    const uint pixel = unit - half_index * PATCH_PIXELS;
    const uint row = pixel / PATCH_W;
    const int y = input_top + int(row);
    const int x = input_left + int(pixel - row * PATCH_W);
    const uint first_channel = chunk * 16 + half_index * 8;
    vec4 lo = vec4(0.0);
    vec4 hi = vec4(0.0);
    if (unit < PATCH_UNITS && uint(y) < p.height && uint(x) < p.width) {
      const uint at = image_base + first_channel * plane + uint(y) * p.width + uint(x);
      [[unroll]] for (uint e = 0; e < 4; ++e) {
        if (first_channel + e < p.in_channels) lo[e] = load_source(at + e * plane);
        if (first_channel + e + 4 < p.in_channels) hi[e] = load_source(at + (e + 4) * plane);
      }
    }
    staged[r] = uvec4(packHalf2x16(lo.xy), packHalf2x16(lo.zw), packHalf2x16(hi.xy), packHalf2x16(hi.zw));
  }
  // The chunk's weights: unit u is row u / (CHUNK_ROW / 8), halves (u % (CHUNK_ROW / 8)) * 8 .. + 7.
  [[unroll]] for (uint r = 0; r < A_ROUNDS; ++r) {
    const uint unit = tid + r * THREADS;
    const uint row = unit / (CHUNK_ROW / 8);
    const uint column = unit - row * (CHUNK_ROW / 8);
    const uint weight_unit = ((block * M_TILE + row) * p.chunks + chunk) * (CHUNK_ROW / 8) + column;
    a_staged[r] = unit < A_UNITS ? weights[weight_unit] : uvec4(0);
  }
}

void main() {
  const uint block = gl_WorkGroupID.z % p.channel_blocks;
  const uint image = gl_WorkGroupID.z / p.channel_blocks;
  const uint tid = gl_LocalInvocationIndex;
  // The host uses this kernel only where subgroups have 32 invocations.
  const uint warp = gl_SubgroupID;
  const uint lane = gl_SubgroupInvocationID;
  const int block_top = int(gl_WorkGroupID.y * BLOCK_H) - int(p.cell_top);
  const int block_left = int(gl_WorkGroupID.x * BLOCK_W) - int(p.cell_left);
  const int input_top = block_top * int(STRIDE) - int(p.padding);
  const int input_left = block_left * int(STRIDE) - int(p.padding);
  const uint plane = p.height * p.width;
  const uint image_base = image * p.in_channels * plane;
  // This subgroup's pixels: rows warp_row + 8 r, warp_row + 8 r + 1 of the block (r < ROW_PAIRS), columns
  // warp_column .. + 15.
  const uint warp_row = (warp / 2) * 2;
  const uint warp_column = (warp % 2) * 16;

  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> accumulators[M_FRAGS][2 * ROW_PAIRS];
  [[unroll]] for (uint i = 0; i < M_FRAGS; ++i) {
    [[unroll]] for (uint j = 0; j < 2 * ROW_PAIRS; ++j) accumulators[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
  }

  // Chunk c + 1's reads go out before chunk c's multiplications, which hide them: registers hold one chunk of the
  // patch and of the weights between the two.
  uvec4 staged[STAGE_ROUNDS];
  uvec4 a_staged[A_ROUNDS];
  stage_chunk(0, image_base, input_top, input_left, block, staged, a_staged);
  for (uint chunk = 0; chunk < p.chunks; ++chunk) {
    barrier();  // every subgroup is done with the last chunk's patch
    [[unroll]] for (uint r = 0; r < STAGE_ROUNDS; ++r) {
      const uint unit = tid + r * THREADS;
      if (unit < PATCH_UNITS) {
        const uint half_index = unit / PATCH_PIXELS;
        input_patch[(unit - half_index * PATCH_PIXELS) * 2 + half_index] = staged[r];
      }
    }
    [[unroll]] for (uint r = 0; r < A_ROUNDS; ++r) {
      const uint unit = tid + r * THREADS;
      const uint row = unit / (CHUNK_ROW / 8);
      if (unit < A_UNITS) a_tile[row * A_STRIDE + unit - row * (CHUNK_ROW / 8)] = a_staged[r];
    }
    barrier();
    if (chunk + 1 < p.chunks) stage_chunk(chunk + 1, image_base, input_top, input_left, block, staged, a_staged);

    [[unroll]] for (uint ky = 0; ky < KERNEL_SIZE; ++ky) {
      [[unroll]] for (uint kx = 0; kx < KERNEL_SIZE; ++kx) {
        // A: output channels x the chunk's 16 channels at this tap, row-major.
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a[M_FRAGS];
        [[unroll]] for (uint i = 0; i < M_FRAGS; ++i) {
          coopMatLoadNV(a[i], a_tile, i * 16 * A_STRIDE + (ky * KERNEL_SIZE + kx) * 2, A_STRIDE, false);
        }
        [[unroll]] for (uint j = 0; j < 2 * ROW_PAIRS; ++j) {
          // B: 16 channels x 16 pixels of row warp_row + 8 (j / 2) + j % 2; pixel n's channels are the two units
          // at its patch pixel, and pixel n + 1 is STRIDE patch pixels on: column-major with a stride of 2 STRIDE
          // units.
          const uint row = warp_row + 8 * (j / 2) + j % 2;
          const uint first_pixel = (row * STRIDE + ky * DILATION) * PATCH_W + warp_column * STRIDE + kx * DILATION;
          fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> b;
          coopMatLoadNV(b, input_patch, first_pixel * 2, 2 * STRIDE, true);
          [[unroll]] for (uint i = 0; i < M_FRAGS; ++i) {
            accumulators[i][j] = coopMatMulAddNV(a[i], b, accumulators[i][j]);
          }
        }
      }
    }
  }

  // Epilogue, one row of fragments at a time through this subgroup's scratch (element (m, n) of fragment j at
  // j * 256 + m * 16 + n). Without a pool lane l takes pixel column l % 16 and channels (l / 16) * 8 .. + 7 of
  // both rows: 16 lanes store 16 consecutive pixels. With one, lane l takes window l % 8 (columns 2 (l % 8), + 1
  // of both rows) and channels (l / 8) * 4 .. + 3.
  const uint scratch_base = warp * 512;
  const int x0 = block_left + int(warp_column);
  [[unroll]] for (uint pair = 0; pair < ROW_PAIRS; ++pair) {
    const int y0 = block_top + int(warp_row + 8 * pair);
    [[unroll]] for (uint i = 0; i < M_FRAGS; ++i) {
      [[unroll]] for (uint j = 0; j < 2; ++j) {
        coopMatStoreNV(accumulators[i][2 * pair + j], scratch, scratch_base + j * 256, 16, false);
      }
      subgroupBarrier();
      const uint first_m = block * M_TILE + i * 16;
      if (POOL) {
        const uint window = lane % 8;
        const uint py = gl_WorkGroupID.y * (BLOCK_H / 2) + (warp_row + 8 * pair) / 2;
        const uint px = gl_WorkGroupID.x * (BLOCK_W / 2) + warp_column / 2 + window;
        bool inside[4];
        [[unroll]] for (uint q = 0; q < 4; ++q) {
          inside[q] = uint(y0 + int(q / 2)) < p.out_height && uint(x0 + int(2 * window + q % 2)) < p.out_width;
        }
        if (py < p.cells_height && px < p.cells_width) {
          [[unroll]] for (uint r = 0; r < 4; ++r) {
            const uint m = (lane / 8) * 4 + r;
            const uint channel = first_m + m;
            if (channel < p.out_channels) {
              const float shift = p.has_bias != 0 ? bias[channel] : 0.0;
              float value = uintBitsToFloat(0xff800000u);  // -infinity
              [[unroll]] for (uint q = 0; q < 4; ++q) {
                const float sum = scratch[scratch_base + (q / 2) * 256 + m * 16 + 2 * window + q % 2];
                if (inside[q]) value = max(value, activate(p.activation, p.slope, sum + shift));
              }
              store_result(((image * p.out_channels + channel) * p.cells_height + py) * p.cells_width + px, value);
            }
          }
        }
      } else {
        const uint n = lane % 16;
        const uint x = uint(x0) + n;
        [[unroll]] for (uint j = 0; j < 2; ++j) {
          const uint y = uint(y0) + j;
          if (y < p.out_height && x < p.out_width) {
            [[unroll]] for (uint r = 0; r < 8; ++r) {
              const uint m = (lane / 16) * 8 + r;
              const uint channel = first_m + m;
              if (channel < p.out_channels) {
                const float shift = p.has_bias != 0 ? bias[channel] : 0.0;
                const float sum = scratch[scratch_base + j * 256 + m * 16 + n];
                store_result(((image * p.out_channels + channel) * p.out_height + y) * p.out_width + x,
                             activate(p.activation, p.slope, sum + shift));
              }
            }
          }
        }
      }
      // Every lane has read before the next row of fragments overwrites the scratch.
      subgroupBarrier();
    }
  }
}
