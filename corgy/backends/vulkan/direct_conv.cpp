#include "corgy/backends/vulkan/direct_conv.h"

#include <fmt/format.h>

#include <algorithm>

#include "corgy/error.h"

namespace corgy::vulkan {

namespace {

std::uint32_t u32(std::size_t value) { return static_cast<std::uint32_t>(value); }
std::uint32_t u32(int value) { return static_cast<std::uint32_t>(value); }
std::uint32_t ceil_div(std::uint32_t a, std::uint32_t b) { return (a + b - 1) / b; }

// conv2d_direct.comp's limits: K taps times the block's channels of weights in shared memory (20 KiB at most),
// and the block's sums in registers. The automatic choice takes it up to K = 32: on an H100, Tiny YOLO's first
// layer (3x3x3 -> 16 with its 2x2 pool) at batch 64 takes 1.17 ms against 2.38 ms as an implicit GEMM (fp32) and
// 1.79 ms on tensor cores (fp16), at batch 1 27 us against 47 and 35 us; its second layer (K = 144) is faster as
// a GEMM (1.42 against 1.62 ms), so beyond K = 32 only when forced.
constexpr int most_taps = 160;
constexpr int most_automatic_taps = 32;
constexpr std::uint32_t most_channels_per_thread = 32;
constexpr std::uint32_t threads_per_workgroup = 128;

}  // namespace

bool direct_conv_fits(const Conv2dDesc& conv) {
  return conv.groups == 1 && conv.in_channels * conv.kernel * conv.kernel <= most_taps;
}

bool direct_conv_chosen(const Conv2dDesc& conv, const VulkanConvolutionOptions& options) {
  if (options.algorithm == VulkanConvAlgorithm::direct) {
    if (!direct_conv_fits(conv)) {
      throw Error(
          fmt::format("Vulkan: the direct convolution needs one group and at most {} taps per output "
                      "(in channels x kernel x kernel); this {}x{} convolution of {} channels has {} "
                      "groups and {} taps",
                      most_taps, conv.kernel, conv.kernel, conv.in_channels, conv.groups,
                      conv.in_channels / conv.groups * conv.kernel * conv.kernel));
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
  DirectConvParams p{};
  p.n = u32(static_cast<std::size_t>(in.n) * out.plane_count() * (pool ? 4 : 1));
  p.in_channels = u32(d.in_channels);
  p.height = u32(in.h);
  p.width = u32(in.w);
  p.out_channels = u32(d.out_channels);
  p.out_height = u32(d.output_size(in.h));
  p.out_width = u32(d.output_size(in.w));
  p.pool_height = pool ? u32(out.h) : 0;
  p.pool_width = pool ? u32(out.w) : 0;
  p.pool_pad_top = pool ? u32(fused_pool->pad_top) : 0;
  p.pool_pad_left = pool ? u32(fused_pool->pad_left) : 0;
  p.stride = u32(d.stride);
  p.padding = u32(d.padding);
  p.dilation = u32(d.dilation);
  p.has_bias = bias ? 1 : 0;
  p.activation = activation_kind(d.activation);
  p.slope = d.activation.slope;
  if (static_cast<std::uint64_t>(in.n) * out.plane_count() * (pool ? 4 : 1) >= (1ull << 31)) {
    throw Error(fmt::format("Vulkan: convolution output {} is too large for one direct convolution", out.str()));
  }
  // Output channels per thread: all of them up to 32 (a multiple of 4), else blocks of 32 along workgroup z.
  const std::uint32_t channels = std::min((p.out_channels + 3) / 4 * 4, most_channels_per_thread);
  const std::uint32_t taps = u32(d.in_channels * d.kernel * d.kernel);

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
      .set(DirectConvConstant::workgroup_size, threads_per_workgroup);
  if (any_fp16) {
    constants.set_flag(DirectConvConstant::source_fp16, source.format == TensorFormat::fp16)
        .set_flag(DirectConvConstant::result_fp16, result.format == TensorFormat::fp16);
  }
  const std::uint32_t workgroups = ceil_div(ceil_div(p.n, 4), threads_per_workgroup);
  const std::uint32_t x = std::min(workgroups, runtime.context.limits().maxComputeWorkGroupCount[0]);
  recorder.dispatch(runtime.pipelines.get(any_fp16 ? kernels::conv2d_direct_fp16 : kernels::conv2d_direct, constants),
                    {source, tensors.read(weights), bias_use, result}, p, x, ceil_div(workgroups, x),
                    ceil_div(p.out_channels, channels));
  if (recorder.profiling()) {
    recorder.describe_last(fmt::format("{} channels/thread{}", channels, pool ? " +maxpool" : ""),
                           2.0 * p.out_channels * p.n * taps);
  }
}

}  // namespace corgy::vulkan
