#include "corgy/backends/blas/conv_bands.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "corgy/backends/blas/winograd_kernels.h"

namespace corgy::blas {

namespace {

/// Weights larger than this are read from memory once per forward by one team-shared computation rather than once
/// per band (a band re-reads them from L3 at best).
constexpr std::size_t kBandWeightsBytes = std::size_t{8} << 20;
/// Weights larger than this (more than L2 holds beside the band) are worth re-reading only for a band of at least
/// kMinBandPixels output pixels: 2 * 256 flops per weight read.
constexpr std::size_t kL2WeightsBytes = std::size_t{512} << 10;
constexpr int kMinBandPixels = 256;
/// A band's output (all channels): about what stays in L2 while the next layer of work (the pool) reads it.
constexpr std::size_t kBandBytes = std::size_t{256} << 10;

/// Bands of Winograd's output start and end on tile rows.
int row_alignment(const ConvPlan& plan) {
  return plan.algorithm == ConvAlgorithm::winograd ? winograd_geometry(plan.winograd.variant).output_tile : 1;
}

std::size_t weight_bytes(const ConvPlan& plan) {
  std::size_t bytes = 0;
  if (plan.algorithm == ConvAlgorithm::winograd) {
    for (const PackedA& point : plan.winograd.points) bytes += point.bytes();
  } else {
    for (const PackedA& group : plan.packed.groups) bytes += group.bytes();
  }
  return bytes;
}

int align_up(int value, int multiple) { return (value + multiple - 1) / multiple * multiple; }

/// Output rows [y0, y1) of images [n0, n1) into target: image n's channel c row y0 + r at
/// target + (n - n0) * image_stride + c * channel_stride + r * width.
void compute_rows(const ConvPlan& plan, const Variable& input, const Shape& conv_output, int n0, int n1, int y0, int y1,
                  float* target, std::size_t channel_stride, std::size_t image_stride, BandBuffers& buffers) {
  if (plan.algorithm == ConvAlgorithm::winograd) {
    const int tile = winograd_geometry(plan.winograd.variant).output_tile;
    winograd_conv_rows(plan.desc, plan.winograd, input, conv_output, n0, n1, y0 / tile, (y1 + tile - 1) / tile, target,
                       channel_stride, image_stride, buffers.winograd);
    return;
  }
  for (int n = n0; n < n1; ++n) {
    conv_gemm_rows(*plan.kernel, plan.desc, plan.packed, input, conv_output, n, y0, y1,
                   target + (n - n0) * image_stride, channel_stride, buffers.gemm);
  }
}

/// Pooled rows [p0, p1) of every channel of one image, from the convolution's rows [first_row, first_row + rows)
/// (channel c's at band + c * channel_stride). Padded cells never win, as in MaxPool2d.
void max_pool_band(const Pool2dDesc& pool, const float* band, int first_row, int rows, std::size_t channel_stride,
                   const Shape& conv_output, int p0, int p1, float* output_image, const Shape& pooled,
                   std::vector<float>& column_max_row) {
  const int width = conv_output.w;
  if (column_max_row.size() < static_cast<std::size_t>(width)) column_max_row.resize(static_cast<std::size_t>(width));
  for (int c = 0; c < conv_output.c; ++c) {
    const float* plane = band + c * channel_stride;
    for (int p = p0; p < p1; ++p) {
      const int top = std::max(0, p * pool.stride_h - pool.pad_top);
      const int bottom = std::min({conv_output.h, p * pool.stride_h - pool.pad_top + pool.kernel_h, first_row + rows});
      float* target = output_image + (static_cast<std::size_t>(c) * pooled.h + p) * pooled.w;
      int q = 0;
      if (pool.kernel_w == 2 && pool.stride_w == 2 && pool.pad_left == 0 && bottom - top == 2) {
        // The common 2x2/2 window: two rows, pairs of columns (vectorised).
        const float* upper = plane + static_cast<std::size_t>(top - first_row) * width;
        const float* lower = upper + width;
        const int inside = std::min(pooled.w, width / 2);
        for (; q < inside; ++q) {
          target[q] = std::max(std::max(upper[2 * q], upper[2 * q + 1]), std::max(lower[2 * q], lower[2 * q + 1]));
        }
      }
      if (q == pooled.w) continue;
      if (top >= bottom) {  // no row of the window in this band (not reached with a pool's padding below its kernel)
        std::fill(target + q, target + pooled.w, -std::numeric_limits<float>::infinity());
        continue;
      }
      // Other windows: the maximum down the window's rows first, for the whole row at once (vectorised), then
      // along each window's columns of that one row: kernel_h + kernel_w steps per output instead of their product.
      float* column_max = column_max_row.data();
      const float* first = plane + static_cast<std::size_t>(top - first_row) * width;
      std::copy(first, first + width, column_max);
      for (int y = top + 1; y < bottom; ++y) {
        const float* row = plane + static_cast<std::size_t>(y - first_row) * width;
        for (int x = 0; x < width; ++x) column_max[x] = std::max(column_max[x], row[x]);
      }
      for (; q < pooled.w; ++q) {
        const int left = std::max(0, q * pool.stride_w - pool.pad_left);
        const int right = std::min(width, q * pool.stride_w - pool.pad_left + pool.kernel_w);
        float best = -std::numeric_limits<float>::infinity();
        for (int x = left; x < right; ++x) best = std::max(best, column_max[x]);
        target[q] = best;
      }
    }
  }
}

}  // namespace

bool splits_weights_by_channels(const ConvPlan& plan, const Shape& output, int members) {
  if (members < 2 || plan.algorithm != ConvAlgorithm::packed_gemm || weight_bytes(plan) <= kL2WeightsBytes)
    return false;
  // Fewer pixels per member than a band must hold to be worth re-reading such weights for.
  return output.count() / output.c < static_cast<std::size_t>(members) * kMinBandPixels;
}

Bands bands_for(const ConvPlan& plan, const Shape& output, int members) {
  if (plan.algorithm != ConvAlgorithm::packed_gemm && plan.algorithm != ConvAlgorithm::winograd) return {};
  if (weight_bytes(plan) > kBandWeightsBytes) return {};
  const int align = row_alignment(plan);
  const std::size_t row_bytes = sizeof(float) * static_cast<std::size_t>(output.c) * output.w;
  const int all_rows = align_up(output.h, align);
  // Never more than a whole image: a small image is one band.
  const int fewest_rows = std::min(all_rows, weight_bytes(plan) <= kL2WeightsBytes
                                                 ? align
                                                 : align_up((kMinBandPixels + output.w - 1) / output.w, align));
  // As many rows as fit the cache budget ...
  Bands bands{std::clamp(align_up(static_cast<int>(kBandBytes / row_bytes), align), fewest_rows, all_rows), 1};
  // ... and when a band holds a whole image, as many whole images (their tiles share one set of GEMMs).
  if (bands.rows == all_rows) {
    bands.images = std::clamp(static_cast<int>(kBandBytes / (row_bytes * output.h)), 1, output.n);
  }
  const auto count = [&](const Bands& b) {
    return (output.n + b.images - 1) / b.images * ((output.h + b.rows - 1) / b.rows);
  };
  // Members take equal numbers of bands, so the slowest does ceil(count / members) of them. Among bands of at least
  // half the cache budget, the largest whose slowest member has the fewest rows to compute (64 images in bands of 5
  // leave one member 7 bands = 35 images and the other 30; bands of 4 give both 32), when that saves at least 5%:
  // smaller bands cost a little more each, which this count does not see.
  if (members > 1) {
    const auto slowest = [&](const Bands& b) {
      return static_cast<long>((count(b) + members - 1) / members) * b.images * b.rows;
    };
    Bands best = bands;
    if (bands.rows == all_rows) {
      for (Bands b = bands; b.images * 2 >= bands.images && b.images >= 1; --b.images) {
        if (slowest(b) < slowest(best)) best = b;
      }
    } else {
      for (Bands b = bands; b.rows * 2 >= bands.rows && b.rows >= fewest_rows; b.rows -= align) {
        if (slowest(b) < slowest(best)) best = b;
      }
    }
    if (slowest(best) * 20 <= slowest(bands) * 19) bands = best;
    // Bands of up to twice the budget too, where they alone share an image's rows evenly: a 56x56 map in tile rows
    // of 4 (Winograd F(4x4)) comes in 14 of them, which bands of up to 20 rows leave as 16 + 16 against 16 + 8 at
    // batch 1; two bands of 28 rows took ResNet-18's four 64 -> 64 layers from 2.84 to 2.09 ms at two threads
    // (the tuner's choice, per-layer medians of eight processes each, AMD EPYC, load 0.9; 2.84 -> 2.67 at load 2),
    // the tiles of a band spilling from L2 either way. Counted here as the rows each member's contiguous share of the
    // bands holds (the count above takes every band as full, which at batch 8 preferred them to 16-row bands that share
    // 4 images each evenly, and the larger bands were 6% slower there).
    if (bands.rows < all_rows) {
      const auto rows_of_slowest = [&](const Bands& b) {
        const int per_image = (output.h + b.rows - 1) / b.rows;
        const std::size_t items = static_cast<std::size_t>(output.n) * per_image;
        long most = 0;
        for (int m = 0; m < members; ++m) {
          const TeamMember::Range share = TeamMember(m, members, nullptr).share(items);
          long rows = 0;
          for (std::size_t item = share.begin; item < share.end; ++item) {
            const int first = static_cast<int>(item % per_image) * b.rows;
            rows += std::min(b.rows, output.h - first);
          }
          most = std::max(most, rows);
        }
        return most;
      };
      Bands larger = bands;
      for (Bands b{std::min(all_rows, 2 * bands.rows), 1}; b.rows > bands.rows; b.rows -= align) {
        if (rows_of_slowest(b) < rows_of_slowest(larger)) larger = b;
      }
      if (rows_of_slowest(larger) * 20 <= rows_of_slowest(bands) * 19) bands = larger;
    }
  }
  // Few enough bands that members share them evenly: when there are fewer than four per member, a multiple of the
  // member count, cutting images into rows only when there are fewer images than members.
  if (members > 1 && count(bands) < 4 * members) {
    const int wanted = (count(bands) + members - 1) / members * members;
    if (wanted <= output.n) {
      bands.images = (output.n + wanted - 1) / wanted;
    } else {
      bands.images = 1;
      const int per_image = (wanted + output.n - 1) / output.n;
      const int even_rows = align_up((output.h + per_image - 1) / per_image, align);
      bands.rows = std::clamp(even_rows, fewest_rows, all_rows);
      // Where the floor still leaves per_image bands, they are as many as the even split's but uneven (17 rows as
      // 16 + 1: one member idles through most of the layer, Inception v3's 17x17 layers at two threads); the even
      // split streams the weights as often.
      if ((output.h + bands.rows - 1) / bands.rows >= per_image) bands.rows = even_rows;
    }
  }
  if (members > 1 && count(bands) < members) return {};
  return bands;
}

namespace {

/// Pooled rows per band: the pooled rows whose windows a band of conv rows covers.
int pooled_rows_per_band(const Bands& bands, const Pool2dDesc& pool, const Shape& conv_output, const Shape& pooled) {
  return bands.rows >= conv_output.h ? pooled.h : std::max(1, bands.rows / pool.stride_h);
}

}  // namespace

std::size_t band_count(const Bands& bands, const Pool2dDesc* pool, const Shape& conv_output, const Shape& output) {
  const int image_groups = (conv_output.n + bands.images - 1) / bands.images;
  int per_image = (conv_output.h + bands.rows - 1) / bands.rows;
  if (pool) {
    const int pooled_rows = pooled_rows_per_band(bands, *pool, conv_output, output);
    per_image = (output.h + pooled_rows - 1) / pooled_rows;
  }
  return static_cast<std::size_t>(image_groups) * per_image;
}

void conv_in_bands(const TeamMember& member, WorkQueue& queue, const ConvPlan& plan, const Bands& bands,
                   const Pool2dDesc* pool, const Variable& input, const Shape& conv_output, Variable& output,
                   BandBuffers& buffers) {
  const int align = row_alignment(plan);
  const std::size_t image_size = output.shape().image_count();
  std::size_t item = 0;
  if (!pool) {
    const int per_image = (conv_output.h + bands.rows - 1) / bands.rows;
    while (queue.next(member, item)) {
      const int n0 = static_cast<int>(item / per_image) * bands.images;
      const int n1 = std::min(conv_output.n, n0 + bands.images);
      const int y0 = static_cast<int>(item % per_image) * bands.rows;
      const int y1 = std::min(conv_output.h, y0 + bands.rows);
      compute_rows(plan, input, conv_output, n0, n1, y0, y1, output.data() + n0 * image_size + y0 * conv_output.w,
                   conv_output.plane_count(), image_size, buffers);
    }
    member.sync();
    return;
  }
  const Shape& pooled = output.shape();
  const int pooled_rows = pooled_rows_per_band(bands, *pool, conv_output, pooled);
  const int per_image = (pooled.h + pooled_rows - 1) / pooled_rows;
  while (queue.next(member, item)) {
    const int n0 = static_cast<int>(item / per_image) * bands.images;
    const int n1 = std::min(conv_output.n, n0 + bands.images);
    const int p0 = static_cast<int>(item % per_image) * pooled_rows;
    const int p1 = std::min(pooled.h, p0 + pooled_rows);
    // The convolution's rows the windows of pooled rows [p0, p1) cover, widened to whole tile rows.
    const int r0 = std::max(0, p0 * pool->stride_h - pool->pad_top);
    const int r1 = std::min(conv_output.h, (p1 - 1) * pool->stride_h - pool->pad_top + pool->kernel_h);
    const int first = r0 / align * align;
    const int last = std::min(conv_output.h, align_up(r1, align));
    const std::size_t channel_stride = static_cast<std::size_t>(last - first) * conv_output.w;
    const std::size_t image_stride = channel_stride * conv_output.c;
    if (buffers.conv_rows.size() < image_stride * (n1 - n0)) buffers.conv_rows.resize(image_stride * (n1 - n0));
    compute_rows(plan, input, conv_output, n0, n1, first, last, buffers.conv_rows.data(), channel_stride, image_stride,
                 buffers);
    for (int n = n0; n < n1; ++n) {
      max_pool_band(*pool, buffers.conv_rows.data() + (n - n0) * image_stride, first, last - first, channel_stride,
                    conv_output, p0, p1, output.data() + n * image_size, pooled, buffers.pool_row);
    }
  }
  member.sync();
}

}  // namespace corgy::blas
