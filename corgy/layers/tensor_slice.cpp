#include "corgy/layers/tensor_slice.h"

#include <fmt/format.h>

#include "corgy/error.h"

namespace corgy {

namespace {

std::string range_text(const SliceAxis& s) {
  return s.step == 1 ? fmt::format("axis {} [{}, {})", s.axis, s.start, s.stop)
                     : fmt::format("axis {} [{}, {}) step {}", s.axis, s.start, s.stop, s.step);
}

}  // namespace

TensorSlice::TensorSlice(const TensorDims& input, std::vector<SliceAxis> axes)
    : input_(input), output_(input), axes_(std::move(axes)) {
  std::array<bool, TensorDims::max_rank> named{};
  for (const SliceAxis& s : axes_) {
    if (s.axis < 1 || s.axis >= input.rank) {
      throw_parameter_error("tensor_slice", fmt::format("{} of a tensor {}: the axis must be 1 to {} (axis 0, the "
                                                        "batch, is never sliced)",
                                                        range_text(s), input.str(), input.rank - 1));
    }
    auto& seen = named[static_cast<std::size_t>(s.axis)];
    if (seen) {
      throw_parameter_error("tensor_slice", fmt::format("axis {} is sliced twice", s.axis));
    }
    seen = true;
    const int extent = input[s.axis];
    const bool valid = s.start >= 0 && s.start < extent && s.step != 0 &&
                       (s.step > 0 ? s.stop > s.start && s.stop <= extent : s.stop < s.start && s.stop >= -1);
    if (!valid) {
      throw_parameter_error("tensor_slice", fmt::format("{} of a tensor {}: needs 0 <= start < {} and a non-empty "
                                                        "range(start, stop, step) inside the axis",
                                                        range_text(s), input.str(), extent));
    }
    output_.extent[static_cast<std::size_t>(s.axis)] = s.count();
  }
}

std::string TensorSlice::describe() const {
  std::string text = fmt::format("tensor_slice of {}", input_.str());
  for (const SliceAxis& s : axes_) {
    // Two appends, not text += " " + range_text(s): GCC 12 at -O3 takes that for an overflowing memcpy
    // (-Wstringop-overflow) once <string> comes from the precompiled header.
    text += ' ';
    text += range_text(s);
  }
  return text;
}

Shape TensorSlice::output_shape(std::span<const Shape> inputs) const {
  const TensorDims in = input_.matching(inputs[0], describe());
  return output_.with_batch(in[0]).folded();
}

void TensorSlice::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  const TensorDims in = input_.matching(inputs[0]->shape(), describe());
  const TensorDims out = output_.with_batch(in[0]);
  const auto in_strides = in.strides();
  const auto out_strides = out.strides();
  StridedCopyDesc desc;
  desc.rank = out.rank;
  for (std::size_t a = 0; a < static_cast<std::size_t>(out.rank); ++a) {
    desc.extent[a] = out.extent[a];
    desc.input_stride[a] = static_cast<std::int64_t>(in_strides[a]);
    desc.output_stride[a] = static_cast<std::int64_t>(out_strides[a]);
  }
  for (const SliceAxis& s : axes_) {
    const auto a = static_cast<std::size_t>(s.axis);
    desc.input_offset += static_cast<std::int64_t>(s.start) * desc.input_stride[a];
    desc.input_stride[a] *= s.step;
  }
  backend.copy_strided(desc, *inputs[0], output);
}

}  // namespace corgy
