// StridedCopyDesc's helpers (corgy/backend.h): the element count, the fewest-axes form the backends run, and the
// bounds check the layers make before calling Backend::copy_strided.
#include <cstddef>
#include <cstdint>

#include "corgy/backend.h"

namespace corgy {

std::size_t StridedCopyDesc::count() const {
  std::size_t n = 1;
  for (int k = 0; k < rank; ++k) n *= static_cast<std::size_t>(extent[static_cast<std::size_t>(k)]);
  return n;
}

StridedCopyDesc StridedCopyDesc::simplified() const {
  StridedCopyDesc s;
  s.input_offset = input_offset;
  s.output_offset = output_offset;
  for (int k = 0; k < rank; ++k) {
    const auto a = static_cast<std::size_t>(k);
    if (extent[a] == 1) continue;
    if (s.rank > 0) {
      const auto last = static_cast<std::size_t>(s.rank - 1);
      // Axis k continues the previous kept axis in both tensors: one longer run.
      if (s.input_stride[last] == input_stride[a] * extent[a] &&
          s.output_stride[last] == output_stride[a] * extent[a]) {
        s.extent[last] *= extent[a];
        s.input_stride[last] = input_stride[a];
        s.output_stride[last] = output_stride[a];
        continue;
      }
    }
    const auto next = static_cast<std::size_t>(s.rank++);
    s.extent[next] = extent[a];
    s.input_stride[next] = input_stride[a];
    s.output_stride[next] = output_stride[a];
  }
  if (s.rank == 0) {  // a single element
    s.rank = 1;
    s.extent[0] = 1;
    s.input_stride[0] = 1;
    s.output_stride[0] = 1;
  }
  return s;
}

bool StridedCopyDesc::fits(std::size_t input_count, std::size_t output_count) const {
  if (rank < 0 || rank > max_rank) return false;
  // The lowest and highest address of each tensor: every axis adds its stride times 0 or extent - 1.
  std::int64_t in_low = input_offset, in_high = input_offset, out_low = output_offset, out_high = output_offset;
  for (int k = 0; k < rank; ++k) {
    const auto a = static_cast<std::size_t>(k);
    if (extent[a] < 1) return false;
    const std::int64_t steps = extent[a] - 1;
    std::int64_t in_span = 0, out_span = 0;
    if (__builtin_mul_overflow(input_stride[a], steps, &in_span) ||
        __builtin_mul_overflow(output_stride[a], steps, &out_span)) {
      return false;
    }
    (in_span < 0 ? in_low : in_high) += in_span;
    (out_span < 0 ? out_low : out_high) += out_span;
  }
  return in_low >= 0 && out_low >= 0 && static_cast<std::uint64_t>(in_high) < input_count &&
         static_cast<std::uint64_t>(out_high) < output_count;
}

}  // namespace corgy
