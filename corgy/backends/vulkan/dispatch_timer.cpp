#include "corgy/backends/vulkan/dispatch_timer.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>

namespace corgy::vulkan {

namespace {

// Owns the descriptor sets of one timing.
class DescriptorPool {
 public:
  DescriptorPool(const Context& context, const std::vector<Dispatch>& dispatches)
      : vk_(context.vk()), device_(context.device()), pool_(create_descriptor_sets(context, dispatches, sets)) {}
  ~DescriptorPool() { vk_.vkDestroyDescriptorPool(device_, pool_, nullptr); }
  DescriptorPool(const DescriptorPool&) = delete;
  DescriptorPool& operator=(const DescriptorPool&) = delete;

  std::vector<VkDescriptorSet> sets;

 private:
  const DeviceFunctions& vk_;
  VkDevice device_;
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
};

}  // namespace

DispatchTimer::DispatchTimer(const Context& context) : context_(context), vk_(context.vk()) {
  VkCommandPoolCreateInfo pool{};
  pool.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool.queueFamilyIndex = context.queue_family();
  check(vk_.vkCreateCommandPool(context.device(), &pool, nullptr, &command_pool_), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo allocate{};
  allocate.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  allocate.commandPool = command_pool_;
  allocate.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  allocate.commandBufferCount = 1;
  check(vk_.vkAllocateCommandBuffers(context.device(), &allocate, &commands_), "vkAllocateCommandBuffers");
  VkFenceCreateInfo fence{};
  fence.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  check(vk_.vkCreateFence(context.device(), &fence, nullptr, &fence_), "vkCreateFence");
  if (context.timestamps()) {
    VkQueryPoolCreateInfo query{};
    query.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    query.queryType = VK_QUERY_TYPE_TIMESTAMP;
    query.queryCount = 2;
    check(vk_.vkCreateQueryPool(context.device(), &query, nullptr, &timestamps_), "vkCreateQueryPool");
  }
}

DispatchTimer::~DispatchTimer() {
  const VkDevice device = context_.device();
  vk_.vkDeviceWaitIdle(device);
  if (timestamps_ != VK_NULL_HANDLE) vk_.vkDestroyQueryPool(device, timestamps_, nullptr);
  vk_.vkDestroyFence(device, fence_, nullptr);
  vk_.vkDestroyCommandPool(device, command_pool_, nullptr);
}

void DispatchTimer::record(const std::vector<Dispatch>& dispatches, const std::vector<VkDescriptorSet>& sets,
                           int repetitions) {
  check(vk_.vkResetCommandBuffer(commands_, 0), "vkResetCommandBuffer");
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vk_.vkBeginCommandBuffer(commands_, &begin), "vkBeginCommandBuffer");
  if (timestamps_ != VK_NULL_HANDLE) vk_.vkCmdResetQueryPool(commands_, timestamps_, 0, 2);
  VkMemoryBarrier barrier{};
  barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  // Run 0 warms up (caches, clocks); the timestamps enclose runs 1 .. repetitions.
  for (int run = 0; run <= repetitions; ++run) {
    for (std::size_t i = 0; i < dispatches.size(); ++i) {
      const Dispatch& d = dispatches[i];
      if (run > 0 || i > 0) {
        vk_.vkCmdPipelineBarrier(commands_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                 0, 1, &barrier, 0, nullptr, 0, nullptr);
      }
      if (run == 1 && i == 0 && timestamps_ != VK_NULL_HANDLE) {
        vk_.vkCmdWriteTimestamp(commands_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps_, 0);
      }
      vk_.vkCmdBindPipeline(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, d.pipeline->handle());
      vk_.vkCmdBindDescriptorSets(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, d.pipeline->layout, 0, 1, &sets[i], 0,
                                  nullptr);
      vk_.vkCmdPushConstants(commands_, d.pipeline->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                             static_cast<std::uint32_t>(d.push_constants.size() * 4), d.push_constants.data());
      vk_.vkCmdDispatch(commands_, d.groups[0], d.groups[1], d.groups[2]);
    }
  }
  if (timestamps_ != VK_NULL_HANDLE) {
    vk_.vkCmdWriteTimestamp(commands_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps_, 1);
  }
  check(vk_.vkEndCommandBuffer(commands_), "vkEndCommandBuffer");
}

double DispatchTimer::time_ms(const std::vector<Dispatch>& dispatches, int repetitions) {
  if (dispatches.empty()) return 0.0;
  repetitions = std::max(repetitions, 1);
  for (const Dispatch& d : dispatches) d.pipeline->handle();  // compiled (or refused) before recording begins
  const DescriptorPool descriptors(context_, dispatches);
  record(dispatches, descriptors.sets, repetitions);
  VkSubmitInfo submit{};
  submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &commands_;
  const auto start = std::chrono::steady_clock::now();
  check(vk_.vkResetFences(context_.device(), 1, &fence_), "vkResetFences");
  check(vk_.vkQueueSubmit(context_.queue(), 1, &submit, fence_), "vkQueueSubmit");
  check(vk_.vkWaitForFences(context_.device(), 1, &fence_, VK_TRUE, std::numeric_limits<std::uint64_t>::max()),
        "vkWaitForFences");
  if (timestamps_ == VK_NULL_HANDLE) {
    const std::chrono::duration<double, std::milli> elapsed = std::chrono::steady_clock::now() - start;
    return elapsed.count() / (repetitions + 1);
  }
  std::uint64_t ticks[2] = {0, 0};
  check(vk_.vkGetQueryPoolResults(context_.device(), timestamps_, 0, 2, sizeof ticks, ticks, sizeof(std::uint64_t),
                                  VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
        "vkGetQueryPoolResults");
  const double ms_per_tick = static_cast<double>(context_.limits().timestampPeriod) * 1e-6;
  return static_cast<double>(ticks[1] - ticks[0]) * ms_per_tick / repetitions;
}

}  // namespace corgy::vulkan
