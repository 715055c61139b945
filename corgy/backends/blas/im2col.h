// im2col: unfolds one image (or one group's channels of it) into the column matrix that turns a convolution
// into a single GEMM.
#pragma once

#include "corgy/backend.h"
#include "corgy/backends/blas/thread_team.h"

namespace corgy::blas {

/// The half-open range of output positions [begin, end) along one axis whose input position
/// `output * stride + offset` lies inside [0, input_size). Outside it the kernel tap reads padding.
struct ValidRange {
  int begin;
  int end;
};
ValidRange valid_outputs(int offset, int stride, int input_size, int output_size);

/// Writes the [channels * k * k] x [out_h * out_w] row-major column matrix of `image` (channels x height x width,
/// contiguous planes): row (c, ky, kx) holds, for every output pixel, the input value under that kernel tap, or 0
/// where the tap reads padding. The rows are shared among the team; returns after the team's barrier.
void im2col(const TeamMember& member, const float* image, int channels, int height, int width, const Conv2dDesc& desc,
            int out_h, int out_w, float* columns);

}  // namespace corgy::blas
