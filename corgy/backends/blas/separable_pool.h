// Max and average pooling of one channel plane in two passes: the rows of an output row's windows reduced column by
// column (contiguous, vectorised), then that reduced line reduced along each window's columns. A k x k window costs
// 2k operations per output instead of k * k scalar ones (Inception v3's 3x3/1 average pools took 13% of its forward
// as the scalar loop).
#pragma once

#include <cstddef>
#include <vector>

#include "corgy/backend.h"

namespace corgy::blas {

/// output (out_shape.h x out_shape.w) = desc's pool of input (in_shape.h x in_shape.w), one plane. The max ignores
/// padded cells (as if -infinity); the average counts them as zeros only when desc.count_include_pad is set. `line`
/// is the caller's buffer, grown as needed.
void pool_plane(const Pool2dDesc& desc, const float* input, const Shape& in_shape, float* output,
                const Shape& out_shape, std::vector<float>& line);

/// Whether desc's one window is the whole unpadded plane (global pooling: ONNX GlobalAveragePool, the heads of
/// ResNet, MobileNet, DenseNet), which pool_whole_planes computes.
bool pools_whole_plane(const Pool2dDesc& desc, const Shape& in_shape, const Shape& out_shape);

/// output[p] = the max (or the mean) of input's plane p, planes of plane_size contiguous values, p < planes: one
/// vectorised pass each, no window bookkeeping.
void pool_whole_planes(PoolKind kind, const float* input, std::size_t plane_size, std::size_t planes, float* output);

}  // namespace corgy::blas
