#include "corgy/layers/channel_slice.h"

#include <fmt/format.h>

namespace corgy {

ChannelSlice::ChannelSlice(int start, int stop, int step) : start_(start), stop_(stop), step_(step) {
  if (start < 0 || step < 1 || stop <= start) {
    throw_parameter_error(
        "channel_slice",
        fmt::format("channels [{}, {}) step {}: needs 0 <= start < stop and step >= 1", start, stop, step));
  }
}

std::string ChannelSlice::describe() const {
  return step_ == 1 ? fmt::format("channel_slice [{}, {})", start_, stop_)
                    : fmt::format("channel_slice [{}, {}) step {}", start_, stop_, step_);
}

Shape ChannelSlice::output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  if (stop_ > in.c)
    throw_shape_error(fmt::format("at least {} channels (channel_slice [{}, {}))", stop_, start_, stop_), in);
  return {in.n, channels(), in.h, in.w};
}

void ChannelSlice::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  backend.gather_channels({.first = start_, .inner = channels(), .inner_stride = step_, .outer_stride = 0}, *inputs[0],
                          output);
}

}  // namespace corgy
