#include "corgy/backends/vulkan/vulkan_instance.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "corgy/error.h"

namespace corgy::vulkan {

namespace {

constexpr const char* validation_layer = "VK_LAYER_KHRONOS_validation";

bool layer_installed(const Loader& loader, const char* name) {
  std::uint32_t count = 0;
  check(loader.vkEnumerateInstanceLayerProperties(&count, nullptr), "vkEnumerateInstanceLayerProperties");
  std::vector<VkLayerProperties> layers(count);
  check(loader.vkEnumerateInstanceLayerProperties(&count, layers.data()), "vkEnumerateInstanceLayerProperties");
  for (const VkLayerProperties& layer : layers) {
    if (std::strcmp(layer.layerName, name) == 0) return true;
  }
  return false;
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                VkDebugUtilsMessageTypeFlagsEXT types,
                                                const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  if (!is_validation_finding(severity, types)) return VK_FALSE;
  auto* sink = static_cast<ValidationSink*>(user);
  const std::string text =
      fmt::format("{}: {}", severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning",
                  data->pMessage ? data->pMessage : "(no text)");
  {
    const std::lock_guard lock(sink->mutex);
    ++sink->messages;
    sink->last = text;
  }
  const std::lock_guard serial(sink->callback_mutex);
  if (sink->callback) {
    sink->callback(text);
  } else {
    std::fprintf(stderr, "corgy vulkan validation %s\n", text.c_str());
  }
  return VK_FALSE;  // never abort the call: the backend reports the message at end_forward()
}

VkDebugUtilsMessengerCreateInfoEXT messenger_info(ValidationSink* sink) {
  VkDebugUtilsMessengerCreateInfoEXT info{};
  info.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
  info.messageSeverity =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  info.pfnUserCallback = on_debug_message;
  info.pUserData = sink;
  return info;
}

// Every instance makes the loader load the drivers, and destroying it unloads them. NVIDIA's driver uses static
// TLS, which glibc does not reclaim on unload, so after some dozens of backends in one process the next load
// fails ("cannot allocate memory in static TLS block"). One instance that lives as long as the process keeps the
// drivers loaded. It is never destroyed: at exit the drivers may already be gone.
void keep_drivers_loaded(const std::shared_ptr<Loader>& loader) {
  static std::mutex mutex;
  static bool anchored = false;
  const std::lock_guard lock(mutex);
  if (anchored) return;
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  if (loader->vkCreateInstance(&info, nullptr, &instance) != VK_SUCCESS) return;
  // Kept, like the instance, to the end: the loader library stays open too.
  static const auto* const kept_loader = new std::shared_ptr<Loader>(loader);
  (void)kept_loader;
  anchored = true;
}

}  // namespace

bool is_validation_finding(VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT types) {
  // The validation layer reports its checks of the application's calls as "validation" (or "performance")
  // messages; "general" is what the loader and the layers say about themselves. An error of any type still counts.
  constexpr VkDebugUtilsMessageTypeFlagsEXT about_the_calls =
      VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) return true;
  return severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT && (types & about_the_calls) != 0;
}

NoDriverError::NoDriverError()
    : Error(
          "Vulkan: no Vulkan device found: the loader found no driver (install one; Debian's mesa-vulkan-drivers "
          "has lavapipe, a CPU implementation)") {}

Instance::Instance(const std::string& loader_library, ValidationSink* validation)
    : loader_(std::make_shared<Loader>(loader_library)) {
  std::uint32_t version = VK_API_VERSION_1_0;
  if (loader_->vkEnumerateInstanceVersion) loader_->vkEnumerateInstanceVersion(&version);
  if (version < VK_API_VERSION_1_1) {
    throw Error(fmt::format("Vulkan: the loader supports Vulkan {}.{}; corgy needs 1.1", VK_API_VERSION_MAJOR(version),
                            VK_API_VERSION_MINOR(version)));
  }
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "corgy";
  app.pEngineName = "corgy";
  app.apiVersion = VK_API_VERSION_1_1;

  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &app;
  const char* layers[] = {validation_layer};
  const char* extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
  // Chained into the create info too, so that messages about vkCreateInstance itself are caught.
  VkDebugUtilsMessengerCreateInfoEXT debug = messenger_info(validation);
  if (validation) {
    if (!layer_installed(*loader_, validation_layer)) {
      throw Error(
          fmt::format("Vulkan: validation was asked for but {} is not installed (Debian: "
                      "vulkan-validationlayers)",
                      validation_layer));
    }
    info.enabledLayerCount = 1;
    info.ppEnabledLayerNames = layers;
    info.enabledExtensionCount = 1;
    info.ppEnabledExtensionNames = extensions;
    info.pNext = &debug;
  }
  const VkResult created = loader_->vkCreateInstance(&info, nullptr, &instance_);
  if (created == VK_ERROR_INCOMPATIBLE_DRIVER) throw NoDriverError();
  check(created, "vkCreateInstance");
  keep_drivers_loaded(loader_);
  try {
    vk_.load(*loader_, instance_);
    if (validation) create_messenger(validation);
  } catch (...) {
    vk_.vkDestroyInstance ? vk_.vkDestroyInstance(instance_, nullptr) : void();
    throw;
  }
}

void Instance::create_messenger(ValidationSink* validation) {
  if (!vk_.vkCreateDebugUtilsMessengerEXT || !vk_.vkDestroyDebugUtilsMessengerEXT) {
    throw Error("Vulkan: validation was asked for but VK_EXT_debug_utils is not available");
  }
  const VkDebugUtilsMessengerCreateInfoEXT info = messenger_info(validation);
  check(vk_.vkCreateDebugUtilsMessengerEXT(instance_, &info, nullptr, &messenger_), "vkCreateDebugUtilsMessengerEXT");
}

Instance::~Instance() {
  if (messenger_ != VK_NULL_HANDLE) vk_.vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  vk_.vkDestroyInstance(instance_, nullptr);
}

}  // namespace corgy::vulkan
