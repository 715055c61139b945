// Options for the Vulkan tests: validation on, and any validation message fails the running test, including
// messages that arrive while a backend is destroyed.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "corgy/backends/vulkan/vulkan_backend.h"
#include "test_util.h"

namespace corgy::testing {

inline VulkanOptions validated_vulkan_options() {
  VulkanOptions options;
  options.validation = true;
  options.on_validation_message = [](const std::string& message) { ADD_FAILURE() << "Vulkan validation " << message; };
  return options;
}

/// validated_vulkan_options() where kSweepValidation holds, otherwise no validation (for the sweeping tests).
inline VulkanOptions sweep_vulkan_options() {
  if (kSweepValidation) return validated_vulkan_options();
  return VulkanOptions{};
}

}  // namespace corgy::testing
