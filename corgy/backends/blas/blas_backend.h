// BlasBackend: the CPU backend. Convolution is im2col + one OpenBLAS sgemm per image and group; every other
// loop is spread over the cores by the backend's ThreadTeam.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "corgy/backend.h"
#include "corgy/backends/blas/thread_team.h"

namespace corgy {

/// Not safe to call from several threads at once: the im2col buffer is per instance (use one backend per thread).
class BlasBackend final : public Backend {
 public:
  /// threads: the team that runs every loop and shares each GEMM (0 = all cores).
  explicit BlasBackend(int threads = 0);

  std::string name() const override { return "blas"; }
  /// Sets the team size (0 = all cores). Throws corgy::Error if negative.
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
  /// Each GEMM is split among the team, so OpenBLAS itself must run single-threaded (see team_sgemm in the
  /// .cpp). Its thread count is process-wide and the application may have changed it: set it before each GEMM.
  void keep_openblas_single_threaded() const;
  /// The im2col scratch, grown to at least `count` floats when needed and reused across calls.
  float* column_buffer(std::size_t count);

  /// body(i) for i in [0, total), split into contiguous shares among `threads` members of the team.
  template <typename Body>
  void parallel_for(int threads, std::size_t total, const Body& body) {
    team_->run(threads, [&](const blas::TeamMember& member) {
      const blas::TeamMember::Range mine = member.share(total);
      for (std::size_t i = mine.begin; i < mine.end; ++i) body(i);
    });
  }

  int threads_ = 1;
  std::unique_ptr<blas::ThreadTeam> team_;
  std::vector<float> columns_;
};

}  // namespace corgy
