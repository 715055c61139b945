#include "corgy/layers/channel_shuffle.h"

#include <fmt/format.h>

namespace corgy {

ChannelShuffle::ChannelShuffle(int groups) : groups_(groups) {
  if (groups < 1) throw_parameter_error("channel_shuffle", fmt::format("groups {} must be >= 1", groups));
}

std::string ChannelShuffle::describe() const { return fmt::format("channel_shuffle {} groups", groups_); }

Shape ChannelShuffle::output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  if (in.c % groups_ != 0) throw_shape_error(fmt::format("channels a multiple of {} groups", groups_), in);
  return in;
}

void ChannelShuffle::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  const int per_group = inputs[0]->shape().c / groups_;
  // Output channel k = j * groups + i (i = k % groups, j = k / groups) reads input channel i * per_group + j.
  backend.gather_channels({.first = 0, .inner = groups_, .inner_stride = per_group, .outer_stride = 1}, *inputs[0],
                          output);
}

}  // namespace corgy
