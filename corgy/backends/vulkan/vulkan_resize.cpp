// VulkanBackend::resize: one dispatch of kernels/resize.comp, a thread per output value.
#include "corgy/backends/vulkan/runtime.h"

namespace corgy {

void VulkanBackend::resize(const ResizeDesc& desc, const Variable& input, Variable& output) {
  as_forward("resize", [&] {
    const Shape& in = input.shape();
    const Shape& out = output.shape();
    const vulkan::ResizeParams params{static_cast<std::uint32_t>(output.count()),
                                      static_cast<std::uint32_t>(in.h),
                                      static_cast<std::uint32_t>(in.w),
                                      static_cast<std::uint32_t>(out.h),
                                      static_cast<std::uint32_t>(out.w),
                                      static_cast<std::uint32_t>(desc.mode),
                                      static_cast<std::uint32_t>(desc.coordinates),
                                      static_cast<std::uint32_t>(desc.rounding),
                                      desc.exclude_outside ? 1u : 0u,
                                      desc.scale_h,
                                      desc.scale_w,
                                      desc.cubic_a};
    runtime_->recorder.dispatch(runtime_->pipelines.get(vulkan::kernels::resize),
                                {runtime_->tensors.read(input), runtime_->tensors.write(output)}, params,
                                vulkan::elementwise_groups(output.count()));
  });
}

}  // namespace corgy
