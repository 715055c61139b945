#include "corgy/matmul.h"

#include <fmt/format.h>

#include "corgy/error.h"

namespace corgy {

Variable matmul(Backend& backend, const Variable& a, const Variable& b, bool transpose_a, bool transpose_b) {
  if (!a.shape().is_matrix() || !b.shape().is_matrix()) {
    throw Error(
        fmt::format("matmul expects matrices (1, 1, rows, cols), got {} and {}", a.shape().str(), b.shape().str()));
  }
  const int rows = transpose_a ? a.shape().cols() : a.shape().rows();
  const int inner_a = transpose_a ? a.shape().rows() : a.shape().cols();
  const int inner_b = transpose_b ? b.shape().cols() : b.shape().rows();
  const int cols = transpose_b ? b.shape().rows() : b.shape().cols();
  if (inner_a != inner_b) {
    throw Error(fmt::format("matmul: inner dimensions differ: {}{} x {}{} ({} vs {})", a.shape().str(),
                            transpose_a ? "^T" : "", b.shape().str(), transpose_b ? "^T" : "", inner_a, inner_b));
  }
  Variable c(Shape::matrix(rows, cols));
  backend.begin_forward();
  backend.matmul(a, transpose_a, b, transpose_b, c);
  backend.end_forward();
  return c;
}

}  // namespace corgy
