// The blas backend's packed weights (corgy/backends/blas/packed_gemm.h): PackedA::assign_scaled_columns, through
// which squeeze-excite gates scale a projection's weights image by image, equals packing the scaled matrix, keeps
// the bias, and never writes into a buffer another matrix shares.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "corgy/backends/blas/packed_gemm.h"

namespace corgy::testing {
namespace {

/// A rows x depth row-major matrix of distinct values.
std::vector<float> matrix(int rows, int depth) {
  std::vector<float> values(static_cast<std::size_t>(rows) * depth);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.25f * static_cast<float>(i % 97) - 7.0f;
  return values;
}

void expect_same(const blas::PackedA& actual, const blas::PackedA& expected) {
  ASSERT_EQ(actual.rows(), expected.rows());
  ASSERT_EQ(actual.depth(), expected.depth());
  ASSERT_EQ(actual.mr(), expected.mr());
  for (int p = 0; p < expected.panels(); ++p) {
    for (int i = 0; i < expected.depth() * expected.mr(); ++i) {
      ASSERT_EQ(actual.panel(p)[i], expected.panel(p)[i]) << "panel " << p << ", element " << i;
    }
  }
  ASSERT_EQ(actual.bias() == nullptr, expected.bias() == nullptr);
  if (expected.bias()) {
    for (int r = 0; r < expected.panels() * expected.mr(); ++r) ASSERT_EQ(actual.bias()[r], expected.bias()[r]);
  }
}

TEST(PackedA, ScaledColumnsEqualPackingTheScaledMatrix) {
  // Rows not a multiple of mr (padding rows stay zero), with and without a bias, and a second assignment of
  // another geometry into the same matrix (its buffer grows).
  blas::PackedA scaled;
  for (const auto& [rows, depth, mr, with_bias] :
       {std::tuple{21, 13, 8, true}, std::tuple{5, 40, 24, false}, std::tuple{64, 96, 28, true}}) {
    const std::vector<float> a = matrix(rows, depth);
    std::vector<float> bias(static_cast<std::size_t>(rows));
    for (int r = 0; r < rows; ++r) bias[r] = 0.5f * static_cast<float>(r) - 3.0f;
    std::vector<float> scale(static_cast<std::size_t>(depth));
    for (int k = 0; k < depth; ++k) scale[k] = 0.125f * static_cast<float>(k + 1);
    std::vector<float> scaled_a = a;
    for (int r = 0; r < rows; ++r) {
      for (int k = 0; k < depth; ++k) scaled_a[static_cast<std::size_t>(r) * depth + k] *= scale[k];
    }
    const float* bias_values = with_bias ? bias.data() : nullptr;
    const blas::PackedA source(a.data(), rows, depth, depth, bias_values, mr);
    const blas::PackedA expected(scaled_a.data(), rows, depth, depth, bias_values, mr);
    scaled.assign_scaled_columns(source, scale.data());
    expect_same(scaled, expected);
  }
}

TEST(PackedA, ScaledColumnsLeaveASharedBufferAlone) {
  // Two matrices in one buffer (as Winograd's are): assigning into the second gives it a buffer of its own (its
  // place in the shared one is not where a buffer of its own starts).
  std::vector<blas::PackedA> pair = blas::PackedA::in_one_buffer(2, 8, 4, 8);
  for (int r = 0; r < 8; ++r) {
    for (int k = 0; k < 4; ++k) pair[0].at(r, k) = static_cast<float>(10 * r + k);
  }
  const std::vector<float> a = matrix(8, 4);
  const blas::PackedA source(a.data(), 8, 4, 4, nullptr, 8);
  const std::vector<float> twos(4, 2.0f);
  pair[1].assign_scaled_columns(source, twos.data());
  for (int r = 0; r < 8; ++r) {
    for (int k = 0; k < 4; ++k) {
      ASSERT_EQ(pair[0].at(r, k), static_cast<float>(10 * r + k));
      ASSERT_EQ(pair[1].at(r, k), 2.0f * a[static_cast<std::size_t>(r) * 4 + k]);
    }
  }
}

}  // namespace
}  // namespace corgy::testing
