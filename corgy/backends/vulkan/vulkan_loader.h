// The Vulkan loader, opened at run time (dlopen), and the entry points corgy calls, resolved through it.
// Opening it at run time lets a machine without libvulkan.so.1 load corgy and use the CPU backends, and lets
// the Vulkan backend say clearly that the loader is missing.
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>

namespace corgy::vulkan {

// Entry points that need no instance.
#define CORGY_VK_GLOBAL_FUNCTIONS(X)    \
  X(vkCreateInstance)                   \
  X(vkEnumerateInstanceLayerProperties) \
  X(vkEnumerateInstanceVersion)

#define CORGY_VK_INSTANCE_FUNCTIONS(X)        \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceFeatures2)             \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkEnumerateDeviceExtensionProperties)     \
  X(vkCreateDevice)                           \
  X(vkGetDeviceProcAddr)

// Present only when VK_EXT_debug_utils is enabled (validation); may stay null.
#define CORGY_VK_DEBUG_FUNCTIONS(X) \
  X(vkCreateDebugUtilsMessengerEXT) \
  X(vkDestroyDebugUtilsMessengerEXT)

// Present only where a device offers VK_NV_cooperative_matrix; may stay null.
#define CORGY_VK_COOPERATIVE_MATRIX_FUNCTIONS(X) X(vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)

#define CORGY_VK_DEVICE_FUNCTIONS(X) \
  X(vkDestroyDevice)                 \
  X(vkGetDeviceQueue)                \
  X(vkDeviceWaitIdle)                \
  X(vkCreateBuffer)                  \
  X(vkDestroyBuffer)                 \
  X(vkGetBufferMemoryRequirements)   \
  X(vkAllocateMemory)                \
  X(vkFreeMemory)                    \
  X(vkBindBufferMemory)              \
  X(vkMapMemory)                     \
  X(vkCreateShaderModule)            \
  X(vkDestroyShaderModule)           \
  X(vkCreateDescriptorSetLayout)     \
  X(vkDestroyDescriptorSetLayout)    \
  X(vkCreatePipelineLayout)          \
  X(vkDestroyPipelineLayout)         \
  X(vkCreateComputePipelines)        \
  X(vkDestroyPipeline)               \
  X(vkCreatePipelineCache)           \
  X(vkDestroyPipelineCache)          \
  X(vkGetPipelineCacheData)          \
  X(vkCreateDescriptorPool)          \
  X(vkDestroyDescriptorPool)         \
  X(vkAllocateDescriptorSets)        \
  X(vkUpdateDescriptorSets)          \
  X(vkCreateCommandPool)             \
  X(vkDestroyCommandPool)            \
  X(vkAllocateCommandBuffers)        \
  X(vkResetCommandBuffer)            \
  X(vkBeginCommandBuffer)            \
  X(vkEndCommandBuffer)              \
  X(vkCmdBindPipeline)               \
  X(vkCmdBindDescriptorSets)         \
  X(vkCmdPushConstants)              \
  X(vkCmdDispatch)                   \
  X(vkCmdPipelineBarrier)            \
  X(vkCmdCopyBuffer)                 \
  X(vkCmdWriteTimestamp)             \
  X(vkCmdResetQueryPool)             \
  X(vkCreateQueryPool)               \
  X(vkDestroyQueryPool)              \
  X(vkGetQueryPoolResults)           \
  X(vkCreateFence)                   \
  X(vkDestroyFence)                  \
  X(vkResetFences)                   \
  X(vkWaitForFences)                 \
  X(vkGetFenceStatus)                \
  X(vkQueueSubmit)

// Present only when VK_EXT_external_memory_host is enabled; may stay null.
#define CORGY_VK_HOST_IMPORT_FUNCTIONS(X) X(vkGetMemoryHostPointerPropertiesEXT)

// Present only when VK_KHR_pipeline_executable_properties is enabled (VulkanOptions::pipeline_statistics).
#define CORGY_VK_PIPELINE_STATISTICS_FUNCTIONS(X) \
  X(vkGetPipelineExecutablePropertiesKHR)         \
  X(vkGetPipelineExecutableStatisticsKHR)

#define CORGY_VK_DECLARE_POINTER(name) PFN_##name name = nullptr;

/// The loader library and its global entry points. Throws corgy::Error when the library cannot be opened.
class Loader {
 public:
  explicit Loader(const std::string& library);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  CORGY_VK_GLOBAL_FUNCTIONS(CORGY_VK_DECLARE_POINTER)

 private:
  void* handle_ = nullptr;
};

/// Entry points of one instance (debug ones null unless VK_EXT_debug_utils is enabled).
struct InstanceFunctions {
  CORGY_VK_INSTANCE_FUNCTIONS(CORGY_VK_DECLARE_POINTER)
  CORGY_VK_DEBUG_FUNCTIONS(CORGY_VK_DECLARE_POINTER)
  CORGY_VK_COOPERATIVE_MATRIX_FUNCTIONS(CORGY_VK_DECLARE_POINTER)

  void load(const Loader& loader, VkInstance instance);
};

/// Entry points of one device (host-import ones null unless VK_EXT_external_memory_host is enabled).
struct DeviceFunctions {
  CORGY_VK_DEVICE_FUNCTIONS(CORGY_VK_DECLARE_POINTER)
  CORGY_VK_HOST_IMPORT_FUNCTIONS(CORGY_VK_DECLARE_POINTER)
  CORGY_VK_PIPELINE_STATISTICS_FUNCTIONS(CORGY_VK_DECLARE_POINTER)

  void load(const InstanceFunctions& instance, VkDevice device);
};

#undef CORGY_VK_DECLARE_POINTER

/// Throws corgy::Error "Vulkan: <what> failed: <result name>" unless result is VK_SUCCESS.
void check(VkResult result, const char* what);
/// "VK_ERROR_OUT_OF_DEVICE_MEMORY", ...
const char* result_name(VkResult result);

}  // namespace corgy::vulkan
