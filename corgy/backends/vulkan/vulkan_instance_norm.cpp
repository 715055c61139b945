// VulkanBackend::instance_norm: one dispatch of kernels/instance_norm.comp, a workgroup per plane.
#include <algorithm>

#include "corgy/backends/vulkan/runtime.h"

namespace corgy {

void VulkanBackend::instance_norm(const Variable& input, const Variable& scale, const Variable& shift, float epsilon,
                                  Activation activation, Variable& output) {
  as_forward([&] {
    const Shape& s = input.shape();
    const auto planes = static_cast<std::uint32_t>(s.n * s.c);
    const vulkan::InstanceNormParams params{
        planes,  static_cast<std::uint32_t>(s.c),     static_cast<std::uint32_t>(s.plane_count()),
        epsilon, vulkan::activation_kind(activation), activation.slope};
    vulkan::TensorBuffers& tensors = runtime_->tensors;
    // The kernel strides over planes, so the group count may stay under the device's limit (65535 is the least
    // any device offers).
    runtime_->recorder.dispatch(runtime_->pipelines.get(vulkan::kernels::instance_norm),
                                {tensors.read(input), tensors.read(scale), tensors.read(shift), tensors.write(output)},
                                params, std::min<std::uint32_t>(planes, 65535));
  });
}

}  // namespace corgy
