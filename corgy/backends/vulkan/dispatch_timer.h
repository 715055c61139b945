// Times a list of dispatches on the device by themselves: the tuner's stopwatch (conv_tuner.h). The dispatches
// run in a command buffer of their own, once to warm up and then `repetitions` times between two timestamps, with
// a barrier before each, as a forward orders dependent dispatches.
#pragma once

#include <vector>

#include "corgy/backends/vulkan/command_recorder.h"
#include "corgy/backends/vulkan/vulkan_context.h"

namespace corgy::vulkan {

class DispatchTimer {
 public:
  explicit DispatchTimer(const Context& context);
  ~DispatchTimer();
  DispatchTimer(const DispatchTimer&) = delete;
  DispatchTimer& operator=(const DispatchTimer&) = delete;

  /// Milliseconds of GPU time one run of `dispatches` takes, averaged over `repetitions` runs after a warm-up run
  /// (the host's clock around the submission where the queue has no timestamps). The buffers they bind must
  /// exist and may be overwritten.
  double time_ms(const std::vector<Dispatch>& dispatches, int repetitions);

 private:
  void record(const std::vector<Dispatch>& dispatches, const std::vector<VkDescriptorSet>& sets, int repetitions);

  const Context& context_;
  const DeviceFunctions& vk_;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkQueryPool timestamps_ = VK_NULL_HANDLE;
};

}  // namespace corgy::vulkan
