#include "corgy/layers/pad.h"

#include <fmt/format.h>

#include <algorithm>

namespace corgy {

std::string_view pad_mode_name(PadMode mode) {
  switch (mode) {
    case PadMode::constant: return "constant";
    case PadMode::reflect: return "reflect";
    case PadMode::edge: return "edge";
  }
  return "?";
}

Pad::Pad(const PadDesc& desc) : desc_(desc) {
  if (desc.top < 0 || desc.left < 0 || desc.bottom < 0 || desc.right < 0) {
    throw_parameter_error("pad", fmt::format("pads (top {}, left {}, bottom {}, right {}) must be >= 0", desc.top,
                                             desc.left, desc.bottom, desc.right));
  }
  // Like convolution and pooling windows: no model pads more, and an input's size plus such pads overflows int.
  constexpr int largest_pad = 1 << 16;
  if (std::max({desc.top, desc.left, desc.bottom, desc.right}) > largest_pad) {
    throw_parameter_error("pad", fmt::format("pads (top {}, left {}, bottom {}, right {}) must be at most {}", desc.top,
                                             desc.left, desc.bottom, desc.right, largest_pad));
  }
}

std::string Pad::describe() const {
  std::string text = fmt::format("pad {} t{} l{} b{} r{}", pad_mode_name(desc_.mode), desc_.top, desc_.left,
                                 desc_.bottom, desc_.right);
  if (desc_.mode == PadMode::constant && desc_.value != 0.0f) text += fmt::format(" value {}", desc_.value);
  return text;
}

Shape Pad::output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  if (desc_.mode == PadMode::reflect &&
      (std::max(desc_.top, desc_.bottom) >= in.h || std::max(desc_.left, desc_.right) >= in.w)) {
    throw_shape_error(fmt::format("an input larger than the reflected pads (more than {} rows and {} columns)",
                                  std::max(desc_.top, desc_.bottom), std::max(desc_.left, desc_.right)),
                      in);
  }
  return {in.n, in.c, in.h + desc_.top + desc_.bottom, in.w + desc_.left + desc_.right};
}

}  // namespace corgy
