// BlasBackend::reduce_axis: with inner > 1, each output row of `inner` values accumulates the input rows one after
// another (contiguous loops that vectorise); with inner = 1, each output value reduces a contiguous run. Outer
// indices are shared among the team.
#include <cmath>
#include <cstddef>

#include "corgy/backends/blas/blas_backend.h"

namespace corgy {

namespace {

template <typename Body>
void with_reduction(ReduceOp op, const Body& body) {
  switch (op) {
    case ReduceOp::mean:
    case ReduceOp::sum: return body([](float acc, float v) { return acc + v; });
    case ReduceOp::max: return body([](float acc, float v) { return std::fmax(acc, v); });
    case ReduceOp::min: return body([](float acc, float v) { return std::fmin(acc, v); });
  }
}

}  // namespace

void BlasBackend::reduce_axis(ReduceOp op, const AxisExtent& axis, const Variable& input, Variable& output) {
  profiler_.note("reduce loop");
  const float scale = op == ReduceOp::mean ? 1.0f / static_cast<float>(axis.length) : 1.0f;
  with_reduction(op, [&](const auto& combine) {
    if (axis.inner == 1) {
      parallel_for(threads_for(axis.count()), axis.outer, [&](std::size_t o) {
        const float* run = input.data() + o * axis.length;
        float acc = run[0];
        for (std::size_t l = 1; l < axis.length; ++l) acc = combine(acc, run[l]);
        output.data()[o] = acc * scale;
      });
      return;
    }
    parallel_for(threads_for(axis.count()), axis.outer, [&](std::size_t o) {
      const float* block = input.data() + o * axis.length * axis.inner;
      float* target = output.data() + o * axis.inner;
      for (std::size_t i = 0; i < axis.inner; ++i) target[i] = block[i];
      for (std::size_t l = 1; l < axis.length; ++l) {
        const float* row = block + l * axis.inner;
        for (std::size_t i = 0; i < axis.inner; ++i) target[i] = combine(target[i], row[i]);
      }
      if (scale != 1.0f) {
        for (std::size_t i = 0; i < axis.inner; ++i) target[i] *= scale;
      }
    });
  });
}

}  // namespace corgy
