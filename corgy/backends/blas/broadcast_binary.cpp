// BlasBackend::broadcast_binary: the output walked row by row along its innermost axis, each row a loop the compiler
// vectorises (both operands contiguous, or one of them one value for the row), rows shared among the team.
#include <cstddef>

#include "corgy/backends/blas/blas_backend.h"

namespace corgy {

namespace {

template <typename Body>
void with_binary(BinaryOp op, const Body& body) {
  switch (op) {
    case BinaryOp::add: return body([](float a, float b) { return a + b; });
    case BinaryOp::subtract: return body([](float a, float b) { return a - b; });
    case BinaryOp::multiply: return body([](float a, float b) { return a * b; });
    case BinaryOp::divide: return body([](float a, float b) { return a / b; });
    case BinaryOp::power: return body([](float a, float b) { return apply(BinaryOp::power, a, b); });
    case BinaryOp::minimum: return body([](float a, float b) { return apply(BinaryOp::minimum, a, b); });
    case BinaryOp::maximum: return body([](float a, float b) { return apply(BinaryOp::maximum, a, b); });
  }
}

/// One output row of `length` values: left and right step by their strides (0 or 1 in the common cases).
template <typename Operation>
void binary_row(const Operation& operation, const float* left, std::size_t left_step, const float* right,
                std::size_t right_step, float* target, std::size_t length) {
  if (left_step == 1 && right_step == 1) {
    for (std::size_t i = 0; i < length; ++i) target[i] = operation(left[i], right[i]);
  } else if (left_step == 1 && right_step == 0) {
    const float r = right[0];
    for (std::size_t i = 0; i < length; ++i) target[i] = operation(left[i], r);
  } else if (left_step == 0 && right_step == 1) {
    const float l = left[0];
    for (std::size_t i = 0; i < length; ++i) target[i] = operation(l, right[i]);
  } else {
    for (std::size_t i = 0; i < length; ++i) target[i] = operation(left[i * left_step], right[i * right_step]);
  }
}

}  // namespace

void BlasBackend::broadcast_binary(BinaryOp op, const BroadcastDesc& desc, const Variable& a, const Variable& b,
                                   Variable& output) {
  profiler_.note("broadcast loop");
  const int last = desc.rank - 1;
  const auto length = static_cast<std::size_t>(desc.extent[static_cast<std::size_t>(last)]);
  const std::size_t a_step = desc.a_stride[static_cast<std::size_t>(last)];
  const std::size_t b_step = desc.b_stride[static_cast<std::size_t>(last)];
  const std::size_t rows = desc.count() / length;
  with_binary(op, [&](const auto& operation) {
    parallel_for(threads_for(desc.count()), rows, [&](std::size_t row) {
      // The row's offsets in a and b from its index over the outer axes.
      std::size_t ia = 0, ib = 0, rest = row;
      for (int k = last - 1; k >= 0; --k) {
        const auto axis = static_cast<std::size_t>(k);
        const auto extent = static_cast<std::size_t>(desc.extent[axis]);
        ia += (rest % extent) * desc.a_stride[axis];
        ib += (rest % extent) * desc.b_stride[axis];
        rest /= extent;
      }
      binary_row(operation, a.data() + ia, a_step, b.data() + ib, b_step, output.data() + row * length, length);
    });
  });
}

}  // namespace corgy
