// BlasBackend::layer_norm: per outer index, the means, the variances and the results computed a row of `inner`
// values at a time (contiguous loops that vectorise; inner = 1 for a norm over the last axis, H * W over the
// channels), the outer indices shared among the team.
#include <cmath>
#include <cstddef>
#include <vector>

#include "corgy/backends/blas/blas_backend.h"

namespace corgy {

void BlasBackend::layer_norm(const AxisExtent& axis, float epsilon, const Variable& scale, const Variable& shift,
                             const Variable& input, Variable& output) {
  profiler_.note("layer norm loop");
  const std::size_t inner = axis.inner;
  const float inverse_length = 1.0f / static_cast<float>(axis.length);
  parallel_for(threads_for(axis.count()), axis.outer, [&](std::size_t o) {
    const float* block = input.data() + o * axis.length * inner;
    float* target = output.data() + o * axis.length * inner;
    std::vector<float> mean(inner, 0.0f);
    std::vector<float> variance(inner, 0.0f);
    for (std::size_t l = 0; l < axis.length; ++l) {
      const float* row = block + l * inner;
      for (std::size_t i = 0; i < inner; ++i) mean[i] += row[i];
    }
    for (std::size_t i = 0; i < inner; ++i) mean[i] *= inverse_length;
    for (std::size_t l = 0; l < axis.length; ++l) {
      const float* row = block + l * inner;
      for (std::size_t i = 0; i < inner; ++i) variance[i] += (row[i] - mean[i]) * (row[i] - mean[i]);
    }
    // variance becomes 1 / sqrt(variance + epsilon).
    for (std::size_t i = 0; i < inner; ++i) variance[i] = 1.0f / std::sqrt(variance[i] * inverse_length + epsilon);
    for (std::size_t l = 0; l < axis.length; ++l) {
      const float* row = block + l * inner;
      float* out = target + l * inner;
      const float s = scale.data()[l];
      const float t = shift.data()[l];
      for (std::size_t i = 0; i < inner; ++i) out[i] = (row[i] - mean[i]) * variance[i] * s + t;
    }
  });
}

}  // namespace corgy
