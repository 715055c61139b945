#include "corgy/backends/vulkan/direct_conv.h"

#include <fmt/format.h>

#include <algorithm>

#include "corgy/backends/vulkan/dispatch_math.h"
#include "corgy/backends/vulkan/staged_patch.h"
#include "corgy/error.h"

namespace corgy::vulkan {

namespace {

// conv2d_direct.comp's limits: a chunk of input channels' weights of the block's channels in shared memory (10 KiB at
// most), the block's sums in registers, and the input patch under a workgroup's 32 x 16 pixels of at least one
// channel in at most 16 KiB of shared memory (strides and dilations up to 4 with a 3x3 kernel). Up to K = 160 taps
// per output, or any K for at most 16 output channels (one block: a network's last layer back to RGB, where a GEMM
// tile fills 3 of its rows). The automatic choice takes it up to K = 32: on an H100, Tiny YOLO's first layer (3x3x3
// -> 16 with its 2x2 pool) at batch 64 takes 0.65 ms in fp16 against 1.15 ms on tensor cores (see docs/vulkan.md);
// its second layer (K = 144) is faster as a GEMM. The tuner times it wherever it fits.
constexpr int most_taps = 160;
constexpr int most_automatic_taps = 32;
constexpr std::uint32_t most_channels_per_thread = 16;
constexpr std::uint32_t patch_budget_bytes = 16 * 1024;
constexpr std::uint32_t weights_budget_bytes = 10 * 1024;
// The kernel's workgroup: 16 x 8 cells of 2x2 pixels.
constexpr std::uint32_t cells_x = 16;
constexpr std::uint32_t cells_y = 8;

// Floats of one input channel's patch under a workgroup's 2 cells_y x 2 cells_x pixels.
std::uint64_t patch_floats(const Conv2dDesc& d) { return patch_extent(d, 2 * cells_y) * patch_extent(d, 2 * cells_x); }

// Output channels per thread: all of them up to 16 (a multiple of 4), else blocks of 16 along workgroup z.
std::uint32_t channels_per_thread(const Conv2dDesc& conv) {
  return std::min(static_cast<std::uint32_t>(conv.out_channels + 3) / 4 * 4, most_channels_per_thread);
}

}  // namespace

bool direct_conv_fits(const Conv2dDesc& conv) {
  const std::uint64_t channel_weights_bytes =
      static_cast<std::uint64_t>(conv.kernel) * conv.kernel * channels_per_thread(conv) * sizeof(float);
  return conv.groups == 1 &&
         (conv.in_channels * conv.kernel * conv.kernel <= most_taps ||
          conv.out_channels <= static_cast<int>(most_channels_per_thread)) &&
         patch_floats(conv) * sizeof(float) <= patch_budget_bytes && channel_weights_bytes <= weights_budget_bytes;
}

bool direct_conv_chosen(const Conv2dDesc& conv, const VulkanConvolutionOptions& options) {
  if (options.algorithm == VulkanConvAlgorithm::direct) {
    if (!direct_conv_fits(conv)) {
      throw Error(fmt::format(
          "Vulkan: the direct convolution needs one group, at most {} taps per output (in channels x "
          "kernel x kernel) or at most {} output channels, and an input patch of at most {} bytes per channel; "
          "this {}x{} convolution of {} -> {} channels (stride {}, dilation {}) has {} groups, {} taps and a patch "
          "of {} bytes",
          most_taps, most_channels_per_thread, patch_budget_bytes, conv.kernel, conv.kernel, conv.in_channels,
          conv.out_channels, conv.stride, conv.dilation, conv.groups,
          conv.in_channels / conv.groups * conv.kernel * conv.kernel, patch_floats(conv) * sizeof(float)));
    }
    return true;
  }
  return options.algorithm == VulkanConvAlgorithm::automatic && options.tiles.automatic() &&
         options.coopmat_tiles.automatic() && direct_conv_fits(conv) &&
         conv.in_channels * conv.kernel * conv.kernel <= most_automatic_taps;
}

void record_direct_conv(Runtime& runtime, const Conv2dDesc& d, const Pool2dDesc* fused_pool, const Variable& input,
                        const Variable& weights, const Variable* bias, Variable& output) {
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  const bool pool = fused_pool != nullptr;
  PatchConvParams p = patch_conv_params(d, fused_pool, in, out, bias != nullptr);
  const std::uint32_t channels = channels_per_thread(d);
  p.channel_blocks = ceil_div(p.out_channels, channels);
  const std::uint32_t taps = u32(d.in_channels * d.kernel * d.kernel);
  // Input channels staged at once: as many as the patch budget and the weights' budget hold.
  const std::size_t by_patch = patch_budget_bytes / (patch_floats(d) * 4);
  const std::size_t by_weights = weights_budget_bytes / (static_cast<std::size_t>(d.kernel) * d.kernel * channels * 4);
  const std::uint32_t chunk = std::clamp(u32(std::min(by_patch, by_weights)), 1u, p.in_channels);
  const VkPhysicalDeviceLimits& limits = runtime.context.limits();
  // The kernel indexes elements with 32 bits and spreads images and channel blocks along workgroup z.
  const std::uint64_t layers = static_cast<std::uint64_t>(in.n) * p.channel_blocks;
  const std::uint32_t groups_x = ceil_div(p.cells_width, cells_x);
  const std::uint32_t groups_y = ceil_div(p.cells_height, cells_y);
  check_dispatch_fits(limits, "direct convolution", in.str(), out.str(), std::max(input.count(), output.count()),
                      groups_x, groups_y, layers);

  TensorBuffers& tensors = runtime.tensors;
  CommandRecorder& recorder = runtime.recorder;
  const BufferUse source = tensors.read(input);
  const BufferUse bias_use = bias ? tensors.read(*bias) : recorder.unused_binding();
  const BufferUse result = tensors.write(output, true);
  const bool any_fp16 = source.format == TensorFormat::fp16 || result.format == TensorFormat::fp16;
  SpecializationConstants constants;
  constants.set(DirectConvConstant::channels, channels)
      .set(DirectConvConstant::taps, taps)
      .set(DirectConvConstant::kernel_size, u32(d.kernel))
      .set_flag(DirectConvConstant::pool, pool)
      .set(DirectConvConstant::stride, u32(d.stride))
      .set(DirectConvConstant::dilation, u32(d.dilation))
      .set(DirectConvConstant::chunk, chunk);
  if (any_fp16) {
    constants.set_flag(DirectConvConstant::source_fp16, source.format == TensorFormat::fp16)
        .set_flag(DirectConvConstant::result_fp16, result.format == TensorFormat::fp16);
  }
  recorder.dispatch(runtime.pipelines.get(any_fp16 ? kernels::conv2d_direct_fp16 : kernels::conv2d_direct, constants),
                    {source, tensors.read(weights), bias_use, result}, p, groups_x, groups_y,
                    u32(static_cast<std::size_t>(layers)));
  if (recorder.profiling()) {
    const double pixels = static_cast<double>(in.n) * p.out_height * p.out_width;
    recorder.describe_last(fmt::format("{} channels/thread{}", channels, pool ? " +maxpool" : ""),
                           2.0 * p.out_channels * pixels * taps);
  }
}

}  // namespace corgy::vulkan
