// BlasBackend::prelu: each plane with its channel's slope, in the branch-free form that vectorises.
#include <algorithm>
#include <cstddef>

#include "corgy/backends/blas/blas_backend.h"

namespace corgy {

void BlasBackend::prelu(const Variable& input, const Variable& slope, Variable& output) {
  const Shape& shape = input.shape();
  const std::size_t plane_size = shape.plane_count();
  profiler_.note("prelu loop");
  parallel_for(threads_for(input.count()), static_cast<std::size_t>(shape.n) * shape.c, [&](std::size_t plane) {
    const float channel_slope = slope.data()[plane % static_cast<std::size_t>(shape.c)];
    const float* source = input.data() + plane * plane_size;
    float* target = output.data() + plane * plane_size;
    for (std::size_t i = 0; i < plane_size; ++i) {
      target[i] = std::max(source[i], 0.0f) + channel_slope * std::min(source[i], 0.0f);
    }
  });
}

}  // namespace corgy
