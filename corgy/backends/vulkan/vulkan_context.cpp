#include "corgy/backends/vulkan/vulkan_context.h"

#include <fmt/format.h>

#include <vector>

#include "corgy/error.h"

namespace corgy::vulkan {

Context::Context(const VulkanOptions& options) {
  if (options.validation) {
    sink_ = std::make_unique<ValidationSink>();
    sink_->callback = options.on_validation_message;
  }
  instance_ = std::make_unique<Instance>(options.loader, sink_.get());
  const std::vector<PhysicalDevice> devices = list_physical_devices(*instance_);
  physical_ = select_device(devices, options.device);
  if (physical_.properties.apiVersion < VK_API_VERSION_1_1) {
    throw Error(
        fmt::format("Vulkan: {} supports Vulkan {}; corgy needs 1.1", physical_.info.name, physical_.info.api_version));
  }
  instance_->vk().vkGetPhysicalDeviceMemoryProperties(physical_.handle, &memory_);
  DeviceFeatures wanted;
  if (options.precision == Precision::fp16) {
    const DeviceFeatures offered = query_device_features(*instance_, physical_);
    wanted.storage_16bit = offered.storage_16bit;
    wanted.cooperative_matrix = offered.cooperative_matrix;
    wanted.subgroup_size = offered.subgroup_size;
  }
  wanted.pipeline_statistics = options.pipeline_statistics && offers_pipeline_statistics(*instance_, physical_);
  create_device(physical_.info.host_import && !options.force_staging, wanted);
}

void Context::create_device(bool want_host_import, const DeviceFeatures& features) {
  const InstanceFunctions& ivk = instance_->vk();
  std::uint32_t family_count = 0;
  ivk.vkGetPhysicalDeviceQueueFamilyProperties(physical_.handle, &family_count, nullptr);
  std::vector<VkQueueFamilyProperties> families(family_count);
  ivk.vkGetPhysicalDeviceQueueFamilyProperties(physical_.handle, &family_count, families.data());
  int chosen = -1;
  for (std::uint32_t i = 0; i < family_count; ++i) {
    if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    // A family that can write timestamps wins: the backend reports GPU time from them.
    if (chosen < 0 || (families[i].timestampValidBits > 0 && families[chosen].timestampValidBits == 0)) {
      chosen = static_cast<int>(i);
    }
  }
  if (chosen < 0) throw Error(fmt::format("Vulkan: {} has no compute queue", physical_.info.name));
  queue_family_ = static_cast<std::uint32_t>(chosen);
  timestamps_ = families[queue_family_].timestampValidBits > 0 && physical_.properties.limits.timestampPeriod > 0;

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue{};
  queue.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  queue.queueFamilyIndex = queue_family_;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  const FeatureChain chain(*instance_, physical_, features);
  std::vector<const char*> extensions = chain.extensions();
  if (want_host_import) extensions.push_back(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
  VkDeviceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  info.pNext = chain.chain();
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue;
  info.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  check(ivk.vkCreateDevice(physical_.handle, &info, nullptr, &device_), "vkCreateDevice");
  try {
    vk_.load(ivk, device_);
  } catch (...) {
    if (vk_.vkDestroyDevice) vk_.vkDestroyDevice(device_, nullptr);
    throw;
  }
  host_import_ = want_host_import && vk_.vkGetMemoryHostPointerPropertiesEXT != nullptr;
  features_ = features;
  vk_.vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
}

Context::~Context() {
  vk_.vkDeviceWaitIdle(device_);
  vk_.vkDestroyDevice(device_, nullptr);
}

std::string Context::last_validation_message() const { return sink_ ? sink_->last_message() : std::string(); }

int Context::find_memory_type(std::uint32_t type_bits, VkMemoryPropertyFlags required,
                              VkMemoryPropertyFlags preferred) const {
  int fallback = -1;
  for (std::uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
    if (!(type_bits & (1u << i))) continue;
    const VkMemoryPropertyFlags flags = memory_.memoryTypes[i].propertyFlags;
    if ((flags & required) != required) continue;
    if ((flags & preferred) == preferred) return static_cast<int>(i);
    if (fallback < 0) fallback = static_cast<int>(i);
  }
  return fallback;
}

}  // namespace corgy::vulkan
