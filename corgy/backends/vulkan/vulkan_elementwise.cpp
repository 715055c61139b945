// VulkanBackend::elementwise: one dispatch of kernels/elementwise.comp, a thread per output value.
#include "corgy/backends/vulkan/runtime.h"

namespace corgy {

void VulkanBackend::elementwise(ElementwiseOp op, const Variable& a, const Variable& b, Variable& output) {
  as_forward([&] {
    const vulkan::ElementwiseParams params{static_cast<std::uint32_t>(a.count()), static_cast<std::uint32_t>(op),
                                           b.shape() != a.shape() ? 1u : 0u,
                                           static_cast<std::uint32_t>(a.shape().plane_count())};
    vulkan::TensorBuffers& tensors = runtime_->tensors;
    runtime_->recorder.dispatch(runtime_->pipelines.get(vulkan::kernels::elementwise),
                                {tensors.read(a), tensors.read(b), tensors.write(output)}, params,
                                vulkan::elementwise_groups(a.count()));
  });
}

}  // namespace corgy
