// VulkanBackend's arithmetic on tensors of any rank: one dispatch each of kernels/broadcast_binary.comp, unary.comp,
// reduce_axis.comp, softmax_axis.comp, batched_matmul.comp and layer_norm.comp, a thread per output value (per line
// for softmax; the layer norm's lines are summed by many threads each).
// With fp16 precision the _fp16 variants read and write device-only intermediates in fp16 and compute in fp32.
#include <algorithm>
#include <bit>
#include <initializer_list>

#include "corgy/backends/vulkan/dispatch_math.h"
#include "corgy/backends/vulkan/runtime.h"

namespace corgy {

using vulkan::elementwise_groups;
using vulkan::elementwise_pipeline;
using vulkan::u32;

namespace {

/// Lines that one workgroup of kernels/layer_norm.comp normalises together: 1 where the lines are contiguous (a
/// LayerNorm over the last axis), else up to 32 neighbours along the inner axis, so that each of its loads reads up to
/// 128 consecutive bytes; fewer (down to 8, 32 bytes) while that would leave fewer than 128 workgroups, a first guess
/// at filling a GPU's compute units when there are few lines (ConvNeXt's 7x7 stage at batch 1: 49 lines).
std::uint32_t layer_norm_lines(const AxisExtent& axis) {
  if (axis.inner == 1) return 1;
  std::uint32_t lines = std::bit_ceil(static_cast<std::uint32_t>(std::min<std::size_t>(axis.inner, 32)));
  const auto groups = [&](std::uint32_t l) { return axis.outer * ((axis.inner + l - 1) / l); };
  while (lines > 8 && groups(lines) < 128) lines /= 2;
  return lines;
}

/// Throws corgy::Error when a tensor or an offset the kernel computes does not fit its 32-bit indices.
void check_fits(const vulkan::Runtime& runtime, const char* what, std::initializer_list<const Variable*> tensors) {
  std::size_t largest = 0;
  for (const Variable* tensor : tensors) largest = std::max(largest, tensor->count());
  const Shape& first = (*tensors.begin())->shape();
  vulkan::check_dispatch_fits(runtime.context.limits(), what, first.str(), (*(tensors.end() - 1))->shape().str(),
                              largest, elementwise_groups(largest), 1, 1);
}

void copy_walk(const BroadcastDesc& desc, std::uint32_t* extent, std::uint32_t* a_stride, std::uint32_t* b_stride) {
  for (std::size_t k = 0; k < static_cast<std::size_t>(BroadcastDesc::max_rank); ++k) {
    extent[k] = u32(desc.extent[k]);
    a_stride[k] = u32(desc.a_stride[k]);
    b_stride[k] = u32(desc.b_stride[k]);
  }
}

}  // namespace

void VulkanBackend::broadcast_binary(BinaryOp op, const BroadcastDesc& desc, const Variable& a, const Variable& b,
                                     Variable& output) {
  as_forward("broadcast_binary", [&] {
    vulkan::Runtime& runtime = *runtime_;
    check_fits(runtime, "broadcast operation", {&a, &b, &output});
    vulkan::BroadcastBinaryParams params{};
    params.count = u32(desc.count());
    params.op = static_cast<std::uint32_t>(op);
    params.rank = u32(desc.rank);
    copy_walk(desc, params.extent, params.a_stride, params.b_stride);
    const vulkan::BufferUse left = runtime.tensors.read(a);
    const vulkan::BufferUse right = runtime.tensors.read(b);
    const vulkan::BufferUse result = runtime.tensors.write(output, true);
    runtime.recorder.dispatch(elementwise_pipeline(runtime, vulkan::kernels::broadcast_binary,
                                                   vulkan::kernels::broadcast_binary_fp16, left, result, &right),
                              {left, right, result}, params, elementwise_groups(desc.count()));
  });
}

void VulkanBackend::unary(UnaryOp op, const Variable& input, Variable& output) {
  as_forward("unary", [&] {
    vulkan::Runtime& runtime = *runtime_;
    check_fits(runtime, "unary operation", {&input, &output});
    const vulkan::UnaryParams params{u32(input.count()), static_cast<std::uint32_t>(op)};
    const vulkan::BufferUse source = runtime.tensors.read(input);
    const vulkan::BufferUse result = runtime.tensors.write(output, true);
    runtime.recorder.dispatch(
        elementwise_pipeline(runtime, vulkan::kernels::unary, vulkan::kernels::unary_fp16, source, result),
        {source, result}, params, elementwise_groups(input.count()));
  });
}

void VulkanBackend::reduce_axis(ReduceOp op, const AxisExtent& axis, const Variable& input, Variable& output) {
  as_forward("reduce_axis", [&] {
    vulkan::Runtime& runtime = *runtime_;
    check_fits(runtime, "reduction", {&input, &output});
    const vulkan::ReduceAxisParams params{u32(axis.outer), u32(axis.length), u32(axis.inner),
                                          static_cast<std::uint32_t>(op)};
    const vulkan::BufferUse source = runtime.tensors.read(input);
    const vulkan::BufferUse result = runtime.tensors.write(output, true);
    runtime.recorder.dispatch(
        elementwise_pipeline(runtime, vulkan::kernels::reduce_axis, vulkan::kernels::reduce_axis_fp16, source, result),
        {source, result}, params, elementwise_groups(axis.outer * axis.inner));
  });
}

void VulkanBackend::softmax_axis(const AxisExtent& axis, bool log, const Variable& input, Variable& output) {
  as_forward("softmax_axis", [&] {
    vulkan::Runtime& runtime = *runtime_;
    check_fits(runtime, "softmax", {&input, &output});
    const vulkan::SoftmaxAxisParams params{u32(axis.outer), u32(axis.length), u32(axis.inner), log ? 1u : 0u};
    const vulkan::BufferUse source = runtime.tensors.read(input);
    const vulkan::BufferUse result = runtime.tensors.write(output, true);
    runtime.recorder.dispatch(elementwise_pipeline(runtime, vulkan::kernels::softmax_axis,
                                                   vulkan::kernels::softmax_axis_fp16, source, result),
                              {source, result}, params, elementwise_groups(axis.outer * axis.inner));
  });
}

void VulkanBackend::batched_matmul(const BatchedMatmulDesc& desc, const Variable& a, const Variable& b,
                                   Variable& output) {
  as_forward("batched_matmul", [&] {
    vulkan::Runtime& runtime = *runtime_;
    check_fits(runtime, "batched matrix product", {&a, &b, &output});
    vulkan::BatchedMatmulParams params{};
    params.count = u32(output.count());
    params.rows = u32(desc.rows);
    params.inner = u32(desc.inner);
    params.cols = u32(desc.cols);
    params.rank = u32(desc.batch.rank);
    copy_walk(desc.batch, params.extent, params.a_stride, params.b_stride);
    const vulkan::BufferUse left = runtime.tensors.read(a);
    const vulkan::BufferUse right = runtime.tensors.read(b);
    const vulkan::BufferUse result = runtime.tensors.write(output, true);
    runtime.recorder.dispatch(elementwise_pipeline(runtime, vulkan::kernels::batched_matmul,
                                                   vulkan::kernels::batched_matmul_fp16, left, result, &right),
                              {left, right, result}, params, elementwise_groups(output.count()));
  });
}

void VulkanBackend::layer_norm(const AxisExtent& axis, float epsilon, const Variable& scale, const Variable& shift,
                               const Variable& input, Variable& output) {
  as_forward("layer_norm", [&] {
    vulkan::Runtime& runtime = *runtime_;
    check_fits(runtime, "layer norm", {&input, &output});
    const vulkan::LayerNormParams params{u32(axis.outer), u32(axis.length), u32(axis.inner), epsilon};
    const std::uint32_t lines = layer_norm_lines(axis);
    const vulkan::BufferUse source = runtime.tensors.read(input);
    const vulkan::BufferUse result = runtime.tensors.write(output, true);
    vulkan::SpecializationConstants constants;
    constants.set(vulkan::LayerNormConstant::lines, lines);
    const bool half = source.format == vulkan::TensorFormat::fp16 || result.format == vulkan::TensorFormat::fp16;
    if (half) {
      constants.set_flag(vulkan::ElementwiseFp16Constant::source_fp16, source.format == vulkan::TensorFormat::fp16)
          .set_flag(vulkan::ElementwiseFp16Constant::result_fp16, result.format == vulkan::TensorFormat::fp16);
    }
    const std::size_t groups = axis.outer * ((axis.inner + lines - 1) / lines);
    runtime.recorder.dispatch(
        runtime.pipelines.get(half ? vulkan::kernels::layer_norm_fp16 : vulkan::kernels::layer_norm, constants),
        {source, runtime.tensors.read(scale), runtime.tensors.read(shift), result}, params,
        u32(std::clamp<std::size_t>(groups, 1, 65535)));
  });
}

}  // namespace corgy
