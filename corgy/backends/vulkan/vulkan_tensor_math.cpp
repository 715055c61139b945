// VulkanBackend's arithmetic on tensors of any rank: one dispatch each of kernels/broadcast_binary.comp, unary.comp,
// reduce_axis.comp, softmax_axis.comp, batched_matmul.comp and layer_norm.comp, a thread per output value (per line
// for softmax and the layer norm).
// With fp16 precision the _fp16 variants read and write device-only intermediates in fp16 and compute in fp32.
#include <algorithm>
#include <initializer_list>

#include "corgy/backends/vulkan/dispatch_math.h"
#include "corgy/backends/vulkan/runtime.h"

namespace corgy {

using vulkan::elementwise_groups;
using vulkan::elementwise_pipeline;
using vulkan::u32;

namespace {

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
    const vulkan::BufferUse source = runtime.tensors.read(input);
    const vulkan::BufferUse result = runtime.tensors.write(output, true);
    runtime.recorder.dispatch(
        elementwise_pipeline(runtime, vulkan::kernels::layer_norm, vulkan::kernels::layer_norm_fp16, source, result),
        {source, runtime.tensors.read(scale), runtime.tensors.read(shift), result}, params,
        elementwise_groups(axis.outer * axis.inner));
  });
}

}  // namespace corgy
