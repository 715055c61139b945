#include "corgy/backends/vulkan/device_selection.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <memory>

#include "corgy/error.h"

namespace corgy::vulkan {

namespace {

std::string type_name(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    default: return "other";
  }
}

// Lower is preferred: a CPU implementation (lavapipe) only when nothing else exists.
int preference(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 4;
    default: return 3;
  }
}

std::string version_text(std::uint32_t version) {
  return fmt::format("{}.{}.{}", VK_API_VERSION_MAJOR(version), VK_API_VERSION_MINOR(version),
                     VK_API_VERSION_PATCH(version));
}

bool has_extension(const Instance& instance, VkPhysicalDevice device, const char* name) {
  std::uint32_t count = 0;
  check(instance.vk().vkEnumerateDeviceExtensionProperties(device, nullptr, &count, nullptr),
        "vkEnumerateDeviceExtensionProperties");
  std::vector<VkExtensionProperties> extensions(count);
  check(instance.vk().vkEnumerateDeviceExtensionProperties(device, nullptr, &count, extensions.data()),
        "vkEnumerateDeviceExtensionProperties");
  return std::any_of(extensions.begin(), extensions.end(),
                     [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

PhysicalDevice describe(const Instance& instance, VkPhysicalDevice handle, int index) {
  PhysicalDevice device;
  device.handle = handle;
  instance.vk().vkGetPhysicalDeviceProperties(handle, &device.properties);
  const VkPhysicalDeviceProperties& p = device.properties;
  device.info.index = index;
  device.info.name = p.deviceName;
  device.info.type = type_name(p.deviceType);
  device.info.api_version = version_text(p.apiVersion);
  device.info.host_import = has_extension(instance, handle, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);

  VkPhysicalDeviceExternalMemoryHostPropertiesEXT import{};
  import.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT;
  VkPhysicalDeviceDriverProperties driver{};
  driver.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
  VkPhysicalDeviceMaintenance3Properties maintenance3{};
  maintenance3.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES;
  VkPhysicalDeviceProperties2 properties2{};
  properties2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  properties2.pNext = &maintenance3;
  void** next = &maintenance3.pNext;
  if (device.info.host_import) {
    *next = &import;
    next = &import.pNext;
  }
  const bool driver_properties = p.apiVersion >= VK_API_VERSION_1_2;
  if (driver_properties) *next = &driver;
  instance.vk().vkGetPhysicalDeviceProperties2(handle, &properties2);
  device.import_alignment = import.minImportedHostPointerAlignment;
  device.max_allocation = maintenance3.maxMemoryAllocationSize;
  device.info.driver = driver_properties ? fmt::format("{} {}", driver.driverName, driver.driverInfo)
                                         : fmt::format("driver version {:#x}", p.driverVersion);
  return device;
}

std::string lowercase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string device_list(const std::vector<PhysicalDevice>& devices) {
  std::string text;
  for (const PhysicalDevice& d : devices) {
    text += fmt::format("{}{}: {} ({})", text.empty() ? "" : ", ", d.info.index, d.info.name, d.info.type);
  }
  return text;
}

}  // namespace

std::vector<PhysicalDevice> list_physical_devices(const Instance& instance) {
  std::uint32_t count = 0;
  const VkResult result = instance.vk().vkEnumeratePhysicalDevices(instance.handle(), &count, nullptr);
  // The loader answers VK_ERROR_INITIALIZATION_FAILED when it finds no driver at all.
  if (result == VK_ERROR_INITIALIZATION_FAILED) return {};
  check(result, "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> handles(count);
  check(instance.vk().vkEnumeratePhysicalDevices(instance.handle(), &count, handles.data()),
        "vkEnumeratePhysicalDevices");
  std::vector<PhysicalDevice> devices;
  for (std::uint32_t i = 0; i < count; ++i) devices.push_back(describe(instance, handles[i], static_cast<int>(i)));
  return devices;
}

const PhysicalDevice& select_device(const std::vector<PhysicalDevice>& devices, const std::string& wanted) {
  if (devices.empty()) throw NoDriverError();
  if (wanted.empty()) {
    return *std::min_element(devices.begin(), devices.end(), [](const PhysicalDevice& a, const PhysicalDevice& b) {
      return preference(a.properties.deviceType) < preference(b.properties.deviceType);
    });
  }
  int index = -1;
  const auto [end, status] = std::from_chars(wanted.data(), wanted.data() + wanted.size(), index);
  if (status == std::errc() && end == wanted.data() + wanted.size()) {
    if (index >= 0 && index < static_cast<int>(devices.size())) return devices[static_cast<std::size_t>(index)];
    throw Error(fmt::format("Vulkan: no device {}; devices: {}", wanted, device_list(devices)));
  }
  for (const PhysicalDevice& device : devices) {
    if (lowercase(device.info.name).find(lowercase(wanted)) != std::string::npos) return device;
  }
  throw Error(fmt::format("Vulkan: no device name contains '{}'; devices: {}", wanted, device_list(devices)));
}

}  // namespace corgy::vulkan

namespace corgy {

std::vector<VulkanDeviceInfo> vulkan_devices() {
  std::unique_ptr<vulkan::Instance> instance;
  try {
    instance = std::make_unique<vulkan::Instance>(VulkanOptions{}.loader, nullptr);
  } catch (const vulkan::NoDriverError&) {
    return {};
  }
  std::vector<VulkanDeviceInfo> infos;
  for (const vulkan::PhysicalDevice& device : vulkan::list_physical_devices(*instance)) infos.push_back(device.info);
  return infos;
}

}  // namespace corgy
