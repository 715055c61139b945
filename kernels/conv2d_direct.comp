#version 450
// conv2d_direct: a convolution with few taps per output (K = in channels * kernel * kernel of at most 160) or few
// output channels (at most 16, any K: a network's last layer back to RGB), one group, and an input patch per
// channel that fits shared memory (the backend picks it for K up to 32: the first layer of an RGB network; the
// tuner times it wherever it fits), computed directly. The implicit GEMM spends its time there gathering B tiles
// of K rows for few multiply-adds, or filling 3 of a tile's 16 rows; here a workgroup stages the input patch under
// its outputs in shared memory a chunk of input channels at a time, with those channels' weights of CHANNELS
// output channels, and each thread multiplies its taps by them.
//
// A workgroup of 16 x 8 threads covers 16 x 8 cells; a cell is 2x2 convolution pixels: the window of a fused 2x2
// stride-2 max pool (which may start on the pool's padding, cell_top/cell_left), or without a pool just the next
// 2x2 pixels. A thread computes its cell's four pixels for output channels block * CHANNELS .. + CHANNELS - 1
// (workgroup z = image * channel_blocks + block) and writes them with bias and activation applied (with POOL, the
// maximum of those inside the convolution's output).
#extension GL_EXT_control_flow_attributes : require
#extension GL_GOOGLE_include_directive : require
#include "activation_functions.glsl"
#include "tensor_storage.glsl"

// Mirrors corgy::vulkan::DirectConvConstant.
layout(constant_id = 0) const uint CHANNELS = 16;  // output channels per thread
layout(constant_id = 1) const uint TAPS_K = 27;    // K: in channels * kernel * kernel
layout(constant_id = 2) const uint KERNEL_SIZE = 3;
layout(constant_id = 3) const bool POOL = false;
layout(constant_id = 4) const uint STRIDE = 1;
layout(constant_id = 5) const uint DILATION = 1;
layout(constant_id = 6) const uint CHUNK = 3;  // input channels staged at once
layout(local_size_x = 16, local_size_y = 8) in;

TENSOR_INPUT(0, source, 10)
layout(binding = 1) readonly buffer Weights { float weights[]; };
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
  uint cell_top;  // the pool's padding: cell (cy, cx) starts at pixel (2 cy - cell_top, 2 cx - cell_left)
  uint cell_left;
  uint channel_blocks;
  uint padding;
  uint has_bias;
  uint activation;
  float slope;
} p;

const uint CELLS_X = 16;
const uint CELLS_Y = 8;
const uint THREADS = CELLS_X * CELLS_Y;
const uint TAPS = KERNEL_SIZE * KERNEL_SIZE;
const uint IN_CHANNELS = TAPS_K / TAPS;
// The input under a workgroup's 2 CELLS_Y x 2 CELLS_X pixels, per input channel.
const uint PATCH_H = (2 * CELLS_Y - 1) * STRIDE + (KERNEL_SIZE - 1) * DILATION + 1;
const uint PATCH_W = (2 * CELLS_X - 1) * STRIDE + (KERNEL_SIZE - 1) * DILATION + 1;
const uint PATCH = PATCH_H * PATCH_W;
const uint STAGED = CHUNK * PATCH;
// Loads each thread has in flight before it writes them to shared memory.
const uint BATCH = 8;

// The chunk's weights, tap-major: w_tile[k * CHANNELS + c] is output channel first_channel + c of the chunk's tap k
// (tap k of input channel chunk + k / TAPS).
shared float w_tile[CHUNK * TAPS * CHANNELS];
// input_patch[(c * PATCH_H + row) * PATCH_W + column]: input channel chunk + c at (patch_top + row, patch_left + column).
shared float input_patch[STAGED];

void main() {
  const uint block = gl_WorkGroupID.z % p.channel_blocks;
  const uint image = gl_WorkGroupID.z / p.channel_blocks;
  const uint first_channel = block * CHANNELS;
  const uint tid = gl_LocalInvocationIndex;

  const int patch_top = (int(2 * gl_WorkGroupID.y * CELLS_Y) - int(p.cell_top)) * int(STRIDE) - int(p.padding);
  const int patch_left = (int(2 * gl_WorkGroupID.x * CELLS_X) - int(p.cell_left)) * int(STRIDE) - int(p.padding);
  const uint plane = p.height * p.width;
  const uint image_base = image * p.in_channels * plane;
  // The thread's first tap in the patch: pixel (2 ty, 2 tx) of the workgroup's block.
  const uint first_tap = 2 * gl_LocalInvocationID.y * STRIDE * PATCH_W + 2 * gl_LocalInvocationID.x * STRIDE;

  // sums[c][q]: output channel first_channel + c, pixel q = 2 dy + dx of the cell.
  vec4 sums[CHANNELS];
  [[unroll]] for (uint c = 0; c < CHANNELS; ++c) sums[c] = vec4(0.0);
  for (uint chunk = 0; chunk < IN_CHANNELS; chunk += CHUNK) {
    barrier();  // every thread is done with the last chunk
    for (uint i = tid; i < CHUNK * TAPS * CHANNELS; i += THREADS) {
      const uint k = i / CHANNELS;
      const uint c = i - k * CHANNELS;
      const uint channel = first_channel + c;
      const uint tap = chunk * TAPS + k;
      w_tile[i] = channel < p.out_channels && tap < TAPS_K ? weights[channel * TAPS_K + tap] : 0.0;
    }
    for (uint first = 0; first < STAGED; first += THREADS * BATCH) {
      float staged[BATCH];
      [[unroll]] for (uint b = 0; b < BATCH; ++b) {
        const uint i = first + b * THREADS + tid;
        const uint c = i / PATCH;
        const uint row = (i - c * PATCH) / PATCH_W;
        const uint column = i - c * PATCH - row * PATCH_W;
        const int y = patch_top + int(row);
        const int x = patch_left + int(column);
        staged[b] = 0.0;
        if (i < STAGED && chunk + c < IN_CHANNELS && uint(y) < p.height && uint(x) < p.width) {
          staged[b] = load_source(image_base + (chunk + c) * plane + uint(y) * p.width + uint(x));
        }
      }
      [[unroll]] for (uint b = 0; b < BATCH; ++b) {
        const uint i = first + b * THREADS + tid;
        if (i < STAGED) input_patch[i] = staged[b];
      }
    }
    barrier();
    const uint chunk_channels = min(CHUNK, IN_CHANNELS - chunk);
    for (uint c = 0; c < chunk_channels; ++c) {
      [[unroll]] for (uint ky = 0; ky < KERNEL_SIZE; ++ky) {
        [[unroll]] for (uint kx = 0; kx < KERNEL_SIZE; ++kx) {
          const uint at = c * PATCH + first_tap + ky * DILATION * PATCH_W + kx * DILATION;
          const vec4 taps = vec4(input_patch[at], input_patch[at + STRIDE], input_patch[at + STRIDE * PATCH_W],
                                 input_patch[at + STRIDE * PATCH_W + STRIDE]);
          const uint k = (c * KERNEL_SIZE + ky) * KERNEL_SIZE + kx;
          [[unroll]] for (uint o = 0; o < CHANNELS; ++o) sums[o] += w_tile[k * CHANNELS + o] * taps;
        }
      }
    }
  }

  const uint cy = gl_WorkGroupID.y * CELLS_Y + gl_LocalInvocationID.y;
  const uint cx = gl_WorkGroupID.x * CELLS_X + gl_LocalInvocationID.x;
  if (cy >= p.cells_height || cx >= p.cells_width) return;
  const int y0 = int(2 * cy) - int(p.cell_top);
  const int x0 = int(2 * cx) - int(p.cell_left);
  bool inside[4];
  [[unroll]] for (uint q = 0; q < 4; ++q) {
    inside[q] = uint(y0 + int(q / 2)) < p.out_height && uint(x0 + int(q % 2)) < p.out_width;
  }
  // Output planes are the pooled ones with POOL; index of channel first_channel at the cell (its first pixel).
  const uint out_plane = POOL ? p.cells_height * p.cells_width : p.out_height * p.out_width;
  const uint first_index = (image * p.out_channels + first_channel) * out_plane +
                           (POOL ? cy * p.cells_width + cx : uint(y0) * p.out_width + uint(x0));
  [[unroll]] for (uint o = 0; o < CHANNELS; ++o) {
    const uint channel = first_channel + o;
    if (channel >= p.out_channels) break;
    const float shift = p.has_bias != 0 ? bias[channel] : 0.0;
    const uint index = first_index + o * out_plane;
    if (POOL) {
      float value = uintBitsToFloat(0xff800000u);  // -infinity
      [[unroll]] for (uint q = 0; q < 4; ++q) {
        if (inside[q]) value = max(value, activate(p.activation, p.slope, sums[o][q] + shift));
      }
      store_result(index, value);
    } else {
      [[unroll]] for (uint q = 0; q < 4; ++q) {
        if (inside[q]) {
          store_result(index + (q / 2) * p.out_width + q % 2, activate(p.activation, p.slope, sums[o][q] + shift));
        }
      }
    }
  }
}
