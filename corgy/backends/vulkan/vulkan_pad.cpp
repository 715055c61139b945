// VulkanBackend::pad: one dispatch of kernels/pad.comp, a thread per output value.
#include "corgy/backends/vulkan/runtime.h"

namespace corgy {

void VulkanBackend::pad(const PadDesc& desc, const Variable& input, Variable& output) {
  as_forward([&] {
    const Shape& in = input.shape();
    const Shape& out = output.shape();
    const vulkan::PadParams params{static_cast<std::uint32_t>(output.count()),
                                   static_cast<std::uint32_t>(in.h),
                                   static_cast<std::uint32_t>(in.w),
                                   static_cast<std::uint32_t>(out.h),
                                   static_cast<std::uint32_t>(out.w),
                                   static_cast<std::uint32_t>(desc.top),
                                   static_cast<std::uint32_t>(desc.left),
                                   static_cast<std::uint32_t>(desc.mode),
                                   desc.value};
    const vulkan::BufferUse source = runtime_->tensors.read(input);
    const vulkan::BufferUse result = runtime_->tensors.write(output, true);
    runtime_->recorder.dispatch(
        vulkan::elementwise_pipeline(*runtime_, vulkan::kernels::pad, vulkan::kernels::pad_fp16, source, result),
        {source, result}, params, vulkan::elementwise_groups(output.count()));
  });
}

}  // namespace corgy
