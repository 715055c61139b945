// The device side of the backend: the chosen physical device, the logical device with one compute queue,
// and the facts about it that buffers, pipelines and recording need.
#pragma once

#include <cstdint>
#include <memory>

#include "corgy/backends/vulkan/device_features.h"
#include "corgy/backends/vulkan/device_selection.h"
#include "corgy/backends/vulkan/vulkan_backend.h"
#include "corgy/backends/vulkan/vulkan_instance.h"

namespace corgy::vulkan {

class Context {
 public:
  /// Creates the instance (with validation when asked), picks options.device and creates the logical device.
  explicit Context(const VulkanOptions& options);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const DeviceFunctions& vk() const { return vk_; }
  VkDevice device() const { return device_; }
  VkQueue queue() const { return queue_; }
  std::uint32_t queue_family() const { return queue_family_; }
  const PhysicalDevice& physical() const { return physical_; }
  const VkPhysicalDeviceLimits& limits() const { return physical_.properties.limits; }
  /// Host memory is imported (VK_EXT_external_memory_host enabled and not forced off).
  bool host_import() const { return host_import_; }
  VkDeviceSize import_alignment() const { return physical_.import_alignment; }
  bool timestamps() const { return timestamps_; }
  /// The optional features enabled on the device: those fp16 precision needs, when it was asked for and the
  /// device offers them; pipeline statistics likewise (VulkanOptions::pipeline_statistics).
  const DeviceFeatures& features() const { return features_; }
  /// Validation messages so far, and the last one's text (empty without validation).
  std::uint64_t validation_messages() const { return sink_ ? sink_->count() : 0; }
  std::string last_validation_message() const;

  /// Index of a memory type allowed by `type_bits` that has all `required` flags, preferring one that also has
  /// `preferred`; -1 when there is none.
  int find_memory_type(std::uint32_t type_bits, VkMemoryPropertyFlags required,
                       VkMemoryPropertyFlags preferred = 0) const;
  VkMemoryPropertyFlags memory_type_flags(int type) const { return memory_.memoryTypes[type].propertyFlags; }
  /// Size of the heap that memory type `type` allocates from.
  VkDeviceSize heap_size(int type) const { return memory_.memoryHeaps[memory_.memoryTypes[type].heapIndex].size; }

 private:
  void create_device(bool want_host_import, const DeviceFeatures& features);

  std::unique_ptr<ValidationSink> sink_;  // declared first: the instance's messenger points at it
  std::unique_ptr<Instance> instance_;
  PhysicalDevice physical_;
  VkPhysicalDeviceMemoryProperties memory_{};
  VkDevice device_ = VK_NULL_HANDLE;
  DeviceFunctions vk_;
  VkQueue queue_ = VK_NULL_HANDLE;
  std::uint32_t queue_family_ = 0;
  bool host_import_ = false;
  bool timestamps_ = false;
  DeviceFeatures features_;
};

}  // namespace corgy::vulkan
