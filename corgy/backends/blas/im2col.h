// im2col: unfolds one image (or one group's channels of it) into the column matrix that turns a convolution
// into a single GEMM; col2im: folds such a matrix back into an image, the second half of a transposed convolution.
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

/// Writes the [channels * kernel_h * kernel_w] x [out_h * out_w] row-major column matrix of `image` (channels x height
/// x width, contiguous planes): row (c, ky, kx) holds, for every output pixel, the input value under that kernel tap,
/// or 0 where the tap reads padding. The rows are shared among the team; returns after the team's barrier.
void im2col(const TeamMember& member, const float* image, int channels, int height, int width, const Conv2dDesc& desc,
            int out_h, int out_w, float* columns);

/// The reverse of im2col, for a transposed convolution: adds row (c, ky, kx) of the [channels * kernel_h * kernel_w]
/// x [height * width] column matrix (one value per input pixel (iy, ix)) into output plane c (out_h x out_w, contiguous
/// planes) at (iy * stride_h - pad_top + ky * dilation_h, ix * stride_w - pad_left + kx * dilation_w), where that lies
/// inside the plane. The planes are shared among the team; returns after the team's barrier.
void col2im(const TeamMember& member, const float* columns, int channels, int height, int width,
            const ConvTranspose2dDesc& desc, int out_h, int out_w, float* output);

}  // namespace corgy::blas
