// BlasBackend::layer_norm: per outer index, the means, the variances and the results computed a row of `inner`
// values at a time (contiguous loops that vectorise; H * W for a norm over the channels), the outer indices and spans
// of 512 inner positions shared among the team. A norm over the last axis (inner = 1: ConvNeXt's after its permute,
// transformers') has rows of its own: each one contiguous, summed in lanes, and many rows to a task (one row is too
// little work to hand out).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "corgy/backends/blas/blas_backend.h"

namespace corgy {

namespace {

/// The sum of f(row[i]) for i < length, in 16 partial sums that the compiler keeps in SIMD registers (a single float
/// accumulator is a chain it may not reorder).
template <typename Function>
float row_sum(const float* row, std::size_t length, const Function& f) {
  constexpr std::size_t lanes = 16;
  float partial[lanes] = {};
  std::size_t i = 0;
  for (; i + lanes <= length; i += lanes) {
    for (std::size_t j = 0; j < lanes; ++j) partial[j] += f(row[i + j]);
  }
  float sum = 0.0f;
  for (; i < length; ++i) sum += f(row[i]);
  for (const float value : partial) sum += value;
  return sum;
}

/// One row of `length` contiguous values normalised: (x - mean) / sqrt(variance + epsilon) * scale + shift.
void normalize_row(const float* row, float* out, std::size_t length, float epsilon, const float* scale,
                   const float* shift) {
  const float inverse_length = 1.0f / static_cast<float>(length);
  const float mean = row_sum(row, length, [](float x) { return x; }) * inverse_length;
  const float variance = row_sum(row, length, [mean](float x) { return (x - mean) * (x - mean); }) * inverse_length;
  const float inverse_deviation = 1.0f / std::sqrt(variance + epsilon);
  for (std::size_t i = 0; i < length; ++i) out[i] = (row[i] - mean) * inverse_deviation * scale[i] + shift[i];
}

}  // namespace

void BlasBackend::layer_norm(const AxisExtent& axis, float epsilon, const Variable& scale, const Variable& shift,
                             const Variable& input, Variable& output) {
  const std::size_t inner = axis.inner;
  if (inner == 1) {
    profiler_.note("layer norm rows");
    const std::size_t length = axis.length;
    const std::size_t rows_per_task = std::max<std::size_t>(1, 4096 / length);
    parallel_for(threads_for(axis.count()), (axis.outer + rows_per_task - 1) / rows_per_task, [&](std::size_t task) {
      const std::size_t end = std::min(axis.outer, (task + 1) * rows_per_task);
      for (std::size_t o = task * rows_per_task; o < end; ++o) {
        normalize_row(input.data() + o * length, output.data() + o * length, length, epsilon, scale.data(),
                      shift.data());
      }
    });
    return;
  }
  profiler_.note("layer norm loop");
  // Tasks of up to `span` neighbouring positions of one outer index: at batch 1 a norm over the channels has one
  // outer index, which alone would leave the team's other threads idle (ConvNeXt's channels-first norms).
  constexpr std::size_t span = 512;
  const std::size_t spans = (inner + span - 1) / span;
  const float inverse_length = 1.0f / static_cast<float>(axis.length);
  parallel_for(threads_for(axis.count()), axis.outer * spans, [&](std::size_t task) {
    const std::size_t o = task / spans;
    const std::size_t first = task % spans * span;
    const std::size_t count = std::min(span, inner - first);
    const float* block = input.data() + o * axis.length * inner + first;
    float* target = output.data() + o * axis.length * inner + first;
    std::vector<float> mean(count, 0.0f);
    std::vector<float> variance(count, 0.0f);
    for (std::size_t l = 0; l < axis.length; ++l) {
      const float* row = block + l * inner;
      for (std::size_t i = 0; i < count; ++i) mean[i] += row[i];
    }
    for (std::size_t i = 0; i < count; ++i) mean[i] *= inverse_length;
    for (std::size_t l = 0; l < axis.length; ++l) {
      const float* row = block + l * inner;
      for (std::size_t i = 0; i < count; ++i) variance[i] += (row[i] - mean[i]) * (row[i] - mean[i]);
    }
    // variance becomes 1 / sqrt(variance + epsilon).
    for (std::size_t i = 0; i < count; ++i) variance[i] = 1.0f / std::sqrt(variance[i] * inverse_length + epsilon);
    for (std::size_t l = 0; l < axis.length; ++l) {
      const float* row = block + l * inner;
      float* out = target + l * inner;
      const float s = scale.data()[l];
      const float t = shift.data()[l];
      for (std::size_t i = 0; i < count; ++i) out[i] = (row[i] - mean[i]) * variance[i] * s + t;
    }
  });
}

}  // namespace corgy
