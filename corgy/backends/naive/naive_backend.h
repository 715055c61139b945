// NaiveBackend: plain single-threaded loops. The reference every other backend is tested against, and the
// baseline of the speedup tables (like Corgy's CPU version). Kept obviously correct, not fast.
#pragma once

#include "corgy/backend.h"

namespace corgy {

class NaiveBackend final : public Backend {
 public:
  std::string name() const override { return "naive"; }

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
};

}  // namespace corgy
