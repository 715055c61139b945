// A stand-in Vulkan loader for tests/vulkan_fault_test.cpp: VulkanOptions::loader opens it instead of
// libvulkan.so.1. It passes every call through to the real loader, except that a test can make it fail the way a
// broken driver or a failing GPU does: no driver, no device, device creation failing, out of device memory, a lost
// device. The test reaches corgy_vulkan_fault() through dlopen/dlsym of this same library.
#define VK_NO_PROTOTYPES
#include <dlfcn.h>
#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace {

// Kept in step with FaultKind in tests/vulkan_fault_test.cpp.
enum Fault : int {
  none = 0,
  no_driver = 1,              // vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER
  no_device = 2,              // vkEnumeratePhysicalDevices: zero devices
  device_creation_fails = 3,  // vkCreateDevice: VK_ERROR_INITIALIZATION_FAILED
  out_of_device_memory = 4,   // vkAllocateMemory of at least `parameter` bytes: VK_ERROR_OUT_OF_DEVICE_MEMORY
  device_lost_at_submit = 5,  // vkQueueSubmit: VK_ERROR_DEVICE_LOST
  device_lost_at_wait = 6,    // vkWaitForFences: VK_ERROR_DEVICE_LOST (the work was submitted)
};

std::atomic<int> active_fault{none};
std::atomic<long long> fault_parameter{0};

// The real loader's exported entry points: they dispatch on the handle, so they serve every instance and device.
void* real_loader() {
  static void* const library = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) std::abort();
  return library;
}

template <class Function>
Function real(const char* name) {
  void* symbol = dlsym(real_loader(), name);
  if (symbol == nullptr) std::abort();
  return reinterpret_cast<Function>(symbol);
}

VKAPI_ATTR VkResult VKAPI_CALL create_instance(const VkInstanceCreateInfo* info, const VkAllocationCallbacks* allocator,
                                               VkInstance* instance) {
  if (active_fault == no_driver) return VK_ERROR_INCOMPATIBLE_DRIVER;
  static const auto create = real<PFN_vkCreateInstance>("vkCreateInstance");
  return create(info, allocator, instance);
}

VKAPI_ATTR VkResult VKAPI_CALL enumerate_physical_devices(VkInstance instance, std::uint32_t* count,
                                                          VkPhysicalDevice* devices) {
  if (active_fault == no_device) {
    *count = 0;
    return VK_SUCCESS;
  }
  static const auto enumerate = real<PFN_vkEnumeratePhysicalDevices>("vkEnumeratePhysicalDevices");
  return enumerate(instance, count, devices);
}

VKAPI_ATTR VkResult VKAPI_CALL create_device(VkPhysicalDevice physical, const VkDeviceCreateInfo* info,
                                             const VkAllocationCallbacks* allocator, VkDevice* device) {
  if (active_fault == device_creation_fails) return VK_ERROR_INITIALIZATION_FAILED;
  static const auto create = real<PFN_vkCreateDevice>("vkCreateDevice");
  return create(physical, info, allocator, device);
}

VKAPI_ATTR VkResult VKAPI_CALL allocate_memory(VkDevice device, const VkMemoryAllocateInfo* info,
                                               const VkAllocationCallbacks* allocator, VkDeviceMemory* memory) {
  if (active_fault == out_of_device_memory && info->allocationSize >= static_cast<VkDeviceSize>(fault_parameter)) {
    return VK_ERROR_OUT_OF_DEVICE_MEMORY;
  }
  static const auto allocate = real<PFN_vkAllocateMemory>("vkAllocateMemory");
  return allocate(device, info, allocator, memory);
}

VKAPI_ATTR VkResult VKAPI_CALL queue_submit(VkQueue queue, std::uint32_t count, const VkSubmitInfo* submits,
                                            VkFence fence) {
  if (active_fault == device_lost_at_submit) return VK_ERROR_DEVICE_LOST;
  static const auto submit = real<PFN_vkQueueSubmit>("vkQueueSubmit");
  return submit(queue, count, submits, fence);
}

VKAPI_ATTR VkResult VKAPI_CALL wait_for_fences(VkDevice device, std::uint32_t count, const VkFence* fences,
                                               VkBool32 wait_all, std::uint64_t timeout) {
  static const auto wait = real<PFN_vkWaitForFences>("vkWaitForFences");
  const VkResult result = wait(device, count, fences, wait_all, timeout);
  return active_fault == device_lost_at_wait ? VK_ERROR_DEVICE_LOST : result;
}

// The functions above, by name, or null for one that passes straight through.
PFN_vkVoidFunction intercepted(const char* name) {
  struct Entry {
    const char* name;
    PFN_vkVoidFunction function;
  };
  static const Entry entries[] = {
      {"vkCreateInstance", reinterpret_cast<PFN_vkVoidFunction>(create_instance)},
      {"vkEnumeratePhysicalDevices", reinterpret_cast<PFN_vkVoidFunction>(enumerate_physical_devices)},
      {"vkCreateDevice", reinterpret_cast<PFN_vkVoidFunction>(create_device)},
      {"vkAllocateMemory", reinterpret_cast<PFN_vkVoidFunction>(allocate_memory)},
      {"vkQueueSubmit", reinterpret_cast<PFN_vkVoidFunction>(queue_submit)},
      {"vkWaitForFences", reinterpret_cast<PFN_vkVoidFunction>(wait_for_fences)},
  };
  for (const Entry& entry : entries) {
    if (std::strcmp(entry.name, name) == 0) return entry.function;
  }
  return nullptr;
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL get_device_proc_addr(VkDevice device, const char* name) {
  if (PFN_vkVoidFunction function = intercepted(name)) return function;
  static const auto get = real<PFN_vkGetDeviceProcAddr>("vkGetDeviceProcAddr");
  return get(device, name);
}

}  // namespace

extern "C" {

/// Makes the calls above fail as `fault` says from now on (0 = pass everything through again).
__attribute__((visibility("default"))) void corgy_vulkan_fault(int fault, long long parameter) {
  fault_parameter = parameter;
  active_fault = fault;
}

__attribute__((visibility("default"))) VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
vkGetInstanceProcAddr(VkInstance instance, const char* name) {
  if (std::strcmp(name, "vkGetDeviceProcAddr") == 0) return reinterpret_cast<PFN_vkVoidFunction>(get_device_proc_addr);
  if (PFN_vkVoidFunction function = intercepted(name)) return function;
  static const auto get = real<PFN_vkGetInstanceProcAddr>("vkGetInstanceProcAddr");
  return get(instance, name);
}

}  // extern "C"
