// VulkanBackend::conv_transpose2d: one dispatch of kernels/conv_transpose2d.comp, a thread per output value that
// gathers what the input pixels scatter to it.
#include "corgy/backends/vulkan/dispatch_math.h"
#include "corgy/backends/vulkan/runtime.h"

namespace corgy {

void VulkanBackend::conv_transpose2d(const ConvTranspose2dDesc& d, const Variable& input, const Variable& weights,
                                     const Variable* bias, Variable& output) {
  as_forward("conv_transpose2d", [&] {
    const Shape& in = input.shape();
    const Shape& out = output.shape();
    using vulkan::u32;
    const vulkan::ConvTransposeParams params{
        u32(output.count()), u32(d.in_channels), u32(d.out_channels), u32(d.groups),   u32(in.h),
        u32(in.w),           u32(out.h),         u32(out.w),          u32(d.kernel_h), u32(d.kernel_w),
        u32(d.stride_h),     u32(d.stride_w),    u32(d.pad_top),      u32(d.pad_left), u32(d.dilation_h),
        u32(d.dilation_w),   bias ? 1u : 0u};
    vulkan::TensorBuffers& tensors = runtime_->tensors;
    runtime_->recorder.dispatch(
        runtime_->pipelines.get(vulkan::kernels::conv_transpose2d),
        {tensors.read(input), tensors.read(weights), bias ? tensors.read(*bias) : runtime_->recorder.unused_binding(),
         tensors.write(output)},
        params, vulkan::elementwise_groups(output.count()));
    runtime_->recorder.describe_last(
        "gather", 2.0 * static_cast<double>(input.count()) * (d.out_channels / d.groups) * d.kernel_h * d.kernel_w);
  });
}

}  // namespace corgy
