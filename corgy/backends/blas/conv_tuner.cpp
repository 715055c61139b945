#include "corgy/backends/blas/conv_tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "corgy/backends/blas/channels_in_lanes_gemm.h"
#include "corgy/backends/blas/conv_plan.h"
#include "corgy/backends/blas/depthwise_conv.h"
#include "corgy/backends/blas/winograd.h"
#include "corgy/backends/cpu/cpu_features.h"

namespace corgy::blas {

namespace {

/// The largest padded input tile of the channel-block depthwise kernel worth trying.
constexpr std::size_t kMaxChannelTileBytes = std::size_t{256} << 10;

/// The largest output plane on which the channels-in-lanes GEMM is tried: from 28x28 on the packed GEMM's pixel
/// panels are nearly full (784 pixels in 25 panels of 32).
constexpr int kMostChannelsInLanesPixels = 16 * 16;

}  // namespace

std::string choice_name(const ConvChoice& choice) {
  switch (choice.algorithm) {
    case ConvAlgorithm::im2col_openblas: return "im2col_openblas";
    case ConvAlgorithm::depthwise: return "depthwise";
    case ConvAlgorithm::depthwise_channel_blocks: return "depthwise_channel_blocks";
    case ConvAlgorithm::packed_gemm: return "packed_gemm";
    case ConvAlgorithm::pointwise_batch: return "pointwise_batch";
    case ConvAlgorithm::channels_in_lanes: return "channels_in_lanes";
    case ConvAlgorithm::few_channels: return "few_channels";
    case ConvAlgorithm::winograd:
      switch (choice.variant) {
        case WinogradVariant::f4x4: return "winograd f4x4";
        case WinogradVariant::f2x2: return "winograd f2x2";
        case WinogradVariant::f2x2_5x5: return "winograd f2x2_5x5";
      }
  }
  return "?";
}

std::vector<ConvChoice> candidate_algorithms(const Conv2dDesc& desc, const Shape& input) {
  if (depthwise_kernel_applies(desc)) {
    // The channel blocks where their padded input tile stays in L2 (on a 112 x 112 plane, 832 KB, they ran at 0.7x
    // the plane kernel's speed); first (the table's choice) on all but the large planes, where they lost or tied
    // (benchmarks/depthwise_benchmark).
    const DepthwiseGeometry g =
        depthwise_geometry(desc.kernel, desc.stride, desc.dilation, desc.padding, input.h, input.w);
    if (!depthwise_channel_blocks_apply(desc.kernel, desc.stride, desc.dilation) ||
        g.channel_tile_floats * sizeof(float) > kMaxChannelTileBytes) {
      return {{ConvAlgorithm::depthwise}};
    }
    if (input.w > 28) return {{ConvAlgorithm::depthwise}, {ConvAlgorithm::depthwise_channel_blocks}};
    return {{ConvAlgorithm::depthwise_channel_blocks}, {ConvAlgorithm::depthwise}};
  }
  std::vector<ConvChoice> candidates;
  // Few input channels (a stem): the direct kernel first, the packed GEMM measured against it.
  if (few_channels_applies(desc)) candidates.push_back({ConvAlgorithm::few_channels});
  // The static table (measured on Tiny YOLO's and MNIST's layers): Winograd wherever it applies to more than a few
  // channels, else our packed GEMM.
  const bool winograd = winograd_applies(desc) && desc.in_channels >= 8 && desc.out_channels >= 8;
  if (winograd && desc.kernel == 3) {
    candidates.push_back({ConvAlgorithm::winograd, WinogradVariant::f4x4});
    candidates.push_back({ConvAlgorithm::winograd, WinogradVariant::f2x2});
  } else if (winograd) {
    candidates.push_back({ConvAlgorithm::winograd, WinogradVariant::f2x2_5x5});
  }
  candidates.push_back({ConvAlgorithm::packed_gemm});
  // A pointwise convolution also as one GEMM over the batch's pixels, which pays on small maps, whose per-image GEMMs
  // pad their last column panel (7x7: 49 columns in two panels of 32) and come in too few pieces to share; measured,
  // never the table's first guess (the fused blocks plan without measuring and keep their packed GEMM).
  if (reads_planes_in_place(desc) && desc.groups == 1) candidates.push_back({ConvAlgorithm::pointwise_batch});
  // On a small output map, the transposed GEMM with the output channels in the lanes, which the pixels do not fill
  // (a 7x7 map's 49 pixels in 64 lanes); measured, never the first guess. At stride 2 on any map too, where it
  // reads its taps in place (no im2col panels, 2.25x the input at 3x3 / 2): ResNet-50's 56x56 128 -> 128 layer
  // 2.69 ms by the packed GEMM, 2.43 so (conv_benchmark, AMD EPYC, one thread).
  const int output_pixels = desc.output_size(input.h) * desc.output_size(input.w);
  if (channels_in_lanes_applies(desc, input) &&
      (output_pixels <= kMostChannelsInLanesPixels || (desc.stride == 2 && channels_in_lanes_reads_taps(desc)))) {
    candidates.push_back({ConvAlgorithm::channels_in_lanes});
  }
  return candidates;
}

std::string tuning_key(const Conv2dDesc& desc, const Shape& input, int threads) {
  return fmt::format("{}->{} k{} s{} p{} d{} g{} in {} t{} {}", desc.in_channels, desc.out_channels, desc.kernel,
                     desc.stride, desc.padding, desc.dilation, desc.groups, input.str(), threads,
                     isa_name(widest_cpu_isa()));
}

void evict_from_caches(std::span<const std::span<const float>> buffers) {
#if defined(__x86_64__) || defined(__i386__)
  constexpr std::size_t floats_per_line = 64 / sizeof(float);
  for (const std::span<const float> buffer : buffers) {
    for (std::size_t i = 0; i < buffer.size(); i += floats_per_line) _mm_clflush(buffer.data() + i);
    if (!buffer.empty()) _mm_clflush(&buffer.back());  // a buffer need not start on a line
  }
  _mm_mfence();  // the evictions are done before the timed run starts
#else
  (void)buffers;
#endif
}

void read_column_share(const TeamMember& member, const float* data, const Shape& shape) {
  constexpr std::size_t floats_per_line = 64 / sizeof(float);
  const std::size_t pixels = static_cast<std::size_t>(shape.h) * shape.w;
  const TeamMember::Range mine = member.share(static_cast<std::size_t>(shape.n) * pixels, floats_per_line);
  float sum = 0.0f;
  for (std::size_t column = mine.begin; column < mine.end;) {
    const std::size_t image = column / pixels;
    const std::size_t first = column - image * pixels;
    const std::size_t last = std::min(pixels, first + (mine.end - column));
    for (int channel = 0; channel < shape.c; ++channel) {
      const float* plane = data + (image * shape.c + channel) * pixels;
      for (std::size_t i = first; i < last; i += floats_per_line) sum += plane[i];
    }
    column += last - first;
  }
  // Keeps the reads: their values are not needed.
  volatile float sink = sum;
  (void)sink;
}

Fastest fastest_candidate(std::size_t candidates, const std::function<double(std::size_t)>& time_ms) {
  std::vector<double> best(candidates, std::numeric_limits<double>::infinity());
  for (int round = 0; round < 2; ++round) {
    for (std::size_t i = 0; i < candidates; ++i) best[i] = std::min(best[i], time_ms(i));
  }
  if (candidates == 0) return {};
  std::vector<std::size_t> order(candidates);
  for (std::size_t i = 0; i < candidates; ++i) order[i] = i;
  std::ranges::sort(order, [&](std::size_t x, std::size_t y) { return best[x] < best[y]; });
  if (candidates > 1 && best[order[1]] <= best[order[0]] * (1.0 + kCloseCall)) {
    for (int round = 0; round < kCloseCallRounds; ++round) {
      for (const std::size_t i : {order[0], order[1]}) best[i] = std::min(best[i], time_ms(i));
    }
  }
  const auto fastest = std::min_element(best.begin(), best.end());
  return {static_cast<std::size_t>(fastest - best.begin()), *fastest};
}

}  // namespace corgy::blas
