#include "corgy/backends/blas/few_channels_conv.h"

#include <fmt/format.h>

#include <algorithm>

#include "corgy/backends/blas/separable_pool.h"
#include "corgy/error.h"

namespace corgy::blas {

namespace {

/// Floats of input per band: with its phase planes about 128 KB, well inside L2 on the CPUs measured.
constexpr std::size_t kBandInputFloats = 32 * 1024;

/// Floats of a pooled band's convolution output (every channel of its rows): 512 KB, inside L2 with the band's input,
/// so that the pool reads what the kernel just wrote from the cache. ResNet's stem, 64 x 112 x 112, wrote and read
/// back 3.2 MB per image through memory when the pool ran as a pass of its own.
constexpr std::size_t kBandConvFloats = 128 * 1024;

/// The output rows [first, first + rows) of a band: the input rows they read, and the padding above and below them.
struct BandRows {
  int in_first = 0;
  int in_rows = 0;
  int pad_top = 0;
  int pad_bottom = 0;
};

BandRows band_rows(const Conv2dDesc& desc, int in_h, int first, int rows) {
  // Padded rows [first * stride, (first + rows - 1) * stride + span) are read; padded row r is input row r - padding.
  const int span = (desc.kernel - 1) * desc.dilation + 1;
  const int top = first * desc.stride - desc.padding;
  const int bottom = (first + rows - 1) * desc.stride + span - desc.padding;  // one past the last
  BandRows band;
  band.in_first = std::clamp(top, 0, in_h);
  band.in_rows = std::max(std::min(bottom, in_h) - band.in_first, 0);
  // Rows of padding: above the input's first row read (all of them for a band that reads only padding), then below.
  band.pad_top = band.in_rows > 0 ? band.in_first - top : bottom - top;
  band.pad_bottom = bottom - top - band.pad_top - band.in_rows;
  return band;
}

/// Output rows [first, first + rows) of image `image`, every channel: channel c's row y at
/// target + c * target_plane + (y - first) * out_w.
void convolve_band(const FewChannelsKernel& kernel, const Conv2dDesc& desc, const std::vector<float>& packed,
                   const Variable& input, int out_channels, int image, int first, int rows, float* target,
                   std::size_t target_plane, std::vector<float>& buffer) {
  const Shape& in = input.shape();
  const BandRows band = band_rows(desc, in.h, first, rows);
  const DepthwiseGeometry geometry = depthwise_band_geometry(desc.kernel, desc.stride, desc.dilation, desc.padding,
                                                             band.pad_top, band.pad_bottom, band.in_rows, in.w);
  const std::size_t floats = few_channels_buffer_floats(geometry, in.c);
  if (buffer.size() < floats) buffer.resize(floats);
  FewChannelsBandArgs args;
  args.geometry = &geometry;
  args.input = input.data() + static_cast<std::size_t>(image) * in.image_count() +
               static_cast<std::size_t>(band.in_first) * in.w;
  args.input_plane = in.plane_count();
  args.in_channels = in.c;
  args.packed = packed.data();
  args.out_channels = out_channels;
  args.activation = desc.activation;
  args.output = target;
  args.output_plane = target_plane;
  args.buffer = buffer.data();
  kernel.run(args);
}

/// The convolution's rows [begin, end) that the windows of pooled rows [first, first + rows) read (clipped to the
/// plane), and the pool that computes those pooled rows from them alone: `pool` with the padding above that its
/// first window has over `begin` (the pool's own for the first band, none for the others).
struct PooledBand {
  int begin = 0;
  int end = 0;
  Pool2dDesc pool;
};

PooledBand pooled_band(const Pool2dDesc& pool, int conv_h, int first, int rows) {
  const int top = first * pool.stride_h - pool.pad_top;  // the first window's first row
  const int bottom = (first + rows - 1) * pool.stride_h - pool.pad_top + pool.kernel_h;
  PooledBand band;
  band.begin = std::clamp(top, 0, conv_h);
  band.end = std::max(band.begin, std::min(bottom, conv_h));
  band.pool = pool;
  band.pool.pad_top = band.begin - top;
  return band;
}

// Takes the queue's items, each one band of `bands` per image, and calls visit(image, first row, rows) for each band
// that has rows of the output (of `out_h` rows).
template <typename Visit>
void for_each_band(const TeamMember& member, WorkQueue& queue, int bands, int out_h, Visit&& visit) {
  const int rows_per_band = (out_h + bands - 1) / bands;
  std::size_t item = 0;
  while (queue.next(member, item)) {
    const int image = static_cast<int>(item / static_cast<std::size_t>(bands));
    const int first = static_cast<int>(item % static_cast<std::size_t>(bands)) * rows_per_band;
    if (first >= out_h) continue;
    visit(image, first, std::min(rows_per_band, out_h - first));
  }
}

}  // namespace

std::vector<float> pack_few_channels_weights(const float* weights, const float* bias, int out_channels, int in_channels,
                                             int taps, int channels) {
  const std::size_t per_block = static_cast<std::size_t>(in_channels) * taps * channels + channels;
  const int blocks = (out_channels + channels - 1) / channels;
  std::vector<float> packed(per_block * blocks, 0.0f);
  for (int o = 0; o < out_channels; ++o) {
    float* block = packed.data() + static_cast<std::size_t>(o / channels) * per_block;
    const int lane = o % channels;
    for (int c = 0; c < in_channels; ++c) {
      for (int t = 0; t < taps; ++t) {
        block[(static_cast<std::size_t>(c) * taps + t) * channels + lane] =
            weights[(static_cast<std::size_t>(o) * in_channels + c) * taps + t];
      }
    }
    block[static_cast<std::size_t>(in_channels) * taps * channels + lane] = bias ? bias[o] : 0.0f;
  }
  return packed;
}

FewChannelsKernel few_channels_kernel(CpuIsa isa) {
  if (!cpu_has(isa)) throw Error(fmt::format("blas: this CPU cannot run the {} few-channel kernels", isa_name(isa)));
  switch (isa) {
    case CpuIsa::avx512: return avx512_few_channels_kernel();
    case CpuIsa::avx2: return avx2_few_channels_kernel();
    case CpuIsa::generic: break;
  }
  return generic_few_channels_kernel();
}

FewChannelsKernel few_channels_kernel() {
  static const FewChannelsKernel best = few_channels_kernel(widest_cpu_isa());
  return best;
}

bool few_channels_applies(const Conv2dDesc& desc) {
  return desc.groups == 1 && desc.in_channels <= kMostFewInputChannels && desc.is_square() &&
         desc.kernel * desc.kernel <= DepthwiseGeometry::max_taps;
}

int few_channels_bands(const Conv2dDesc& desc, const Shape& input, int threads) {
  const int out_h = desc.output_size(input.h);
  const std::size_t image_floats = input.image_count();
  const int for_cache = static_cast<int>((image_floats + kBandInputFloats - 1) / kBandInputFloats);
  // Four items per thread over the batch, so that uneven bands (the first and last with padding) even out.
  const int for_threads = (4 * std::max(threads, 1) + input.n - 1) / input.n;
  return std::clamp(std::max(for_cache, threads > 1 ? for_threads : 1), 1, std::max(out_h, 1));
}

int few_channels_pooled_bands(const Pool2dDesc& pool, const Shape& conv_output, const Shape& output, int threads) {
  const std::size_t conv_row_floats = static_cast<std::size_t>(conv_output.c) * conv_output.w;
  const int rows_fit =
      static_cast<int>(std::max<std::size_t>(kBandConvFloats / std::max<std::size_t>(conv_row_floats, 1), 1));
  // Pooled rows per band whose convolution rows fit the budget: (p - 1) * stride + kernel rows.
  const int pooled_fit = std::max(1, (rows_fit - pool.kernel_h) / std::max(pool.stride_h, 1) + 1);
  const int for_cache = (output.h + pooled_fit - 1) / pooled_fit;
  const int for_threads = (4 * std::max(threads, 1) + output.n - 1) / output.n;
  return std::clamp(std::max(for_cache, threads > 1 ? for_threads : 1), 1, std::max(output.h, 1));
}

void few_channels_conv(const TeamMember& member, WorkQueue& queue, int bands, const Conv2dDesc& desc,
                       const std::vector<float>& packed, const Variable& input, Variable& output,
                       std::vector<float>& buffer) {
  const FewChannelsKernel kernel = few_channels_kernel();
  const Shape& out = output.shape();
  for_each_band(member, queue, bands, out.h, [&](int image, int first, int rows) {
    float* target =
        output.data() + static_cast<std::size_t>(image) * out.image_count() + static_cast<std::size_t>(first) * out.w;
    convolve_band(kernel, desc, packed, input, out.c, image, first, rows, target, out.plane_count(), buffer);
  });
}

void few_channels_conv_pooled(const TeamMember& member, WorkQueue& queue, int bands, const Conv2dDesc& desc,
                              const Pool2dDesc& pool, const std::vector<float>& packed, const Variable& input,
                              const Shape& conv_output, Variable& output, FewChannelsPoolBuffers& buffers) {
  const FewChannelsKernel kernel = few_channels_kernel();
  const Shape& out = output.shape();
  for_each_band(member, queue, bands, out.h, [&](int image, int first, int rows) {
    const PooledBand band = pooled_band(pool, conv_output.h, first, rows);
    const Shape band_shape{1, 1, band.end - band.begin, conv_output.w};
    const std::size_t band_plane = band_shape.plane_count();
    if (buffers.convolved.size() < band_plane * conv_output.c) buffers.convolved.resize(band_plane * conv_output.c);
    if (band.end > band.begin) {
      convolve_band(kernel, desc, packed, input, conv_output.c, image, band.begin, band.end - band.begin,
                    buffers.convolved.data(), band_plane, buffers.kernel);
    }
    const Shape pooled_shape{1, 1, rows, out.w};
    float* target =
        output.data() + static_cast<std::size_t>(image) * out.image_count() + static_cast<std::size_t>(first) * out.w;
    for (int c = 0; c < out.c; ++c) {
      pool_plane(band.pool, buffers.convolved.data() + c * band_plane, band_shape, target + c * out.plane_count(),
                 pooled_shape, buffers.pool_line);
    }
  });
}

}  // namespace corgy::blas
