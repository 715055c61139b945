#include "corgy/backends/vulkan/implicit_gemm_conv.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "corgy/backends/vulkan/dispatch_math.h"
#include "corgy/backends/vulkan/square_window.h"
#include "corgy/error.h"

namespace corgy::vulkan {

namespace {

// The dispatch's workgroups: tiles along x (and y once x reaches the device's limit), groups and splits along z.
std::array<std::uint32_t, 3> workgroups(std::uint32_t tiles, std::uint32_t layers,
                                        const VkPhysicalDeviceLimits& limits) {
  const std::uint32_t x = std::min(tiles, limits.maxComputeWorkGroupCount[0]);
  return {x, ceil_div(tiles, x), layers};
}

}  // namespace

bool pool_fusable(const Pool2dDesc& pool) {
  return pool.kind == PoolKind::max && pool.kernel_h == 2 && pool.kernel_w == 2 && pool.stride_h == 2 &&
         pool.stride_w == 2 && pool.pad_top <= 1 && pool.pad_left <= 1 && pool.pad_bottom <= 1 && pool.pad_right <= 1;
}

void record_conv_gemm(Runtime& runtime, const ImplicitGemmParams& p, const ConvPlan& plan, std::uint32_t kernel_size,
                      bool pool, const BufferUse& source, const BufferUse& a, const BufferUse& bias,
                      const BufferUse& result, const BufferUse* residual) {
  if (residual && (pool || plan.splits > 1)) {
    throw Error("Vulkan: the implicit-GEMM kernels add a residual only without a pool or a split of K");
  }
  const bool coopmat = plan.algorithm == VulkanConvAlgorithm::cooperative_matrix;
  const bool split = plan.splits > 1;
  const bool any_fp16 = source.format == TensorFormat::fp16 || result.format == TensorFormat::fp16;

  // On tensor cores B's units of 8 columns are 8 consecutive halves of one plane for a 1x1 convolution without
  // stride, padding or pool of an fp16 source whose planes are whole units: one 16-byte load instead of 8 gathered.
  const bool contiguous_b = coopmat && kernel_size == 1 && p.stride == 1 && p.padding == 0 && !pool &&
                            source.format == TensorFormat::fp16 && p.height * p.width % 8 == 0;
  SpecializationConstants constants;
  const KernelInfo* kernel = nullptr;
  if (coopmat) {
    const VulkanCoopmatTiles& t = plan.coopmat_tiles;
    kernel = &kernels::conv2d_coopmat_fp16;
    constants.set(CoopmatConstant::warps_m, t.warps_m)
        .set(CoopmatConstant::warps_n, t.warps_n)
        .set(CoopmatConstant::frags_m, t.frags_m)
        .set(CoopmatConstant::frags_n, t.frags_n)
        .set(CoopmatConstant::tile_k, t.tile_k)
        .set(CoopmatConstant::kernel_size, kernel_size)
        .set_flag(CoopmatConstant::pool, pool)
        .set_flag(CoopmatConstant::split_k, split)
        .set(CoopmatConstant::workgroup_size, t.threads())
        .set(CoopmatConstant::activation, p.activation)
        .set_flag(CoopmatConstant::contiguous_b, contiguous_b)
        .set_flag(CoopmatConstant::source_fp16, source.format == TensorFormat::fp16)
        .set_flag(CoopmatConstant::result_fp16, result.format == TensorFormat::fp16);
    // Every image's output plane starts a whole unit of 8 columns, so a lane's 8 columns never cross images.
    const bool whole_units = !pool && !split && p.out_height * p.out_width % 8 == 0;
    constants.set_flag(CoopmatConstant::vector_epilogue, whole_units);
    if (residual) {
      constants.set_flag(CoopmatConstant::residual, true)
          .set_flag(CoopmatConstant::residual_fp16, residual->format == TensorFormat::fp16);
    }
  } else {
    const VulkanGemmTiles& t = plan.tiles;
    kernel = any_fp16 ? &kernels::conv2d_implicit_gemm_fp16 : &kernels::conv2d_implicit_gemm;
    constants.set(ImplicitGemmConstant::tile_m, t.tile_m)
        .set(ImplicitGemmConstant::tile_n, t.tile_n)
        .set(ImplicitGemmConstant::tile_k, t.tile_k)
        .set(ImplicitGemmConstant::thread_m, t.thread_m)
        .set(ImplicitGemmConstant::thread_n, t.thread_n)
        .set_flag(ImplicitGemmConstant::a_vec4, p.k % 4 == 0)
        .set(ImplicitGemmConstant::kernel_size, kernel_size)
        .set_flag(ImplicitGemmConstant::pool, pool)
        .set_flag(ImplicitGemmConstant::split_k, split)
        .set(ImplicitGemmConstant::workgroup_size, t.threads());
    if (any_fp16) {
      constants.set_flag(ImplicitGemmConstant::source_fp16, source.format == TensorFormat::fp16)
          .set_flag(ImplicitGemmConstant::result_fp16, result.format == TensorFormat::fp16);
    }
    if (residual) {
      constants.set_flag(ImplicitGemmConstant::residual, true);
      // The fp32 variant reads fp32 only (the recorder converts an fp16 residual for it).
      if (any_fp16) constants.set_flag(ImplicitGemmConstant::residual_fp16, residual->format == TensorFormat::fp16);
    }
  }
  CommandRecorder& recorder = runtime.recorder;
  const auto groups =
      workgroups(p.tiles_m * ceil_div(p.n, plan.tile_n()), p.groups * plan.splits, runtime.context.limits());
  recorder.dispatch(runtime.pipelines.get(*kernel, constants),
                    {source, a, bias, result, residual ? *residual : recorder.unused_binding()}, p, groups[0],
                    groups[1], groups[2]);
  const double flops = 2.0 * p.m * p.n * p.k * p.groups;
  if (recorder.profiling()) {
    recorder.describe_last(
        plan.describe() + (pool ? " +maxpool" : "") + (residual ? " +add" : "") + (contiguous_b ? " contiguous B" : ""),
        flops);
  }
}

ConvProblem implicit_gemm_problem(const Conv2dDesc& d, bool pool_fused, const Shape& input, const Shape& output) {
  return {u32(d.out_channels / d.groups),
          u32(static_cast<std::size_t>(input.n) * output.plane_count() * (pool_fused ? 4 : 1)),
          u32(d.in_channels / d.groups * d.kernel * d.kernel), u32(d.groups)};
}

void record_implicit_gemm_conv(Runtime& runtime, const VulkanConvolutionOptions& options, const Conv2dDesc& d,
                               const Pool2dDesc* fused_pool, const Variable& input, const Variable& weights,
                               const Variable* bias, Variable& output, const Variable* residual) {
  const Shape& in = input.shape();
  if (residual && (fused_pool || residual->shape() != output.shape())) {
    throw Error(fmt::format("Vulkan: a residual {} added to the convolution output {}{}", residual->shape().str(),
                            output.shape().str(), fused_pool ? " with a pool" : ""));
  }
  const Shape& out = output.shape();
  require_square_window(d, "the implicit-GEMM convolution");
  const bool pool = fused_pool != nullptr;
  const std::uint32_t conv_h = u32(d.output_size(in.h));
  const std::uint32_t conv_w = u32(d.output_size(in.w));
  ImplicitGemmParams p{};
  p.m = u32(d.out_channels / d.groups);
  p.k = u32(d.in_channels / d.groups * d.kernel * d.kernel);
  p.n = u32(static_cast<std::size_t>(in.n) * out.plane_count() * (pool ? 4 : 1));
  p.in_channels = u32(d.in_channels);
  p.height = u32(in.h);
  p.width = u32(in.w);
  p.out_channels = u32(d.out_channels);
  p.out_height = conv_h;
  p.out_width = conv_w;
  p.pool_height = pool ? u32(out.h) : 0;
  p.pool_width = pool ? u32(out.w) : 0;
  p.pool_pad_top = pool ? u32(fused_pool->pad_top) : 0;
  p.pool_pad_left = pool ? u32(fused_pool->pad_left) : 0;
  p.stride = u32(d.stride);
  p.padding = u32(d.padding);
  p.dilation = u32(d.dilation);
  p.groups = u32(d.groups);
  p.has_bias = bias ? 1 : 0;
  p.activation = activation_kind(d.activation);
  p.slope = d.activation.slope;
  if (static_cast<std::uint64_t>(in.n) * out.plane_count() * (pool ? 4 : 1) >= (1ull << 31)) {
    throw Error(fmt::format("Vulkan: convolution output {} is too large for one implicit GEMM", out.str()));
  }

  const ConvDevice device{&runtime.context.limits(), runtime.context.features().cooperative_matrix};
  const ConvPlan plan = plan_convolution({p.m, p.n, p.k, p.groups}, options, device);
  const bool coopmat = plan.algorithm == VulkanConvAlgorithm::cooperative_matrix;
  p.k_per_split = plan.k_per_split;
  p.tiles_m = ceil_div(p.m, plan.tile_m());
  p.lda = (p.k + 7) / 8 * 8;

  TensorBuffers& tensors = runtime.tensors;
  CommandRecorder& recorder = runtime.recorder;
  const BufferUse source = tensors.read(input);
  const BufferUse a = coopmat ? tensors.half_rows(weights, p.k) : tensors.read(weights);
  const BufferUse bias_use = bias ? tensors.read(*bias) : recorder.unused_binding();
  const std::optional<BufferUse> residual_use =
      residual ? std::optional<BufferUse>(tensors.read(*residual)) : std::nullopt;
  const bool split = plan.splits > 1;
  const BufferUse result =
      split ? recorder.scratch(Scratch::split_k_partials,
                               static_cast<VkDeviceSize>(plan.splits) * p.groups * p.m * p.n * sizeof(float), true)
            : tensors.write(output, true);
  record_conv_gemm(runtime, p, plan, u32(d.kernel), pool, source, a, bias_use, result,
                   split || !residual_use ? nullptr : &*residual_use);
  if (!split) return;

  const BufferUse written = tensors.write(output, true);
  SplitKReduceParams r{};
  r.m = p.m;
  r.n = p.n;
  r.groups = p.groups;
  r.splits = plan.splits;
  r.out_channels = p.out_channels;
  r.out_height = p.out_height;
  r.out_width = p.out_width;
  r.pool_height = p.pool_height;
  r.pool_width = p.pool_width;
  r.pool_pad_top = p.pool_pad_top;
  r.pool_pad_left = p.pool_pad_left;
  r.has_bias = p.has_bias;
  r.activation = p.activation;
  r.slope = p.slope;
  SpecializationConstants reduce_constants;
  reduce_constants.set_flag(SplitKReduceConstant::pool, pool);
  const bool half_output = written.format == TensorFormat::fp16;
  if (half_output) reduce_constants.set_flag(SplitKReduceConstant::result_fp16, true);
  if (residual_use) {
    reduce_constants.set_flag(SplitKReduceConstant::residual, true);
    if (half_output) {
      reduce_constants.set_flag(SplitKReduceConstant::residual_fp16, residual_use->format == TensorFormat::fp16);
    }
  }
  BufferUse partials = result;
  partials.writes = false;
  recorder.dispatch(
      runtime.pipelines.get(half_output ? kernels::conv2d_split_k_reduce_fp16 : kernels::conv2d_split_k_reduce,
                            reduce_constants),
      {partials, bias_use, written, residual_use ? *residual_use : recorder.unused_binding()}, r,
      elementwise_groups(output.count()));
  if (recorder.profiling()) {
    recorder.describe_last(fmt::format("{} partial sums{}", plan.splits, residual_use ? " +add" : ""), 0.0);
  }
}

}  // namespace corgy::vulkan
