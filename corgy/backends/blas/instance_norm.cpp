// BlasBackend::instance_norm: each plane's statistics and its normalisation in one task, planes spread over the team.
#include <array>
#include <cmath>
#include <cstddef>

#include "corgy/backends/blas/blas_backend.h"
#include "corgy/backends/blas/fused_activation.h"

namespace corgy {

namespace {

/// Sum of f(values[i]) in double, in eight independent lanes so that the compiler can vectorise the loop (one
/// running sum would be a serial dependency chain). Double: a plane of 256 x 256 values summed in float would
/// lose about 1e-4 of the mean when the mean is large against the spread.
template <typename Term>
double sum_in_double(const float* values, std::size_t count, const Term& term) {
  constexpr std::size_t lanes = 8;
  std::array<double, lanes> sums{};
  std::size_t i = 0;
  for (; i + lanes <= count; i += lanes) {
    for (std::size_t lane = 0; lane < lanes; ++lane) sums[lane] += term(values[i + lane]);
  }
  double total = 0.0;
  for (; i < count; ++i) total += term(values[i]);
  for (double sum : sums) total += sum;
  return total;
}

}  // namespace

void BlasBackend::instance_norm(const Variable& input, const Variable& scale, const Variable& shift, float epsilon,
                                Activation activation, Variable& output) {
  const Shape& shape = input.shape();
  const std::size_t plane_size = shape.plane_count();
  profiler_.note("instance norm loop");
  blas::with_activation(activation, [&](const auto& activate) {
    parallel_for(threads_for(input.count()), static_cast<std::size_t>(shape.n) * shape.c, [&](std::size_t plane) {
      const float* source = input.data() + plane * plane_size;
      float* target = output.data() + plane * plane_size;
      const double cells = static_cast<double>(plane_size);
      const double mean = sum_in_double(source, plane_size, [](float x) { return static_cast<double>(x); }) / cells;
      const double variance =
          sum_in_double(source, plane_size, [mean](float x) { return (x - mean) * (x - mean); }) / cells;
      const std::size_t channel = plane % static_cast<std::size_t>(shape.c);
      // y = (x - mean) * factor + shift, the subtraction first and with the mean as two floats (its float and the
      // rest): folded into x * factor + (shift - mean * factor), or with the mean rounded to float, a plane far from
      // zero against its spread (mean 2e6, deviation 0.3) loses its deviations to rounding. x - mean_high is exact
      // for x within a factor 2 of the mean.
      const auto factor = static_cast<float>(scale.data()[channel] / std::sqrt(variance + epsilon));
      const auto mean_high = static_cast<float>(mean);
      const auto mean_low = static_cast<float>(mean - mean_high);
      const float plane_shift = shift.data()[channel];
      for (std::size_t i = 0; i < plane_size; ++i) {
        target[i] = activate(((source[i] - mean_high) - mean_low) * factor + plane_shift);
      }
    });
  });
}

}  // namespace corgy
