// Winograd convolution for 3x3 stride-1 layers: one GEMM per point over transformed tiles does the work of the im2col
// GEMM with 4x (F(4x4, 3x3)) or 2.25x (F(2x2, 3x3)) fewer multiplications (winograd_kernels.h has the transforms).
#pragma once

#include <vector>

#include "corgy/backend.h"
#include "corgy/backends/blas/packed_gemm.h"
#include "corgy/backends/blas/thread_team.h"
#include "corgy/backends/blas/winograd_kernels.h"

namespace corgy::blas {

/// True for the convolutions Winograd computes: 3x3 (F(4x4, 3x3), F(2x2, 3x3)) or 5x5 (F(2x2, 5x5)) kernels at
/// stride 1, no dilation, one group.
bool winograd_applies(const Conv2dDesc& desc);

/// A layer's weights transformed once (U = G g G^T, in double precision) and packed for the GEMM kernel, per point,
/// and how tiles are blocked for its input shape.
struct WinogradPlan {
  WinogradVariant variant = WinogradVariant::f4x4;
  const GemmMicroKernel* kernel = nullptr;
  std::vector<PackedA> points;  // one matrix [out_channels x in_channels] per point
  std::vector<float> bias;      // out_channels values (zeros without a bias)
  int tiles_per_block = 0;      // tiles (over the whole batch) transformed and multiplied together
};
/// The team shares the weights' transformation.
WinogradPlan plan_winograd(const Conv2dDesc& desc, const Shape& input, const float* weights, const float* bias,
                           WinogradVariant variant, ThreadTeam& team);

/// Buffers reused across layers and forwards: the transformed tiles and the GEMMs' products of one block.
struct WinogradWorkspace {
  std::vector<float> tiles;
  std::vector<float> products;
  std::vector<std::vector<float>> gemm_scratch;  // one per team member
};

/// The buffers of one thread computing bands of output rows (winograd_conv_rows).
struct WinogradBandBuffers {
  std::vector<float> tiles;
  std::vector<float> products;
  std::vector<float> gemm_scratch;
};

/// Tile rows [ty0, ty1) of images [n0, n1) (output rows [t ty0, min(out_h, t ty1)) for the variant's output tile t),
/// every output channel, by the calling thread alone, all the images' tiles in one set of GEMMs: image n's channel c
/// row t ty0 + r goes to target + (n - n0) * image_stride + c * channel_stride + r * out_w.
void winograd_conv_rows(const Conv2dDesc& desc, const WinogradPlan& plan, const Variable& input, const Shape& output,
                        int n0, int n1, int ty0, int ty1, float* target, std::size_t channel_stride,
                        std::size_t image_stride, WinogradBandBuffers& buffers);

/// output = activation(conv(input) + bias) by the whole team (each member calls it; returns after a barrier).
void winograd_conv(const TeamMember& member, const Conv2dDesc& desc, const WinogradPlan& plan, const Variable& input,
                   Variable& output, WinogradWorkspace& workspace);

}  // namespace corgy::blas
