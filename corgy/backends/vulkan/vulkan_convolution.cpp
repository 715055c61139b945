// The VulkanBackend's convolutions (implicit GEMM, or im2col + gemm_tiled.comp as the reference; depthwise
// directly), with a following max pool fused where it can be, and the operations built on gemm_tiled.comp:
// fully connected layers and matmul.
#include <fmt/format.h>

#include "corgy/backends/vulkan/conv_tuner.h"
#include "corgy/backends/vulkan/direct_conv.h"
#include "corgy/backends/vulkan/dispatch_math.h"
#include "corgy/backends/vulkan/gemm_dispatch.h"
#include "corgy/backends/vulkan/implicit_gemm_conv.h"
#include "corgy/backends/vulkan/matvec.h"
#include "corgy/backends/vulkan/patch_coopmat_conv.h"
#include "corgy/backends/vulkan/runtime.h"
#include "corgy/backends/vulkan/square_window.h"
#include "corgy/backends/vulkan/vulkan_backend.h"
#include "corgy/backends/vulkan/winograd_conv.h"

namespace corgy {

using vulkan::u32;

namespace {

std::uint32_t round_up_to_4(std::uint32_t value) { return (value + 3) / 4 * 4; }

// A convolution whose groups each read one input channel, computed directly (kernels/depthwise_conv2d.comp).
void record_depthwise(vulkan::Runtime& runtime, const Conv2dDesc& d, const Variable& input, const Variable& weights,
                      const Variable* bias, Variable& output) {
  vulkan::require_square_window(d, "depthwise_conv2d.comp");
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  const vulkan::DepthwiseParams params{
      u32(in.n),         u32(in.c),  u32(in.h),      u32(in.w),      u32(out.c),
      u32(out.h),        u32(out.w), u32(d.padding), bias ? 1u : 0u, vulkan::activation_kind(d.activation),
      d.activation.slope};
  // Output rows per thread: 4 share most of their input rows (a first guess, not tuned); fewer on small planes,
  // where a block would mostly hang past the last row.
  const std::uint32_t rows = out.h >= 8 ? 4 : out.h >= 2 ? 2 : 1;
  vulkan::TensorBuffers& tensors = runtime.tensors;
  const vulkan::BufferUse source = tensors.read(input);
  const vulkan::BufferUse result = tensors.write(output, true);
  vulkan::SpecializationConstants constants;
  constants.set(vulkan::DepthwiseConstant::kernel, u32(d.kernel))
      .set(vulkan::DepthwiseConstant::stride, u32(d.stride))
      .set(vulkan::DepthwiseConstant::dilation, u32(d.dilation))
      .set(vulkan::DepthwiseConstant::rows, rows);
  const bool half = source.format == vulkan::TensorFormat::fp16 || result.format == vulkan::TensorFormat::fp16;
  if (half) {
    constants.set_flag(vulkan::ElementwiseFp16Constant::source_fp16, source.format == vulkan::TensorFormat::fp16)
        .set_flag(vulkan::ElementwiseFp16Constant::result_fp16, result.format == vulkan::TensorFormat::fp16);
  }
  const std::size_t threads = output.count() / out.h * ((out.h + rows - 1) / rows);
  runtime.recorder.dispatch(
      runtime.pipelines.get(half ? vulkan::kernels::depthwise_conv2d_fp16 : vulkan::kernels::depthwise_conv2d,
                            constants),
      {source, tensors.read(weights), bias ? tensors.read(*bias) : runtime.recorder.unused_binding(), result}, params,
      vulkan::elementwise_groups(threads));
  runtime.recorder.describe_last(runtime.recorder.profiling() ? fmt::format("direct, {} rows per thread", rows) : "",
                                 2.0 * static_cast<double>(output.count()) * d.kernel * d.kernel);
}

// The im2col columns of every image and group in the scratch buffer; returns them as the GEMM's B operand.
vulkan::BufferUse record_im2col(vulkan::Runtime& runtime, const Conv2dDesc& d, const Variable& input, const Shape& out,
                                std::uint32_t pitch) {
  const Shape& in = input.shape();
  const std::uint32_t rows = u32(d.in_channels / d.groups * d.taps());
  const std::size_t count = static_cast<std::size_t>(in.n) * d.groups * rows * pitch;
  const Conv2dWindow w = d.window();
  const vulkan::Im2colParams params{u32(in.n),
                                    u32(d.groups),
                                    u32(d.in_channels / d.groups),
                                    u32(in.h),
                                    u32(in.w),
                                    u32(out.h),
                                    u32(out.w),
                                    u32(w.kernel_h),
                                    u32(w.kernel_w),
                                    u32(w.stride_h),
                                    u32(w.stride_w),
                                    u32(w.pad_top),
                                    u32(w.pad_left),
                                    u32(w.dilation_h),
                                    u32(w.dilation_w),
                                    pitch};
  const VkDeviceSize bytes = count * sizeof(float);
  runtime.recorder.dispatch(
      runtime.pipelines.get(vulkan::kernels::im2col),
      {runtime.tensors.read(input), runtime.recorder.scratch(vulkan::Scratch::im2col_columns, bytes, true)}, params,
      vulkan::elementwise_groups(count));
  return runtime.recorder.scratch(vulkan::Scratch::im2col_columns, bytes, false);
}

// The reference path: im2col (unless pointwise), then gemm_tiled.comp with bias and activation on its output.
void record_im2col_gemm(vulkan::Runtime& runtime, const Conv2dDesc& d, const Variable& input, const Variable& weights,
                        const Variable* bias, Variable& output) {
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  const std::uint32_t rows = u32(d.in_channels / d.groups * d.taps());
  const std::uint32_t pixels = u32(out.plane_count());
  // A 1x1 convolution at stride 1 without padding reads the input as its columns: no im2col.
  const bool pointwise = d.is_square() && d.kernel == 1 && d.stride == 1 && d.padding == 0;
  const std::uint32_t pitch = pointwise ? pixels : round_up_to_4(pixels);
  vulkan::GemmCall call;
  // gemm_tiled.comp reads fp32 only: the recorder converts an fp16 input, and the output stays fp32.
  call.a = runtime.tensors.read(weights);
  call.b = pointwise ? runtime.tensors.read(input) : record_im2col(runtime, d, input, out, pitch);
  call.c = runtime.tensors.write(output);
  call.bias = bias ? runtime.tensors.read(*bias) : runtime.recorder.unused_binding();
  call.images = u32(in.n);
  const std::uint32_t out_per_group = u32(d.out_channels / d.groups);
  vulkan::GemmParams& p = call.params;
  p = {out_per_group,
       pixels,
       rows,
       rows,
       pitch,
       pixels,
       u32(d.groups),
       out_per_group * rows,
       u32(d.groups) * rows * pitch,
       rows * pitch,
       u32(out.image_count()),
       out_per_group * pixels,
       bias ? vulkan::GemmBias::per_row : vulkan::GemmBias::none,
       vulkan::activation_kind(d.activation),
       d.activation.slope};
  if (pointwise) {
    p.b_image_stride = u32(in.image_count());
    p.b_group_stride = rows * pixels;
  }
  vulkan::record_gemm(runtime, call);
}

}  // namespace

namespace {

// Records `d` (and `pool` after it, null for none; output is then the pooled tensor) as `plan` says: the pool fused
// into the convolution's output where the chosen kernel can, else a second dispatch over a scratch tensor.
// With `residual` (never with a pool) the output is activation(conv + bias + residual): added in the implicit-GEMM
// kernels' epilogue and Winograd's output transform, after the other kernels by add.comp in place.
void record_conv_as(VulkanBackend& backend, vulkan::Runtime& runtime, const VulkanConvolutionOptions& plan,
                    const Conv2dDesc& d, const Pool2dDesc* pool, const Variable& input, const Variable& weights,
                    const Variable* bias, Variable& output, const Variable* residual = nullptr) {
  const bool depthwise = d.in_channels / d.groups == 1;
  if (residual) {
    // The implicit GEMMs and Winograd's output transform add it as they write (the same order of choices as below).
    const bool fusing_kernel = plan.fuse_residual && d.is_square() && !depthwise &&
                               plan.algorithm != VulkanConvAlgorithm::im2col_gemm &&
                               !vulkan::direct_conv_chosen(d, plan) && !vulkan::patch_coopmat_chosen(runtime, d, plan);
    if (fusing_kernel && vulkan::winograd_chosen(runtime, d, input.shape(), plan)) {
      return vulkan::record_winograd_conv(runtime, d, nullptr, input, weights, bias, output, residual);
    }
    if (fusing_kernel) {
      return vulkan::record_implicit_gemm_conv(runtime, plan, d, nullptr, input, weights, bias, output, residual);
    }
    Conv2dDesc before_add = d;
    before_add.activation = Activation::none();
    record_conv_as(backend, runtime, plan, before_add, nullptr, input, weights, bias, output);
    // In place: add.comp reads and writes each element in one invocation.
    return backend.add(output, *residual, d.activation, output);
  }
  if (pool == nullptr) {
    if (!d.is_square()) {
      // Every other kernel reads the scalar, square window; im2col takes any (whatever algorithm was forced, as
      // depthwise convolutions always run depthwise_conv2d.comp).
      record_im2col_gemm(runtime, d, input, weights, bias, output);
    } else if (depthwise) {
      record_depthwise(runtime, d, input, weights, bias, output);
    } else if (plan.algorithm == VulkanConvAlgorithm::im2col_gemm) {
      record_im2col_gemm(runtime, d, input, weights, bias, output);
    } else if (vulkan::direct_conv_chosen(d, plan)) {
      vulkan::record_direct_conv(runtime, d, nullptr, input, weights, bias, output);
    } else if (vulkan::patch_coopmat_chosen(runtime, d, plan)) {
      vulkan::record_patch_coopmat_conv(runtime, d, nullptr, input, weights, bias, output);
    } else if (vulkan::winograd_chosen(runtime, d, input.shape(), plan)) {
      vulkan::record_winograd_conv(runtime, d, nullptr, input, weights, bias, output);
    } else {
      vulkan::record_implicit_gemm_conv(runtime, plan, d, nullptr, input, weights, bias, output);
    }
    return;
  }
  const bool fusable = d.is_square() && !depthwise && vulkan::pool_fusable(*pool) && plan.fuse_pool &&
                       plan.algorithm != VulkanConvAlgorithm::im2col_gemm;
  if (fusable && vulkan::direct_conv_chosen(d, plan)) {
    vulkan::record_direct_conv(runtime, d, pool, input, weights, bias, output);
    return;
  }
  if (fusable && vulkan::patch_coopmat_chosen(runtime, d, plan)) {
    vulkan::record_patch_coopmat_conv(runtime, d, pool, input, weights, bias, output);
    return;
  }
  // Winograd fuses only pools whose windows are its tiles. Other pools: the implicit GEMM fuses them, unless
  // Winograd was forced, which then runs unfused (below).
  const bool winograd = fusable && vulkan::winograd_chosen(runtime, d, input.shape(), plan);
  if (fusable && winograd && vulkan::winograd_pool_fusable(*pool)) {
    vulkan::record_winograd_conv(runtime, d, pool, input, weights, bias, output);
    return;
  }
  if (fusable && plan.algorithm != VulkanConvAlgorithm::winograd) {
    vulkan::record_implicit_gemm_conv(runtime, plan, d, pool, input, weights, bias, output);
    return;
  }
  // The convolution into a device-only scratch tensor, then the pool's own dispatch.
  const Shape& in = input.shape();
  Variable unpooled = runtime.scratch_tensor({in.n, d.out_channels, d.output_h(in.h), d.output_w(in.w)});
  record_conv_as(backend, runtime, plan, d, nullptr, input, weights, bias, unpooled);
  backend.pool2d(*pool, unpooled, output);
}

// Records `d` (and `pool`, or the `residual` added before the activation) with the plan the tuner chooses: the
// static tables' when tuning is off. Candidates are timed with the residual's add, fused or not.
void record_planned_conv(VulkanBackend& backend, vulkan::Runtime& runtime, const Conv2dDesc& d, const Pool2dDesc* pool,
                         const Variable& input, const Variable& weights, const Variable* bias, Variable& output,
                         const Variable* residual = nullptr) {
  const auto record = [&](const VulkanConvolutionOptions& plan) {
    record_conv_as(backend, runtime, plan, d, pool, input, weights, bias, output, residual);
  };
  runtime.tuner.record(d, pool, residual != nullptr, input, output.shape(), record);
}

}  // namespace

void VulkanBackend::conv2d(const Conv2dDesc& d, const Variable& input, const Variable& weights, const Variable* bias,
                           Variable& output) {
  as_forward("conv2d", [&] { record_planned_conv(*this, *runtime_, d, nullptr, input, weights, bias, output); });
}

void VulkanBackend::conv2d_maxpool(const Conv2dDesc& conv, const Pool2dDesc& pool, const Variable& input,
                                   const Variable& weights, const Variable* bias, Variable& output) {
  as_forward("conv2d_maxpool",
             [&] { record_planned_conv(*this, *runtime_, conv, &pool, input, weights, bias, output); });
}

void VulkanBackend::conv2d_add(const Conv2dDesc& desc, const Variable& input, const Variable& weights,
                               const Variable* bias, const Variable& residual, Variable& output) {
  as_forward("conv2d_add", [&] {
    if (residual.shape() != output.shape()) {
      throw Error(fmt::format("Vulkan conv2d_add: residual {} for an output of {}", residual.shape().str(),
                              output.shape().str()));
    }
    record_planned_conv(*this, *runtime_, desc, nullptr, input, weights, bias, output, &residual);
  });
}

void VulkanBackend::inverted_residual(const InvertedResidualDesc& desc, const Variable& input, const Variable* residual,
                                      Variable& output) {
  as_forward("inverted_residual", [&] {
    // Each stage is an ordinary convolution here, so any window would run; fusion.cpp fuses square ones only.
    // The block's own three convolutions, its two intermediates in device-only scratch tensors.
    vulkan::Runtime& runtime = *runtime_;
    const Shape& in = input.shape();
    const Conv2dDesc& d = desc.depthwise.desc;
    Variable expansion;
    if (desc.expand.weights) {
      expansion = runtime.scratch_tensor({in.n, desc.expand.desc.out_channels, in.h, in.w}, 0);
      conv2d(desc.expand.desc, input, *desc.expand.weights, desc.expand.bias, expansion);
    }
    const Variable& expanded = desc.expand.weights ? expansion : input;  // no expansion: the depthwise reads the input
    if (!desc.project.weights) return conv2d(d, expanded, *desc.depthwise.weights, desc.depthwise.bias, output);
    const bool excites = desc.excite.channels > 0;
    Variable filtered = runtime.scratch_tensor({in.n, d.out_channels, d.output_size(in.h), d.output_size(in.w)},
                                               excites ? vulkan::Runtime::excite_input_slot : 1);
    conv2d(d, expanded, *desc.depthwise.weights, desc.depthwise.bias, filtered);
    if (excites) {
      return squeeze_excite_conv2d(desc.excite, desc.excite_weights, desc.project.desc, filtered, *desc.project.weights,
                                   desc.project.bias, residual, output);
    }
    if (residual) {
      conv2d_add(desc.project.desc, filtered, *desc.project.weights, desc.project.bias, *residual, output);
    } else {
      conv2d(desc.project.desc, filtered, *desc.project.weights, desc.project.bias, output);
    }
  });
}

void VulkanBackend::preactivated_conv2d(const Conv2dDesc& desc, std::span<const Variable* const> inputs,
                                        const Variable& scale, const Variable& shift, Activation input_activation,
                                        const Pool2dDesc* input_pool, const Variable& weights, const Variable* bias,
                                        Variable& output) {
  as_forward("preactivated_conv2d", [&] {
    // The concatenation and the affine into device-only scratch tensors (slots 1 and 2: a pooled convolution's
    // output takes slot 0), then the convolution.
    const Shape& first = inputs[0]->shape();
    const Shape joined{first.n, desc.in_channels, first.h, first.w};
    Variable concatenated = runtime_->scratch_tensor(joined, 1);
    concat_channels(inputs, concatenated);
    Variable preactivated = runtime_->scratch_tensor(joined, 2);
    channel_affine(concatenated, scale, shift, input_activation, preactivated);
    if (input_pool) {
      // The pool into slot 1 again (the concatenation is read already; the pooled tensor is smaller).
      Variable pooled = runtime_->scratch_tensor(
          Shape{first.n, desc.in_channels, input_pool->output_h(first.h), input_pool->output_w(first.w)}, 1);
      pool2d(*input_pool, preactivated, pooled);
      return conv2d(desc, pooled, weights, bias, output);
    }
    conv2d(desc, preactivated, weights, bias, output);
  });
}

void VulkanBackend::linear(const Variable& input, const Variable& weights, const Variable* bias, Activation activation,
                           Variable& output) {
  as_forward("linear", [&] {
    vulkan::Runtime& runtime = *runtime_;
    if (input.shape().n <= vulkan::matvec_max_batch) {
      return vulkan::record_matvec(runtime, input, weights, bias, activation, weights.shape().rows(),
                                   weights.shape().cols(), output, false);
    }
    // A batch of rows is a 1x1 convolution of 1x1 images, planned as one: the plans split a long K over more
    // workgroups and use tensor cores in fp16, where one gemm_tiled dispatch made few tiles of the small
    // (batch x out_features) result and left most of a large GPU idle (VGG-16's 25088 -> 4096 at batch 32: 1.39 ms
    // on an H100, 4.7 TFLOP/s).
    const int batch = input.shape().n;
    const int in_features = weights.shape().cols();
    const int out_features = weights.shape().rows();
    Conv2dDesc desc;
    desc.in_channels = in_features;
    desc.out_channels = out_features;
    desc.activation = activation;
    Variable rows_as_images = output.view({batch, out_features, 1, 1});
    record_planned_conv(*this, runtime, desc, nullptr, input.view({batch, in_features, 1, 1}),
                        weights.view({out_features, in_features, 1, 1}), bias, rows_as_images);
  });
}

void VulkanBackend::matmul(const Variable& a, bool transpose_a, const Variable& b, bool transpose_b, Variable& c) {
  as_forward("matmul", [&] {
    vulkan::Runtime& runtime = *runtime_;
    const std::uint32_t rows = u32(c.shape().rows());
    const std::uint32_t cols = u32(c.shape().cols());
    const std::uint32_t inner = u32(transpose_a ? a.shape().rows() : a.shape().cols());
    vulkan::GemmCall call;
    call.a = runtime.tensors.read(a);
    call.b = runtime.tensors.read(b);
    call.c = runtime.tensors.write(c);
    call.bias = runtime.recorder.unused_binding();
    call.a_transposed = transpose_a;
    call.b_transposed = transpose_b;
    call.params = {rows,
                   cols,
                   inner,
                   u32(a.shape().cols()),
                   u32(b.shape().cols()),
                   cols,
                   1,
                   0,
                   0,
                   0,
                   0,
                   0,
                   vulkan::GemmBias::none,
                   vulkan::activation_kind(Activation::none()),
                   0.0f};
    vulkan::record_gemm(runtime, call);
  });
}

}  // namespace corgy
