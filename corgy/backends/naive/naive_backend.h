// NaiveBackend: plain single-threaded loops. The reference every other backend is tested against, and the
// baseline of the speedup tables (like Corgy's CPU version). Kept obviously correct, not fast.
#pragma once

#include "corgy/backend.h"
#include "corgy/backends/cpu/cpu_profiler.h"

namespace corgy {

class NaiveBackend final : public Backend {
 public:
  std::string name() const override { return "naive"; }

  void set_profiling(bool enabled) override { profiler_.set_enabled(enabled); }
  void begin_layer(int index) override;
  std::vector<OpProfile> take_profile() override { return profiler_.take(); }

  void conv2d(const Conv2dDesc& desc, const Variable& input, const Variable& weights, const Variable* bias,
              Variable& output) override;
  /// The convolution into a temporary, then the pool: the definition the fused paths are checked against.
  void conv2d_maxpool(const Conv2dDesc& conv, const Pool2dDesc& pool, const Variable& input, const Variable& weights,
                      const Variable* bias, Variable& output) override;
  /// The convolution with the residual added to each element's sum before the activation.
  void conv2d_add(const Conv2dDesc& desc, const Variable& input, const Variable& weights, const Variable* bias,
                  const Variable& residual, Variable& output) override;
  /// The three convolutions in turn, through temporaries (the residual added to the projection's sums).
  void inverted_residual(const InvertedResidualDesc& desc, const Variable& input, const Variable* residual,
                         Variable& output) override;
  /// The pool, the two 1x1 convolutions and the product, as the separate layers compute them.
  void preactivated_conv2d(const Conv2dDesc& desc, std::span<const Variable* const> inputs, const Variable& scale,
                           const Variable& shift, Activation input_activation, const Pool2dDesc* input_pool,
                           const Variable& weights, const Variable* bias, Variable& output) override;
  void squeeze_excite(const SqueezeExciteDesc& desc, const Variable& input, const Variable& reduce_weights,
                      const Variable* reduce_bias, const Variable& expand_weights, const Variable* expand_bias,
                      Variable& output) override;
  void squeeze_excite_conv2d(const SqueezeExciteDesc& excite, const SqueezeExciteWeights& excite_weights,
                             const Conv2dDesc& conv, const Variable& input, const Variable& weights,
                             const Variable* bias, const Variable* residual, Variable& output) override;
  void pool2d(const Pool2dDesc& desc, const Variable& input, Variable& output) override;
  void activation(Activation activation, const Variable& input, Variable& output) override;
  void linear(const Variable& input, const Variable& weights, const Variable* bias, Activation activation,
              Variable& output) override;
  void softmax(const Variable& input, Variable& output) override;
  void channel_affine(const Variable& input, const Variable& scale, const Variable& shift, Activation activation,
                      Variable& output) override;
  void upsample_nearest(int scale, const Variable& input, Variable& output) override;
  /// The definition: every input pixel scattered through every kernel tap into a double-precision sum.
  void conv_transpose2d(const ConvTranspose2dDesc& desc, const Variable& input, const Variable& weights,
                        const Variable* bias, Variable& output) override;
  /// The definition: each output pixel's input coordinate along each axis, its taps and their weights.
  void resize(const ResizeDesc& desc, const Variable& input, Variable& output) override;
  void concat_channels(std::span<const Variable* const> inputs, Variable& output) override;
  void gather_channels(const ChannelGatherDesc& desc, const Variable& input, Variable& output) override;
  /// The definition, one element at a time (strided_copy.cpp).
  void copy_strided(const StridedCopyDesc& desc, const Variable& input, Variable& output) override;
  void add(const Variable& a, const Variable& b, Activation activation, Variable& output) override;
  void instance_norm(const Variable& input, const Variable& scale, const Variable& shift, float epsilon,
                     Activation activation, Variable& output) override;
  void pad(const PadDesc& desc, const Variable& input, Variable& output) override;
  void elementwise(ElementwiseOp op, const Variable& a, const Variable& b, Variable& output) override;
  void prelu(const Variable& input, const Variable& slope, Variable& output) override;
  void matmul(const Variable& a, bool transpose_a, const Variable& b, bool transpose_b, Variable& c) override;
  // Arithmetic on tensors of any rank, defined in tensor_math.cpp.
  void broadcast_binary(BinaryOp op, const BroadcastDesc& desc, const Variable& a, const Variable& b,
                        Variable& output) override;
  void unary(UnaryOp op, const Variable& input, Variable& output) override;
  void reduce_axis(ReduceOp op, const AxisExtent& axis, const Variable& input, Variable& output) override;
  void softmax_axis(const AxisExtent& axis, bool log, const Variable& input, Variable& output) override;
  void batched_matmul(const BatchedMatmulDesc& desc, const Variable& a, const Variable& b, Variable& output) override;
  void layer_norm(const AxisExtent& axis, float epsilon, const Variable& scale, const Variable& shift,
                  const Variable& input, Variable& output) override;

 private:
  cpu::CpuProfiler profiler_;
};

}  // namespace corgy
