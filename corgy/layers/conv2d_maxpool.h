// Conv2dMaxPool: a convolution and the max pool that alone reads its output, computed as one operation.
#pragma once

#include "corgy/layers/conv2d.h"
#include "corgy/layers/maxpool2d.h"

namespace corgy {

/// Input (N, in_channels, H, W) -> the max pool of the convolution's output (N, out_channels, Hp, Wp).
///
/// Sequential makes these when it plans a forward (corgy/model/fusion.h) so that a backend never writes the
/// convolution's full output to memory: each backend implements Backend::conv2d_maxpool (the naive one as the
/// two operations in turn, which the layer harness compares the fused paths against). The layer shares the
/// convolution's weight and bias storage (views), so it sees weight changes and the backend keys them as the
/// convolution's own.
class Conv2dMaxPool final : public Layer {
 public:
  Conv2dMaxPool(const Conv2d& conv, const MaxPool2d& pool);

  std::string_view type() const override { return "conv2d_maxpool"; }
  std::string describe() const override;
  Shape output_shape(std::span<const Shape> inputs) const override;
  void upload(Backend& backend) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;
  double flops(std::span<const Shape> inputs) const override;

 private:
  Shape conv_output_shape(const Shape& input) const;

  Conv2dDesc conv_desc_;
  std::string conv_description_;
  Variable weights_;  // views of the convolution's storage
  Variable bias_;     // empty when the convolution has no bias
  MaxPool2d pool_;
};

}  // namespace corgy
