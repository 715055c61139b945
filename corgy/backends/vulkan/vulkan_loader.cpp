#include "corgy/backends/vulkan/vulkan_loader.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include "corgy/error.h"

namespace corgy::vulkan {

namespace {

template <class Pointer>
void require(Pointer pointer, const char* name) {
  if (pointer == nullptr) throw Error(fmt::format("Vulkan: the loader or driver does not provide {}", name));
}

}  // namespace

Loader::Loader(const std::string& library) {
  handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* reason = dlerror();
    throw Error(
        fmt::format("Vulkan: cannot open the Vulkan loader '{}' ({}); install it (Debian: libvulkan1) "
                    "and a Vulkan driver, or use a CPU backend",
                    library, reason ? reason : "unknown reason"));
  }
  vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(handle_, "vkGetInstanceProcAddr"));
  if (vkGetInstanceProcAddr == nullptr) {
    dlclose(handle_);
    throw Error(fmt::format("Vulkan: '{}' is not a Vulkan loader (no vkGetInstanceProcAddr)", library));
  }
#define CORGY_VK_LOAD_GLOBAL(name) name = reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(nullptr, #name));
  CORGY_VK_GLOBAL_FUNCTIONS(CORGY_VK_LOAD_GLOBAL)
#undef CORGY_VK_LOAD_GLOBAL
  require(vkCreateInstance, "vkCreateInstance");
}

Loader::~Loader() { dlclose(handle_); }

void InstanceFunctions::load(const Loader& loader, VkInstance instance) {
#define CORGY_VK_LOAD_INSTANCE(name)                                                  \
  name = reinterpret_cast<PFN_##name>(loader.vkGetInstanceProcAddr(instance, #name)); \
  require(name, #name);
  CORGY_VK_INSTANCE_FUNCTIONS(CORGY_VK_LOAD_INSTANCE)
#undef CORGY_VK_LOAD_INSTANCE
#define CORGY_VK_LOAD_OPTIONAL(name) name = reinterpret_cast<PFN_##name>(loader.vkGetInstanceProcAddr(instance, #name));
  CORGY_VK_DEBUG_FUNCTIONS(CORGY_VK_LOAD_OPTIONAL)
  CORGY_VK_COOPERATIVE_MATRIX_FUNCTIONS(CORGY_VK_LOAD_OPTIONAL)
#undef CORGY_VK_LOAD_OPTIONAL
}

void DeviceFunctions::load(const InstanceFunctions& instance, VkDevice device) {
#define CORGY_VK_LOAD_DEVICE(name)                                                  \
  name = reinterpret_cast<PFN_##name>(instance.vkGetDeviceProcAddr(device, #name)); \
  require(name, #name);
  CORGY_VK_DEVICE_FUNCTIONS(CORGY_VK_LOAD_DEVICE)
#undef CORGY_VK_LOAD_DEVICE
#define CORGY_VK_LOAD_OPTIONAL(name) name = reinterpret_cast<PFN_##name>(instance.vkGetDeviceProcAddr(device, #name));
  CORGY_VK_HOST_IMPORT_FUNCTIONS(CORGY_VK_LOAD_OPTIONAL)
  CORGY_VK_PIPELINE_STATISTICS_FUNCTIONS(CORGY_VK_LOAD_OPTIONAL)
#undef CORGY_VK_LOAD_OPTIONAL
}

const char* result_name(VkResult result) {
  switch (result) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_INVALID_EXTERNAL_HANDLE: return "VK_ERROR_INVALID_EXTERNAL_HANDLE";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VkResult error";
  }
}

void check(VkResult result, const char* what) {
  if (result != VK_SUCCESS) {
    throw Error(fmt::format("Vulkan: {} failed: {} ({})", what, result_name(result), static_cast<int>(result)));
  }
}

}  // namespace corgy::vulkan
