// The optional device features the fp16 path needs, what a device offers of them, and the chain that enables
// them at device creation: 16-bit storage (fp16 tensors), fp16 arithmetic, the Vulkan memory model and
// VK_NV_cooperative_matrix with 16x16x16 fp16 x fp16 + fp32 matrices (tensor cores); and, for kernel work, the
// driver's statistics of each pipeline (VK_KHR_pipeline_executable_properties).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "corgy/backends/vulkan/device_selection.h"

namespace corgy::vulkan {

struct DeviceFeatures {
  /// fp16 tensors in storage buffers (kernels/tensor_storage.glsl).
  bool storage_16bit = false;
  /// conv2d_coopmat.comp can run: fp16 arithmetic, the memory model, cooperative matrices of the shape it uses,
  /// and 32-invocation subgroups.
  bool cooperative_matrix = false;
  std::uint32_t subgroup_size = 0;
  /// The driver reports each compute pipeline's statistics (VK_KHR_pipeline_executable_properties).
  bool pipeline_statistics = false;
};

/// What `device` offers for fp16 precision (pipeline_statistics stays false: offers_pipeline_statistics).
DeviceFeatures query_device_features(const Instance& instance, const PhysicalDevice& device);

/// Whether `device` reports its pipelines' statistics (VK_KHR_pipeline_executable_properties); asked only when
/// VulkanOptions::pipeline_statistics is set, so that the usual device creation is untouched.
bool offers_pipeline_statistics(const Instance& instance, const PhysicalDevice& device);

/// The extensions and feature structures that enable `wanted` (a subset of what the device offers) in
/// vkCreateDevice. Keeps the structures it points to; build() returns the head of the pNext chain.
class FeatureChain {
 public:
  FeatureChain(const Instance& instance, const PhysicalDevice& device, const DeviceFeatures& wanted);
  FeatureChain(const FeatureChain&) = delete;
  FeatureChain& operator=(const FeatureChain&) = delete;

  const std::vector<const char*>& extensions() const { return extensions_; }
  /// For VkDeviceCreateInfo::pNext, or null when nothing is enabled.
  const void* chain() const { return head_; }

 private:
  std::vector<const char*> extensions_;
  VkPhysicalDevice16BitStorageFeatures storage_{};
  VkPhysicalDeviceShaderFloat16Int8FeaturesKHR float16_{};
  VkPhysicalDeviceVulkanMemoryModelFeaturesKHR memory_model_{};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV cooperative_matrix_{};
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executable_properties_{};
  const void* head_ = nullptr;
};

}  // namespace corgy::vulkan
