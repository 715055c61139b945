// BlasBackend::squeeze_excite: the pool, the two small matrix products and the per-channel scale of a
// squeeze-and-excitation block in one operation, so that the block costs two passes over its input (the means, the
// scaled copy) and no layer boundaries in between.
#include <cblas.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

#include "corgy/backends/blas/activation_kernels.h"
#include "corgy/backends/blas/blas_backend.h"
#include "corgy/backends/blas/thread_team.h"

namespace corgy {

namespace {

/// Sum of x[0, count) in eight independent float lanes (a single running sum is a serial chain the compiler may
/// not reorder), then the lanes in double.
double plane_sum(const float* x, std::size_t count) {
  constexpr std::size_t lanes = 8;
  std::array<float, lanes> sums{};
  std::size_t i = 0;
  for (; i + lanes <= count; i += lanes) {
    for (std::size_t lane = 0; lane < lanes; ++lane) sums[lane] += x[i + lane];
  }
  double total = 0.0;
  for (; i < count; ++i) total += x[i];
  for (const float sum : sums) total += sum;
  return total;
}

/// y = activation(x W^T + bias) for the rows [begin, end) of W, every image at once: x (images x columns, row-major),
/// W (rows x columns, row-major), y (images x rows, row-major), bias (rows values) or null. OpenBLAS's sgemv for one
/// image (its sgemm with one row is several times slower), its sgemm for a batch, which reads W once for all images
/// instead of once per image (a 960-channel block's two matrices are 1.8 MB: read per image, they were most of the
/// block's time at batch 8).
void dense_rows(const float* x, int images, int columns, const float* w, const float* bias, int rows, int begin,
                int end, Activation activation, float* y) {
  if (begin >= end) return;
  const float* w_rows = w + static_cast<std::size_t>(begin) * columns;
  if (images == 1) {
    cblas_sgemv(CblasRowMajor, CblasNoTrans, end - begin, columns, 1.0f, w_rows, columns, x, 1, 0.0f, y + begin, 1);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, images, end - begin, columns, 1.0f, x, columns, w_rows,
                columns, 0.0f, y + begin, rows);
  }
  for (int n = 0; n < images; ++n) {
    float* image_y = y + static_cast<std::size_t>(n) * rows + begin;
    if (bias) {
      for (int r = begin; r < end; ++r) image_y[r - begin] += bias[r];
    }
    blas::bias_activate(image_y, image_y, static_cast<std::size_t>(end - begin), 0.0f, activation);
  }
}

}  // namespace

void BlasBackend::squeeze_excite_gates(const blas::TeamMember& member, const SqueezeExciteDesc& desc,
                                       const Variable& input, const SqueezeExciteWeights& weights,
                                       SqueezeExciteScratch& scratch) {
  const Shape& shape = input.shape();
  const std::size_t plane = shape.plane_count();
  const std::size_t planes = static_cast<std::size_t>(shape.n) * shape.c;
  const blas::TeamMember::Range mine = member.share(planes);
  const float scale = 1.0f / static_cast<float>(plane);
  for (std::size_t p = mine.begin; p < mine.end; ++p) {
    scratch.means[p] = static_cast<float>(plane_sum(input.data() + p * plane, plane)) * scale;
  }
  member.sync();
  // Each member its share of each product's output rows (the weights' rows), over every image at once.
  const blas::TeamMember::Range reduce_rows = member.share(static_cast<std::size_t>(desc.squeeze_channels));
  dense_rows(scratch.means.data(), shape.n, desc.channels, weights.reduce_weights->data(),
             weights.reduce_bias ? weights.reduce_bias->data() : nullptr, desc.squeeze_channels,
             static_cast<int>(reduce_rows.begin), static_cast<int>(reduce_rows.end), desc.reduce_activation,
             scratch.squeezed.data());
  member.sync();
  const blas::TeamMember::Range expand_rows = member.share(static_cast<std::size_t>(desc.channels));
  dense_rows(scratch.squeezed.data(), shape.n, desc.squeeze_channels, weights.expand_weights->data(),
             weights.expand_bias ? weights.expand_bias->data() : nullptr, desc.channels,
             static_cast<int>(expand_rows.begin), static_cast<int>(expand_rows.end), desc.expand_activation,
             scratch.gates.data());
  member.sync();
}

BlasBackend::SqueezeExciteScratch BlasBackend::squeeze_excite_scratch(const SqueezeExciteDesc& desc,
                                                                      const Shape& input) {
  const auto images = static_cast<std::size_t>(input.n);
  return {std::vector<float>(images * desc.channels), std::vector<float>(images * desc.squeeze_channels),
          std::vector<float>(images * desc.channels)};
}

int BlasBackend::squeeze_excite_team(const Variable& input, const SqueezeExciteWeights& weights) const {
  // The products read both weight matrices once (C x S each): at batch 1 on a 7 x 7 map they are larger than the
  // input, and reading them is most of the block's time.
  return threads_for(std::max(input.count(), weights.reduce_weights->count() + weights.expand_weights->count()));
}

void BlasBackend::squeeze_excite(const SqueezeExciteDesc& desc, const Variable& input, const Variable& reduce_weights,
                                 const Variable* reduce_bias, const Variable& expand_weights,
                                 const Variable* expand_bias, Variable& output) {
  profiler_.note("squeeze-excite: means, two matrix-vector products, scale");
  const SqueezeExciteWeights weights{&reduce_weights, reduce_bias, &expand_weights, expand_bias};
  const std::size_t plane = input.shape().plane_count();
  SqueezeExciteScratch scratch = squeeze_excite_scratch(desc, input.shape());
  keep_openblas_single_threaded();
  team_->run(squeeze_excite_team(input, weights), [&](const blas::TeamMember& member) {
    squeeze_excite_gates(member, desc, input, weights, scratch);
    const blas::TeamMember::Range mine = member.share(scratch.gates.size());
    for (std::size_t p = mine.begin; p < mine.end; ++p) {
      const float* source = input.data() + p * plane;
      float* target = output.data() + p * plane;
      const float gate = scratch.gates[p];
      for (std::size_t i = 0; i < plane; ++i) target[i] = source[i] * gate;
    }
  });
}

}  // namespace corgy
