// Everything a VulkanBackend owns, in the order it must be built and torn down.
#pragma once

#include "corgy/backends/vulkan/command_recorder.h"
#include "corgy/backends/vulkan/pipelines.h"
#include "corgy/backends/vulkan/tensor_buffers.h"
#include "corgy/backends/vulkan/vulkan_backend.h"
#include "corgy/backends/vulkan/vulkan_context.h"

namespace corgy::vulkan {

struct Runtime {
  explicit Runtime(const VulkanOptions& chosen)
      : options(chosen),
        context(chosen),
        tensors(context, chosen.force_staging),
        pipelines(context),
        recorder(context, tensors, stats) {}

  VulkanOptions options;
  Context context;
  TensorBuffers tensors;
  PipelineCache pipelines;
  VulkanStats stats;
  CommandRecorder recorder;
};

/// Workgroups for a grid-stride loop over `elements` with the element-wise kernels' workgroup size.
std::uint32_t elementwise_groups(std::size_t elements);

}  // namespace corgy::vulkan
