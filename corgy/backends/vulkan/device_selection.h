// Listing the physical devices and picking one by preference, index or name.
#pragma once

#include <string>
#include <vector>

#include "corgy/backends/vulkan/vulkan_backend.h"
#include "corgy/backends/vulkan/vulkan_instance.h"

namespace corgy::vulkan {

/// A physical device and what the backend needs to know about it.
struct PhysicalDevice {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  VulkanDeviceInfo info;
  VkPhysicalDeviceProperties properties{};
  /// minImportedHostPointerAlignment when info.host_import is set.
  VkDeviceSize import_alignment = 0;
  /// maxMemoryAllocationSize (Vulkan 1.1): the largest single allocation the driver promises to try.
  VkDeviceSize max_allocation = 0;
};

std::vector<PhysicalDevice> list_physical_devices(const Instance& instance);

/// The device `wanted` names: "" for the best (discrete, integrated, virtual, other, CPU), a number for an index,
/// other text for the first whose name contains it, case-insensitive. Throws corgy::Error listing the devices
/// when there is none or nothing matches.
const PhysicalDevice& select_device(const std::vector<PhysicalDevice>& devices, const std::string& wanted);

}  // namespace corgy::vulkan
