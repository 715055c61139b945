// BlasBackend::copy_strided: the copy in its fewest-axes form (StridedCopyDesc::simplified), as runs along the last
// axis: a memcpy where both tensors are contiguous there, a fill for a broadcast value, else a strided loop. Large
// copies are split among the team by blocks of runs, or by pieces of one long run.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "corgy/backends/blas/blas_backend.h"

namespace corgy {

namespace {

/// Elements one task copies at least: blocks of short runs, or pieces of a long run.
constexpr std::size_t kElementsPerCopyTask = 16384;

/// Copies `length` elements of one run.
void copy_run(const float* from, std::int64_t from_stride, float* to, std::int64_t to_stride, std::size_t length) {
  if (from_stride == 1 && to_stride == 1) {
    std::memcpy(to, from, length * sizeof(float));
  } else if (from_stride == 0 && to_stride == 1) {
    std::fill(to, to + length, *from);
  } else if (to_stride == 1) {  // a transpose's gather: contiguous writes
    for (std::size_t i = 0; i < length; ++i) to[i] = from[static_cast<std::int64_t>(i) * from_stride];
  } else {
    for (std::size_t i = 0; i < length; ++i) {
      to[static_cast<std::int64_t>(i) * to_stride] = from[static_cast<std::int64_t>(i) * from_stride];
    }
  }
}

/// The input and output offsets of run `row` (the index over every axis but the last, row-major).
std::array<std::int64_t, 2> run_offsets(const StridedCopyDesc& s, std::size_t row) {
  std::int64_t from = s.input_offset;
  std::int64_t to = s.output_offset;
  for (int k = s.rank - 1; k-- > 0;) {
    const auto a = static_cast<std::size_t>(k);
    const auto extent = static_cast<std::size_t>(s.extent[a]);
    const auto i = static_cast<std::int64_t>(row % extent);
    row /= extent;
    from += i * s.input_stride[a];
    to += i * s.output_stride[a];
  }
  return {from, to};
}

}  // namespace

void BlasBackend::copy_strided(const StridedCopyDesc& desc, const Variable& input, Variable& output) {
  const StridedCopyDesc s = desc.simplified();
  const auto last = static_cast<std::size_t>(s.rank - 1);
  const auto run = static_cast<std::size_t>(s.extent[last]);
  const std::size_t runs = s.count() / run;
  const std::int64_t from_stride = s.input_stride[last];
  const std::int64_t to_stride = s.output_stride[last];
  const float* source = input.data();
  float* target = output.data();
  profiler_.note("strided copy");
  if (run >= kElementsPerCopyTask) {
    // Long runs: each task copies a piece of one.
    const std::size_t pieces = (run + kElementsPerCopyTask - 1) / kElementsPerCopyTask;
    parallel_for(threads_for(s.count()), runs * pieces, [&](std::size_t task) {
      const auto [from, to] = run_offsets(s, task / pieces);
      const std::size_t begin = task % pieces * kElementsPerCopyTask;
      const auto first = static_cast<std::int64_t>(begin);
      copy_run(source + from + first * from_stride, from_stride, target + to + first * to_stride, to_stride,
               std::min(kElementsPerCopyTask, run - begin));
    });
    return;
  }
  // Short runs: each task copies a block of whole runs, the offsets of each next run stepped from the last's.
  const std::size_t block = std::max<std::size_t>(1, kElementsPerCopyTask / run);
  const int outer_axes = s.rank - 1;
  parallel_for(threads_for(s.count()), (runs + block - 1) / block, [&](std::size_t task) {
    const std::size_t begin = task * block;
    const std::size_t end = std::min(runs, begin + block);
    auto [from, to] = run_offsets(s, begin);
    std::array<int, StridedCopyDesc::max_rank> index{};
    for (std::size_t rest = begin, k = static_cast<std::size_t>(outer_axes); k-- > 0;) {
      index[k] = static_cast<int>(rest % static_cast<std::size_t>(s.extent[k]));
      rest /= static_cast<std::size_t>(s.extent[k]);
    }
    for (std::size_t row = begin; row < end; ++row) {
      copy_run(source + from, from_stride, target + to, to_stride, run);
      for (int k = outer_axes; k-- > 0;) {
        const auto a = static_cast<std::size_t>(k);
        from += s.input_stride[a];
        to += s.output_stride[a];
        if (++index[a] < s.extent[a]) break;
        from -= s.input_stride[a] * s.extent[a];
        to -= s.output_stride[a] * s.extent[a];
        index[a] = 0;
      }
    }
  });
}

}  // namespace corgy
