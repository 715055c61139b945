// VulkanBackend::instance_norm: one dispatch of kernels/instance_norm.comp, a workgroup per plane, or for large planes
// two (kernels/instance_norm_statistics.comp, then instance_norm_apply.comp), several workgroups per plane.
#include <algorithm>

#include "corgy/backends/vulkan/runtime.h"

namespace corgy {

namespace {

/// Elements per workgroup of the two-pass kernels (64 per thread): planes up to this size keep the one-pass kernel,
/// larger ones are cut into chunks of about this size. The style network at 512 x 512 (32 planes of 262144 values)
/// then runs 16 workgroups per plane where it ran one; a plane of 128 x 128 stays one workgroup's, in one dispatch.
constexpr std::uint32_t kChunkElements = 16384;

}  // namespace

void VulkanBackend::instance_norm(const Variable& input, const Variable& scale, const Variable& shift, float epsilon,
                                  Activation activation, Variable& output) {
  as_forward([&] {
    const Shape& s = input.shape();
    const auto planes = static_cast<std::uint32_t>(s.n * s.c);
    const auto plane = static_cast<std::uint32_t>(s.plane_count());
    vulkan::TensorBuffers& tensors = runtime_->tensors;
    vulkan::CommandRecorder& recorder = runtime_->recorder;
    // The kernels stride over planes, so the group count may stay under the device's limit (65535 is the least any
    // device offers).
    const std::uint32_t plane_groups = std::min<std::uint32_t>(planes, 65535);
    if (plane <= kChunkElements) {
      const vulkan::InstanceNormParams params{planes,  static_cast<std::uint32_t>(s.c),     plane,
                                              epsilon, vulkan::activation_kind(activation), activation.slope};
      recorder.dispatch(runtime_->pipelines.get(vulkan::kernels::instance_norm),
                        {tensors.read(input), tensors.read(scale), tensors.read(shift), tensors.write(output)}, params,
                        plane_groups);
      return;
    }
    // Chunks of equal size, none empty: the last ends at the plane's end.
    const std::uint32_t chunks = (plane + kChunkElements - 1) / kChunkElements;
    const std::uint32_t chunk_size = (plane + chunks - 1) / chunks;
    const VkDeviceSize statistics_bytes = VkDeviceSize{planes} * chunks * 2 * sizeof(float);
    // Both read the input as it is stored (fp16 intermediates too); the second may write fp16.
    const vulkan::BufferUse source = tensors.read(input);
    const vulkan::BufferUse statistics = recorder.scratch(vulkan::Scratch::plane_statistics, statistics_bytes, true);
    recorder.dispatch(vulkan::elementwise_pipeline(*runtime_, vulkan::kernels::instance_norm_statistics,
                                                   vulkan::kernels::instance_norm_statistics_fp16, source, statistics),
                      {source, statistics}, vulkan::InstanceNormStatisticsParams{planes, plane, chunks, chunk_size},
                      chunks, plane_groups);
    const vulkan::InstanceNormApplyParams params{
        planes,  static_cast<std::uint32_t>(s.c),     plane,           chunks, chunk_size,
        epsilon, vulkan::activation_kind(activation), activation.slope};
    const vulkan::BufferUse result = tensors.write(output, true);
    recorder.dispatch(vulkan::elementwise_pipeline(*runtime_, vulkan::kernels::instance_norm_apply,
                                                   vulkan::kernels::instance_norm_apply_fp16, source, result),
                      {source, recorder.scratch(vulkan::Scratch::plane_statistics, statistics_bytes, false),
                       tensors.read(scale), tensors.read(shift), result},
                      params, chunks, plane_groups);
  });
}

}  // namespace corgy
