// 3x3 stride-1 convolutions by Winograd's minimal filtering F(2x2, 3x3) (Lavin and Gray, 2015): each 2x2 output
// tile costs 16 multiplications per input channel instead of 36. Three steps:
//   1. winograd_input_transform.comp: every 4x4 input patch d -> V = B^T d B, 16 matrices (channels x tiles);
//   2. 16 GEMMs in one batched gemm_tiled.comp dispatch: M_t = U_t (out x in channels) x V_t, where
//      U = G g G^T are the weights transformed once on the host, at first use;
//   3. winograd_output_transform.comp: Y = A^T m A per tile, bias, activation, and a fused 2x2 max pool whose
//      windows are the tiles.
// The transformed input and the products go through two scratch buffers (16/4 times the input and output
// sizes, rounded to whole tiles), so it pays where the multiplications dominate: wide layers with many tiles.
#pragma once

#include <vector>

#include "corgy/backend.h"
#include "corgy/backends/vulkan/runtime.h"

namespace corgy::vulkan {

/// Whether Winograd's F(2x2, 3x3) can compute `conv`: a 3x3 kernel, stride 1, no dilation, one group.
bool winograd_fits(const Conv2dDesc& conv);

/// Whether `conv` on an input of `input` shape runs as Winograd on `runtime` with `options`: when forced
/// (corgy::Error if it does not fit), or when automatic with no implicit-GEMM or cooperative-matrix tile forced,
/// for wide layers (64+ channels; in fp16 precision only on tensor cores and from 256 input channels) with enough
/// tiles (winograd_conv.cpp says why) whose scratch matrices fit one binding.
bool winograd_chosen(const Runtime& runtime, const Conv2dDesc& conv, const Shape& input,
                     const VulkanConvolutionOptions& options);

/// Whether Winograd can run `conv` on an input of `input` shape on `runtime` at all: winograd_fits, scratch
/// matrices that fit one binding, and in fp16 precision a device with cooperative matrices (the tuner's test).
bool winograd_runs(const Runtime& runtime, const Conv2dDesc& conv, const Shape& input);

/// Whether Winograd's output step can apply `pool` after the convolution: a 2x2 stride-2 max pool without
/// padding at the top and left, so that its windows are the 2x2 tiles.
bool winograd_pool_fusable(const Pool2dDesc& pool);

/// U = G g G^T of OIHW 3x3 weights, as 16 matrices (out x in channels): u[(t * out + o) * in + i], t = 4 r + c.
std::vector<float> winograd_weights(const float* weights, int out_channels, int in_channels);

/// Records `conv` (and `fused_pool`, a winograd_pool_fusable() one, when given: output is then the pooled tensor).
/// With `residual` (output's shape; never with a pool) the output transform adds it before the activation.
void record_winograd_conv(Runtime& runtime, const Conv2dDesc& conv, const Pool2dDesc* fused_pool, const Variable& input,
                          const Variable& weights, const Variable* bias, Variable& output,
                          const Variable* residual = nullptr);

}  // namespace corgy::vulkan
