// BlasBackend: the CPU backend. Convolution is im2col + one OpenBLAS sgemm per image and group; every other
// loop is spread over the cores with OpenMP.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "corgy/backend.h"

namespace corgy {

class BlasBackend final : public Backend {
 public:
  /// threads: workers for the OpenMP loops and for OpenBLAS (0 = all cores).
  explicit BlasBackend(int threads = 0);

  std::string name() const override { return "blas"; }
  /// Sets the OpenMP team size and OpenBLAS's thread count (0 = all cores). Throws corgy::Error if negative.
  void set_threads(int threads) override;
  int threads() const override { return threads_; }

  void conv2d(const Conv2dDesc& desc, const Variable& input, const Variable& weights, const Variable* bias,
              Variable& output) override;
  void pool2d(const Pool2dDesc& desc, const Variable& input, Variable& output) override;
  void activation(Activation activation, const Variable& input, Variable& output) override;
  void linear(const Variable& input, const Variable& weights, const Variable* bias, Activation activation,
              Variable& output) override;
  void softmax(const Variable& input, Variable& output) override;
  void channel_affine(const Variable& input, const Variable& scale, const Variable& shift, Variable& output) override;
  void upsample_nearest(int scale, const Variable& input, Variable& output) override;
  void concat_channels(std::span<const Variable* const> inputs, Variable& output) override;
  void add(const Variable& a, const Variable& b, Activation activation, Variable& output) override;
  void matmul(const Variable& a, bool transpose_a, const Variable& b, bool transpose_b, Variable& c) override;

 private:
  /// Threads worth waking for a loop over `elements` floats: small loops stay on the calling thread, where
  /// waking the team would cost more than the loop.
  int threads_for(std::size_t elements) const;
  /// OpenBLAS's thread count is process-wide and another BlasBackend may have changed it: set ours before a GEMM.
  void claim_blas_threads() const;
  /// The im2col scratch, grown to at least `count` floats when needed and reused across calls.
  float* column_buffer(std::size_t count);

  int threads_ = 1;
  std::vector<float> columns_;
};

}  // namespace corgy
