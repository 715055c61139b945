// A 1x1 convolution of stride s > 1 (ResNet's downsampling shortcuts) as a pointwise convolution of the input's
// every s-th pixel: the subsampled input (1 / s^2 of it, a few hundred kilobytes) is copied once, then the stride-1
// path runs on it, with all it has that implicit im2col lacks: the input read in place, the one GEMM over the
// batch's pixels and, in conv2d_add, the residual added in the GEMM's epilogue instead of by a pass of its own.
#include <cstddef>

#include "corgy/backends/blas/blas_backend.h"

namespace corgy {

bool BlasBackend::is_strided_pointwise(const Conv2dDesc& desc) {
  return desc.is_square() && desc.kernel == 1 && desc.padding == 0 && desc.stride > 1;
}

const Variable& BlasBackend::subsampled_input(const Conv2dDesc& desc, const Variable& input) {
  const Shape& in = input.shape();
  const Shape sub{in.n, in.c, desc.output_size(in.h), desc.output_size(in.w)};
  if (subsampled_input_.capacity() < sub.count()) subsampled_input_ = Variable(sub);
  subsampled_view_ = subsampled_input_.view(sub);
  const int stride = desc.stride;
  const float* from = input.data();
  float* to = subsampled_view_.data();
  parallel_for(threads_for(sub.count()), static_cast<std::size_t>(sub.n) * sub.c, [&](std::size_t plane) {
    const float* source = from + plane * in.plane_count();
    float* target = to + plane * sub.plane_count();
    for (int y = 0; y < sub.h; ++y) {
      const float* row = source + static_cast<std::size_t>(y) * stride * in.w;
      for (int x = 0; x < sub.w; ++x) target[x] = row[x * stride];
      target += sub.w;
    }
  });
  return subsampled_view_;
}

Conv2dDesc BlasBackend::pointwise_of(const Conv2dDesc& desc) {
  Conv2dDesc pointwise = desc;
  pointwise.stride = 1;
  return pointwise;
}

}  // namespace corgy
