// Depthwise convolution as a direct loop, for the case where im2col + GEMM is a poor fit.
#pragma once

#include <cstddef>

#include "corgy/backend.h"

namespace corgy::blas {

/// True when every output channel sees exactly one input channel (groups == in_channels == out_channels).
inline bool is_depthwise(const Conv2dDesc& desc) {
  return desc.groups > 1 && desc.groups == desc.in_channels && desc.groups == desc.out_channels;
}

/// One output plane (image, channel) = `plane` of output = activation(depthwise_conv(input, weights) + bias);
/// bias may be null. Planes are independent, so callers spread them over threads.
///
/// Why not im2col + GEMM: per channel that is a GEMM of [1 x k*k] by [k*k x Ho*Wo], far too small for BLAS to
/// amortise its call and packing overhead, run C times, after an im2col that writes k*k copies of the input
/// for only 2*k*k flops per output. The direct loop reads the input from cache and vectorises along output rows.
void depthwise_conv2d_plane(const Conv2dDesc& desc, const Shape& in_shape, const float* input, const float* weights,
                            const float* bias, const Shape& out_shape, float* output, std::size_t plane);

}  // namespace corgy::blas
