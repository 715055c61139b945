// The Vulkan instance: the loader, the instance handle, and (when asked) the validation layer with a messenger.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "corgy/backends/vulkan/vulkan_loader.h"
#include "corgy/error.h"

namespace corgy::vulkan {

/// The loader found no Vulkan driver at all.
class NoDriverError : public Error {
 public:
  NoDriverError();
};

/// Whether a debug-utils message is a finding about the application's use of Vulkan, which validation mode counts
/// and reports: every error, and the warnings of the validation and performance checks. A warning or notice of
/// type "general" is not: the loader and the layers post those about their own state, e.g. the loader's
/// "env var 'VK_INSTANCE_LAYERS' defined and adding layers" whenever a user exports that variable.
bool is_validation_finding(VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT types);

/// Where validation findings go: counted, and handed to `callback` (stderr when it is empty). Messages may come from
/// any thread that calls Vulkan (the pipeline compiler's workers too): the count and the last message are kept
/// under a lock, and the callback is called one message at a time (a recursive lock: a callback that calls Vulkan
/// and is told about that call does not wait for itself).
struct ValidationSink {
  std::function<void(const std::string&)> callback;
  std::uint64_t count() const {
    const std::lock_guard lock(mutex);
    return messages;
  }
  std::string last_message() const {
    const std::lock_guard lock(mutex);
    return last;
  }
  mutable std::mutex mutex;
  std::recursive_mutex callback_mutex;
  std::uint64_t messages = 0;
  std::string last;
};

class Instance {
 public:
  /// Opens `loader_library` and creates an instance for Vulkan 1.1. With a sink, enables
  /// VK_LAYER_KHRONOS_validation and sends its findings (is_validation_finding) to the sink, which must outlive the
  /// instance. Throws NoDriverError when the loader finds no driver, corgy::Error when the loader is missing, it is
  /// older than 1.1, or the layer is not installed.
  Instance(const std::string& loader_library, ValidationSink* validation);
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  VkInstance handle() const { return instance_; }
  const InstanceFunctions& vk() const { return vk_; }

 private:
  void create_messenger(ValidationSink* validation);

  std::shared_ptr<Loader> loader_;
  VkInstance instance_ = VK_NULL_HANDLE;
  InstanceFunctions vk_;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
};

}  // namespace corgy::vulkan
