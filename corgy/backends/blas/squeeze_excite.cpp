// BlasBackend::squeeze_excite: the pool, the two small matrix-vector products and the per-channel scale of a
// squeeze-and-excitation block in one operation, so that the block costs two passes over its input (the means, the
// scaled copy) and no layer boundaries in between.
#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

#include "corgy/backends/blas/activation_kernels.h"
#include "corgy/backends/blas/blas_backend.h"
#include "corgy/backends/blas/thread_team.h"

namespace corgy {

namespace {

/// Sum of x[0, count) in eight independent float lanes (a single running sum is a serial chain the compiler may
/// not reorder), then the lanes in double.
double lane_sum(const float* x, std::size_t count) {
  constexpr std::size_t lanes = 8;
  std::array<float, lanes> sums{};
  std::size_t i = 0;
  for (; i + lanes <= count; i += lanes) {
    for (std::size_t lane = 0; lane < lanes; ++lane) sums[lane] += x[i + lane];
  }
  double total = 0.0;
  for (; i < count; ++i) total += x[i];
  for (const float sum : sums) total += sum;
  return total;
}

/// y[r] = activation(bias[r] + sum_c m[r][c] x[c]) for r < rows: m row-major (rows x columns), bias may be null.
void matrix_vector(const float* m, const float* bias, const float* x, int rows, int columns, Activation activation,
                   float* y) {
  for (int r = 0; r < rows; ++r) {
    const float* row = m + static_cast<std::size_t>(r) * columns;
    std::array<float, 8> sums{};
    int c = 0;
    for (; c + 8 <= columns; c += 8) {
      for (int lane = 0; lane < 8; ++lane) sums[lane] += row[c + lane] * x[c + lane];
    }
    float total = bias ? bias[r] : 0.0f;
    for (; c < columns; ++c) total += row[c] * x[c];
    for (const float sum : sums) total += sum;
    y[r] = total;
  }
  blas::bias_activate(y, y, static_cast<std::size_t>(rows), 0.0f, activation);
}

}  // namespace

void BlasBackend::squeeze_excite(const SqueezeExciteDesc& desc, const Variable& input, const Variable& reduce_weights,
                                 const Variable* reduce_bias, const Variable& expand_weights,
                                 const Variable* expand_bias, Variable& output) {
  profiler_.note("squeeze-excite: means, two matrix-vector products, scale");
  const Shape& shape = input.shape();
  const std::size_t plane = shape.plane_count();
  const std::size_t planes = static_cast<std::size_t>(shape.n) * shape.c;
  std::vector<float> gates(planes);  // first the means, then the gates, per (image, channel)
  std::vector<float> squeezed(static_cast<std::size_t>(desc.squeeze_channels));
  team_->run(threads_for(input.count()), [&](const blas::TeamMember& member) {
    const blas::TeamMember::Range mine = member.share(planes);
    const float scale = 1.0f / static_cast<float>(plane);
    for (std::size_t p = mine.begin; p < mine.end; ++p) {
      gates[p] = static_cast<float>(lane_sum(input.data() + p * plane, plane)) * scale;
    }
    member.sync();
    // The products are small (C x S multiply-adds per image): one member does them.
    if (member.index() == 0) {
      for (int n = 0; n < shape.n; ++n) {
        float* image_gates = gates.data() + static_cast<std::size_t>(n) * desc.channels;
        matrix_vector(reduce_weights.data(), reduce_bias ? reduce_bias->data() : nullptr, image_gates,
                      desc.squeeze_channels, desc.channels, desc.reduce_activation, squeezed.data());
        matrix_vector(expand_weights.data(), expand_bias ? expand_bias->data() : nullptr, squeezed.data(),
                      desc.channels, desc.squeeze_channels, desc.expand_activation, image_gates);
      }
    }
    member.sync();
    for (std::size_t p = mine.begin; p < mine.end; ++p) {
      const float* source = input.data() + p * plane;
      float* target = output.data() + p * plane;
      const float gate = gates[p];
      for (std::size_t i = 0; i < plane; ++i) target[i] = source[i] * gate;
    }
  });
}

}  // namespace corgy
