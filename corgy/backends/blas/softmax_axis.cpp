// BlasBackend::softmax_axis: per outer index, the maxima, the sums of exponentials and the results computed a row of
// `inner` values at a time (contiguous loops), the outer indices shared among the team. The largest value is
// subtracted first so that exp() cannot overflow.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "corgy/backends/blas/blas_backend.h"

namespace corgy {

void BlasBackend::softmax_axis(const AxisExtent& axis, bool log, const Variable& input, Variable& output) {
  profiler_.note(log ? "log-softmax loop" : "softmax loop");
  const std::size_t inner = axis.inner;
  parallel_for(threads_for(axis.count()), axis.outer, [&](std::size_t o) {
    const float* block = input.data() + o * axis.length * inner;
    float* target = output.data() + o * axis.length * inner;
    std::vector<float> largest(block, block + inner);
    std::vector<float> sum(inner, 0.0f);
    for (std::size_t l = 1; l < axis.length; ++l) {
      const float* row = block + l * inner;
      for (std::size_t i = 0; i < inner; ++i) largest[i] = std::max(largest[i], row[i]);
    }
    for (std::size_t l = 0; l < axis.length; ++l) {
      const float* row = block + l * inner;
      float* out = target + l * inner;
      for (std::size_t i = 0; i < inner; ++i) {
        out[i] = std::exp(row[i] - largest[i]);
        sum[i] += out[i];
      }
    }
    for (std::size_t l = 0; l < axis.length; ++l) {
      const float* row = block + l * inner;
      float* out = target + l * inner;
      if (log) {
        for (std::size_t i = 0; i < inner; ++i) out[i] = row[i] - largest[i] - std::log(sum[i]);
      } else {
        for (std::size_t i = 0; i < inner; ++i) out[i] /= sum[i];
      }
    }
  });
}

}  // namespace corgy
