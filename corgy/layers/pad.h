// Pad: grows every plane by a border filled with a constant, the mirrored input (reflect) or its edge values.
#pragma once

#include "corgy/layers/layer.h"

namespace corgy {

/// Input (N, C, H, W) -> output (N, C, top + H + bottom, left + W + right). PyTorch's F.pad(x, (left, right, top,
/// bottom), mode) with mode "constant" (value), "reflect" or "replicate" (PadMode::edge), and ONNX's Pad over
/// the two spatial axes. Reflect needs each pad smaller than the input along its axis (checked per input shape).
class Pad final : public Layer {
 public:
  /// Throws corgy::Error for a negative pad.
  explicit Pad(const PadDesc& desc);
  /// The same pad on all four sides.
  static Pad uniform(int pad, PadMode mode = PadMode::constant, float value = 0.0f) {
    return Pad({.mode = mode, .top = pad, .left = pad, .bottom = pad, .right = pad, .value = value});
  }

  std::string_view type() const override { return "pad"; }
  std::string describe() const override;
  Shape output_shape(std::span<const Shape> inputs) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override {
    backend.pad(desc_, *inputs[0], output);
  }

  const PadDesc& desc() const { return desc_; }

 private:
  PadDesc desc_;
};

/// "constant", "reflect" or "edge".
std::string_view pad_mode_name(PadMode mode);

}  // namespace corgy
