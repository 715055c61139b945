// NaiveBackend::copy_strided: the definition of StridedCopyDesc, one element at a time over the box's index.
#include <array>
#include <cstddef>
#include <cstdint>

#include "corgy/backends/naive/naive_backend.h"

namespace corgy {

void NaiveBackend::copy_strided(const StridedCopyDesc& desc, const Variable& input, Variable& output) {
  const std::size_t total = desc.count();
  std::array<int, StridedCopyDesc::max_rank> index{};
  for (std::size_t i = 0; i < total; ++i) {
    std::int64_t from = desc.input_offset;
    std::int64_t to = desc.output_offset;
    for (int k = 0; k < desc.rank; ++k) {
      const auto a = static_cast<std::size_t>(k);
      from += index[a] * desc.input_stride[a];
      to += index[a] * desc.output_stride[a];
    }
    output.data()[to] = input.data()[from];
    // The next index, the last axis fastest.
    for (int k = desc.rank; k-- > 0;) {
      const auto a = static_cast<std::size_t>(k);
      if (++index[a] < desc.extent[a]) break;
      index[a] = 0;
    }
  }
}

}  // namespace corgy
