// Depthwise convolutions (groups == in_channels == out_channels): the SIMD kernels of depthwise_kernels.h over a
// layer's planes, and the scalar loop of the baseline.
#pragma once

#include <cstddef>
#include <vector>

#include "corgy/backend.h"
#include "corgy/backends/blas/depthwise_kernels.h"
#include "corgy/backends/blas/thread_team.h"

namespace corgy::blas {

struct ConvPlan;

/// True when every output channel sees exactly one input channel (groups == in_channels == out_channels).
inline bool is_depthwise(const Conv2dDesc& desc) {
  return desc.groups > 1 && desc.groups == desc.in_channels && desc.groups == desc.out_channels;
}

/// True when the SIMD kernels take this depthwise convolution (kernels up to DepthwiseGeometry::max_taps taps).
inline bool depthwise_kernel_applies(const Conv2dDesc& desc) {
  return is_depthwise(desc) && desc.kernel * desc.kernel <= DepthwiseGeometry::max_taps;
}

/// The whole depthwise convolution of `input` (N, C, H, W) into `output`: every member takes items of
/// depthwise_planes_per_item(output) planes from `queue` (of ceil(N * C / per item) items) until none is left.
/// `buffer` is the member's own. weights (C, 1, k, k), bias (1, 1, 1, C) or null.
void depthwise_conv(const TeamMember& member, WorkQueue& queue, const Conv2dDesc& desc,
                    const DepthwiseGeometry& geometry, const Variable& input, const Variable& weights,
                    const Variable* bias, Variable& output, std::vector<float>& buffer);
std::size_t depthwise_planes_per_item(const Shape& output);

/// The same by the channel-block kernel (plan.algorithm == ConvAlgorithm::depthwise_channel_blocks): each member
/// takes items of `per_item` planes (depthwise_channel_planes_per_item) from `queue` (of ceil(N * C / per_item)).
void depthwise_conv_channel_blocks(const TeamMember& member, WorkQueue& queue, std::size_t per_item,
                                   const ConvPlan& plan, const Variable& input, Variable& output,
                                   std::vector<float>& buffer);
/// Planes per queue item of the channel-block kernel for `planes` planes over `threads` members: whole register
/// blocks, about four items per member, so that a member held back by the machine leaves little for the others.
std::size_t depthwise_channel_planes_per_item(std::size_t planes, int threads);

/// The baseline ("blas:im2col"): one output plane (image, channel) = `plane` of output = activation(depthwise_conv(
/// input, weights) + bias) by a scalar loop over taps; bias may be null. Planes are independent, so callers spread
/// them over threads.
///
/// Why not im2col + GEMM: per channel that is a GEMM of [1 x k*k] by [k*k x Ho*Wo], far too small for BLAS to
/// amortise its call and packing overhead, run C times, after an im2col that writes k*k copies of the input
/// for only 2*k*k flops per output.
void depthwise_conv2d_plane(const Conv2dDesc& desc, const Shape& in_shape, const float* input, const float* weights,
                            const float* bias, const Shape& out_shape, float* output, std::size_t plane);

}  // namespace corgy::blas
