// VulkanBackend::prelu: one dispatch of kernels/prelu.comp, a thread per value.
#include "corgy/backends/vulkan/runtime.h"

namespace corgy {

void VulkanBackend::prelu(const Variable& input, const Variable& slope, Variable& output) {
  as_forward([&] {
    const Shape& s = input.shape();
    const vulkan::PreluParams params{static_cast<std::uint32_t>(input.count()), static_cast<std::uint32_t>(s.c),
                                     static_cast<std::uint32_t>(s.plane_count())};
    vulkan::TensorBuffers& tensors = runtime_->tensors;
    runtime_->recorder.dispatch(runtime_->pipelines.get(vulkan::kernels::prelu),
                                {tensors.read(input), tensors.read(slope), tensors.write(output)}, params,
                                vulkan::elementwise_groups(input.count()));
  });
}

}  // namespace corgy
