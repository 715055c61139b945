#version 450
// winograd_input_transform: the input side of a 3x3 stride-1 convolution by Winograd's F(2x2, 3x3)
// (corgy/backends/vulkan/winograd_conv.cpp). Output tile (ty, tx) of image n covers the 2x2 output pixels from
// (2 ty, 2 tx) and reads the 4x4 input patch d from row 2 ty - padding, column 2 tx - padding (cells outside the
// image are zeros). Its V = B^T d B has 16 values, one for each of the 16 matrices of the transformed input:
//   transformed[(t * channels + channel) * tiles_pitch + tile],  t = 4 i + j,  tile = (n * tiles_h + ty) * tiles_w + tx
// Matrix t is the B operand (channels x tiles) of GEMM t; tiles_pitch is the tile count rounded up to a multiple of
// 4 (the GEMM then reads whole vec4s) and the columns beyond the last tile are zeros.
//
//        | 1  0 -1  0 |
//  B^T = | 0  1  1  0 |
//        | 0 -1  1  0 |
//        | 0  1  0 -1 |
// Built also as winograd_input_transform_fp16 (TENSOR_FP16): the input and the transformed input may be fp16.
#extension GL_GOOGLE_include_directive : require
#include "tensor_storage.glsl"

layout(local_size_x = 256) in;

TENSOR_INPUT(0, source, 10)
TENSOR_OUTPUT(1, transformed, 11)

// Mirrors corgy::vulkan::WinogradInputParams.
layout(push_constant) uniform Params {
  uint channels;
  uint height;
  uint width;
  uint tiles_h;
  uint tiles_w;
  uint tiles;  // images * tiles_h * tiles_w
  uint tiles_pitch;
  uint padding;
} p;

void main() {
  const uint total = p.channels * p.tiles_pitch;
  const uint plane_tiles = p.tiles_h * p.tiles_w;
  // A grid-stride loop: the dispatch may be smaller than the element count.
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
    const uint tile = i % p.tiles_pitch;
    const uint channel = i / p.tiles_pitch;
    float d[4][4];
    for (uint r = 0; r < 4; ++r) {
      for (uint c = 0; c < 4; ++c) d[r][c] = 0.0;
    }
    if (tile < p.tiles) {
      const uint image = tile / plane_tiles;
      const uint in_plane = tile - image * plane_tiles;
      const uint ty = in_plane / p.tiles_w;
      const uint tx = in_plane - ty * p.tiles_w;
      const int y0 = int(2 * ty) - int(p.padding);
      const int x0 = int(2 * tx) - int(p.padding);
      const uint plane = (image * p.channels + channel) * p.height * p.width;
      for (uint r = 0; r < 4; ++r) {
        const int y = y0 + int(r);
        if (y < 0 || y >= int(p.height)) continue;
        for (uint c = 0; c < 4; ++c) {
          const int x = x0 + int(c);
          if (x >= 0 && x < int(p.width)) d[r][c] = load_source(plane + uint(y) * p.width + uint(x));
        }
      }
    }
    // B^T d, then (B^T d) B.
    float bd[4][4];
    for (uint c = 0; c < 4; ++c) {
      bd[0][c] = d[0][c] - d[2][c];
      bd[1][c] = d[1][c] + d[2][c];
      bd[2][c] = d[2][c] - d[1][c];
      bd[3][c] = d[1][c] - d[3][c];
    }
    const uint matrix = p.channels * p.tiles_pitch;
    const uint base = channel * p.tiles_pitch + tile;
    for (uint r = 0; r < 4; ++r) {
      store_transformed((4 * r + 0) * matrix + base, bd[r][0] - bd[r][2]);
      store_transformed((4 * r + 1) * matrix + base, bd[r][1] + bd[r][2]);
      store_transformed((4 * r + 2) * matrix + base, bd[r][2] - bd[r][1]);
      store_transformed((4 * r + 3) * matrix + base, bd[r][1] - bd[r][3]);
    }
  }
}
