#include "corgy/backends/vulkan/device_features.h"

#include <algorithm>
#include <cstring>

namespace corgy::vulkan {

namespace {

std::vector<std::string> device_extensions(const Instance& instance, VkPhysicalDevice device) {
  std::uint32_t count = 0;
  check(instance.vk().vkEnumerateDeviceExtensionProperties(device, nullptr, &count, nullptr),
        "vkEnumerateDeviceExtensionProperties");
  std::vector<VkExtensionProperties> properties(count);
  check(instance.vk().vkEnumerateDeviceExtensionProperties(device, nullptr, &count, properties.data()),
        "vkEnumerateDeviceExtensionProperties");
  std::vector<std::string> names;
  for (const VkExtensionProperties& p : properties) names.emplace_back(p.extensionName);
  return names;
}

bool contains(const std::vector<std::string>& names, const char* name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// conv2d_coopmat.comp multiplies 16x16 by 16x16 fp16 matrices into a 16x16 fp32 accumulator per subgroup.
bool offers_coopmat_shape(const Instance& instance, VkPhysicalDevice device) {
  const auto properties_of = instance.vk().vkGetPhysicalDeviceCooperativeMatrixPropertiesNV;
  if (properties_of == nullptr) return false;
  std::uint32_t count = 0;
  if (properties_of(device, &count, nullptr) != VK_SUCCESS) return false;
  std::vector<VkCooperativeMatrixPropertiesNV> shapes(count);
  for (VkCooperativeMatrixPropertiesNV& shape : shapes)
    shape.sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
  if (properties_of(device, &count, shapes.data()) != VK_SUCCESS) return false;
  return std::any_of(shapes.begin(), shapes.end(), [](const VkCooperativeMatrixPropertiesNV& s) {
    return s.MSize == 16 && s.NSize == 16 && s.KSize == 16 && s.AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
           s.BType == VK_COMPONENT_TYPE_FLOAT16_NV && s.CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
           s.DType == VK_COMPONENT_TYPE_FLOAT32_NV && s.scope == VK_SCOPE_SUBGROUP_NV;
  });
}

}  // namespace

DeviceFeatures query_device_features(const Instance& instance, const PhysicalDevice& device) {
  const std::vector<std::string> extensions = device_extensions(instance, device.handle);
  const bool has_float16 = contains(extensions, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  const bool has_memory_model = contains(extensions, VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME);
  const bool has_coopmat = contains(extensions, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);

  VkPhysicalDevice16BitStorageFeatures storage{};
  storage.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
  VkPhysicalDeviceShaderFloat16Int8FeaturesKHR float16{};
  float16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES_KHR;
  VkPhysicalDeviceVulkanMemoryModelFeaturesKHR memory_model{};
  memory_model.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES_KHR;
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coopmat{};
  coopmat.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
  VkPhysicalDeviceFeatures2 features{};
  features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  void** next = &features.pNext;
  *next = &storage;
  next = &storage.pNext;
  // Structures of extensions the device lacks stay out of the chain.
  if (has_float16) {
    *next = &float16;
    next = &float16.pNext;
  }
  if (has_memory_model) {
    *next = &memory_model;
    next = &memory_model.pNext;
  }
  if (has_coopmat) *next = &coopmat;
  instance.vk().vkGetPhysicalDeviceFeatures2(device.handle, &features);

  VkPhysicalDeviceSubgroupProperties subgroup{};
  subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  VkPhysicalDeviceProperties2 properties{};
  properties.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  properties.pNext = &subgroup;
  instance.vk().vkGetPhysicalDeviceProperties2(device.handle, &properties);

  DeviceFeatures offered;
  offered.storage_16bit = storage.storageBuffer16BitAccess == VK_TRUE;
  offered.subgroup_size = subgroup.subgroupSize;
  offered.cooperative_matrix = offered.storage_16bit && has_float16 && float16.shaderFloat16 == VK_TRUE &&
                               has_memory_model && memory_model.vulkanMemoryModel == VK_TRUE && has_coopmat &&
                               coopmat.cooperativeMatrix == VK_TRUE && subgroup.subgroupSize == 32 &&
                               (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                               offers_coopmat_shape(instance, device.handle);
  return offered;
}

bool offers_pipeline_statistics(const Instance& instance, const PhysicalDevice& device) {
  if (!contains(device_extensions(instance, device.handle), VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) {
    return false;
  }
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executable_properties{};
  executable_properties.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR;
  VkPhysicalDeviceFeatures2 features{};
  features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  features.pNext = &executable_properties;
  instance.vk().vkGetPhysicalDeviceFeatures2(device.handle, &features);
  return executable_properties.pipelineExecutableInfo == VK_TRUE;
}

FeatureChain::FeatureChain(const Instance& instance, const PhysicalDevice& device, const DeviceFeatures& wanted) {
  (void)instance;
  (void)device;
  const void* head = nullptr;
  const auto link = [&head](auto& structure, VkStructureType type) {
    structure.sType = type;
    structure.pNext = const_cast<void*>(head);
    head = &structure;
  };
  if (wanted.storage_16bit) {
    storage_.storageBuffer16BitAccess = VK_TRUE;
    link(storage_, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES);
  }
  if (wanted.cooperative_matrix) {
    float16_.shaderFloat16 = VK_TRUE;
    link(float16_, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES_KHR);
    memory_model_.vulkanMemoryModel = VK_TRUE;
    link(memory_model_, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES_KHR);
    cooperative_matrix_.cooperativeMatrix = VK_TRUE;
    link(cooperative_matrix_, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV);
    extensions_ = {VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME, VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME,
                   VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME};
  }
  if (wanted.pipeline_statistics) {
    executable_properties_.pipelineExecutableInfo = VK_TRUE;
    link(executable_properties_, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR);
    extensions_.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  }
  head_ = head;
}

}  // namespace corgy::vulkan
