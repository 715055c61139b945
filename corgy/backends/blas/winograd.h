// Winograd F(4x4, 3x3) convolution for 3x3 stride-1 layers: 36 GEMMs over transformed tiles do the work of the
// im2col GEMM with 4x fewer multiplications (winograd_kernels.h has the transforms and the reference).
#pragma once

#include <vector>

#include "corgy/backend.h"
#include "corgy/backends/blas/packed_gemm.h"
#include "corgy/backends/blas/thread_team.h"

namespace corgy::blas {

/// True for the convolutions Winograd F(4x4, 3x3) computes: 3x3 kernel, stride 1, no dilation, one group.
bool winograd_applies(const Conv2dDesc& desc);

/// A layer's weights transformed once (U = G g G^T, in double precision) and packed for the GEMM kernel, per point,
/// and how tiles are blocked for its input shape.
struct WinogradPlan {
  const GemmMicroKernel* kernel = nullptr;
  std::vector<PackedA> points;  // kWinogradPoints matrices [out_channels x in_channels]
  std::vector<float> bias;      // out_channels values (zeros without a bias)
  int tiles_per_block = 0;      // tiles (over the whole batch) transformed and multiplied together
};
WinogradPlan plan_winograd(const Conv2dDesc& desc, const Shape& input, const float* weights, const float* bias);

/// Buffers reused across layers and forwards: the transformed tiles and the GEMMs' products of one block.
struct WinogradWorkspace {
  std::vector<float> tiles;
  std::vector<float> products;
  std::vector<GemmWorkspace> gemm;  // one per team member
};

/// output = activation(conv(input) + bias) by the whole team (each member calls it; returns after a barrier).
void winograd_conv(const TeamMember& member, const Conv2dDesc& desc, const WinogradPlan& plan, const Variable& input,
                   Variable& output, WinogradWorkspace& workspace);

}  // namespace corgy::blas
