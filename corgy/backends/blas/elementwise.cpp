// BlasBackend::elementwise: a op b over whole planes, with the operation and the broadcast chosen once per call so
// that each plane's loop vectorises.
#include <cstddef>

#include "corgy/backends/blas/blas_backend.h"

namespace corgy {

namespace {

/// Calls body(operation) with `operation` a functor for `op`, fixed at compile time.
template <typename Body>
void with_operation(ElementwiseOp op, const Body& body) {
  switch (op) {
    case ElementwiseOp::add: return body([](float a, float b) { return a + b; });
    case ElementwiseOp::subtract: return body([](float a, float b) { return a - b; });
    case ElementwiseOp::multiply: return body([](float a, float b) { return a * b; });
    case ElementwiseOp::divide: return body([](float a, float b) { return a / b; });
  }
}

}  // namespace

void BlasBackend::elementwise(ElementwiseOp op, const Variable& a, const Variable& b, Variable& output) {
  const std::size_t plane_size = a.shape().plane_count();
  const bool per_plane = b.shape() != a.shape();
  profiler_.note(per_plane ? "elementwise loop (broadcast per plane)" : "elementwise loop");
  with_operation(op, [&](const auto& operation) {
    parallel_for(threads_for(a.count()), a.count() / plane_size, [&](std::size_t plane) {
      const float* left = a.data() + plane * plane_size;
      float* target = output.data() + plane * plane_size;
      if (per_plane) {
        const float right = b.data()[plane];
        for (std::size_t i = 0; i < plane_size; ++i) target[i] = operation(left[i], right);
      } else {
        const float* right = b.data() + plane * plane_size;
        for (std::size_t i = 0; i < plane_size; ++i) target[i] = operation(left[i], right[i]);
      }
    });
  });
}

}  // namespace corgy
