// BlasBackend::pad: each output plane written row by row, the input's part of a row as one copy.
#include <algorithm>
#include <cstddef>
#include <cstring>

#include "corgy/backends/blas/blas_backend.h"

namespace corgy {

namespace {

/// The input index that padded index `i` reads along an axis with `before` cells of padding in front of `size`
/// input cells, or -1 for a constant cell (the rule of NaiveBackend::pad).
int source_index(PadMode mode, int i, int before, int size) {
  const int j = i - before;
  if (j >= 0 && j < size) return j;
  switch (mode) {
    case PadMode::constant: return -1;
    case PadMode::reflect: return j < 0 ? -j : 2 * (size - 1) - j;
    case PadMode::edge: return j < 0 ? 0 : size - 1;
  }
  return -1;
}

/// One output row from input row `source` (null for a row of constants): left border, the copied row, right border.
void pad_row(const PadDesc& desc, const float* source, int in_w, float* target) {
  if (!source) {
    std::fill(target, target + desc.left + in_w + desc.right, desc.value);
    return;
  }
  for (int x = 0; x < desc.left; ++x) {
    const int from = source_index(desc.mode, x, desc.left, in_w);
    target[x] = from < 0 ? desc.value : source[from];
  }
  std::memcpy(target + desc.left, source, static_cast<std::size_t>(in_w) * sizeof(float));
  for (int x = desc.left + in_w; x < desc.left + in_w + desc.right; ++x) {
    const int from = source_index(desc.mode, x, desc.left, in_w);
    target[x] = from < 0 ? desc.value : source[from];
  }
}

}  // namespace

void BlasBackend::pad(const PadDesc& desc, const Variable& input, Variable& output) {
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  profiler_.note("pad loop");
  parallel_for(threads_for(output.count()), static_cast<std::size_t>(out.n) * out.c, [&](std::size_t plane) {
    const float* source_plane = input.data() + plane * in.plane_count();
    float* target = output.data() + plane * out.plane_count();
    for (int y = 0; y < out.h; ++y, target += out.w) {
      const int from = source_index(desc.mode, y, desc.top, in.h);
      pad_row(desc, from < 0 ? nullptr : source_plane + static_cast<std::size_t>(from) * in.w, in.w, target);
    }
  });
}

}  // namespace corgy
