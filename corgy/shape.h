// Shape: the (N, C, H, W) extent of a Variable.
#pragma once

#include <cstddef>
#include <string>

namespace corgy {

/// Extent of a 4-D float tensor in NCHW order. 1-D and 2-D data use the trailing dimensions, as Caffe does:
/// a vector of n is (1, 1, 1, n), a rows x cols matrix is (1, 1, rows, cols), and a batch of N feature vectors
/// (the input and output of Linear) is (N, features, 1, 1).
struct Shape {
  int n = 0;
  int c = 0;
  int h = 0;
  int w = 0;

  static Shape vector(int length) { return {1, 1, 1, length}; }
  static Shape matrix(int rows, int cols) { return {1, 1, rows, cols}; }

  /// Number of elements, n*c*h*w.
  std::size_t count() const {
    return static_cast<std::size_t>(n) * static_cast<std::size_t>(c) * static_cast<std::size_t>(h) *
           static_cast<std::size_t>(w);
  }
  /// Elements of one image (c*h*w).
  std::size_t image_count() const { return static_cast<std::size_t>(c) * h * w; }
  /// Elements of one channel plane (h*w).
  std::size_t plane_count() const { return static_cast<std::size_t>(h) * w; }
  /// Rows and columns when the shape is read as a matrix (1, 1, rows, cols).
  int rows() const { return h; }
  int cols() const { return w; }
  bool is_matrix() const { return n == 1 && c == 1; }
  bool has_zero_or_negative() const { return n <= 0 || c <= 0 || h <= 0 || w <= 0; }

  bool operator==(const Shape&) const = default;

  /// "(N, C, H, W)", for error messages.
  std::string str() const;
};

}  // namespace corgy
