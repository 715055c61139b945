// Records a forward's dispatches into one command buffer, submits it once and waits once.
//
// Operations only describe their dispatches during a forward (pipeline, buffers, push constants, groups). At
// end() the description is compared with the one last recorded: when nothing changed (same model, input shape
// and buffers), the recorded command buffer is submitted again as it is; otherwise it is re-recorded, with its
// descriptor sets, the copies host tensors need, and a barrier only where a dispatch touches a buffer region
// that an earlier one, since the last barrier, wrote (or wrote what it reads).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "corgy/backends/vulkan/pipelines.h"
#include "corgy/backends/vulkan/tensor_buffers.h"
#include "corgy/backends/vulkan/vulkan_backend.h"

namespace corgy::vulkan {

struct Dispatch {
  const Pipeline* pipeline = nullptr;
  std::vector<BufferUse> buffers;  // binding i = buffers[i]
  std::vector<std::uint32_t> push_constants;
  std::uint32_t groups[3] = {1, 1, 1};
};

class CommandRecorder {
 public:
  CommandRecorder(const Context& context, TensorBuffers& tensors, VulkanStats& stats);
  ~CommandRecorder();
  CommandRecorder(const CommandRecorder&) = delete;
  CommandRecorder& operator=(const CommandRecorder&) = delete;

  bool in_forward() const { return in_forward_; }
  /// Starts a forward: sends pending constant uploads (their own submission) and clears the description.
  void begin();
  /// Adds a dispatch of `groups_x * groups_y * groups_z` workgroups.
  template <class Params>
  void dispatch(const Pipeline& pipeline, std::initializer_list<BufferUse> buffers, const Params& params,
                std::uint32_t groups_x, std::uint32_t groups_y = 1, std::uint32_t groups_z = 1) {
    static_assert(std::is_trivially_copyable_v<Params> && sizeof(Params) % 4 == 0);
    std::vector<std::uint32_t> words(sizeof(Params) / 4);
    std::memcpy(words.data(), &params, sizeof(Params));
    add_dispatch(pipeline, buffers, std::move(words), {groups_x, groups_y, groups_z});
  }
  /// The forward's scratch buffer (im2col columns), at least `bytes` long; one buffer serves every use.
  BufferUse scratch(VkDeviceSize bytes, bool writes);
  /// A small buffer for a binding the kernel does not read (a convolution without bias).
  BufferUse unused_binding() const { return {&placeholder_, placeholder_.size(), false}; }
  /// Records (if anything changed), submits, waits, and copies staged results to the host. Throws corgy::Error
  /// for a device error or, with validation, when a validation message arrived since the last check.
  void end();
  /// Ends a forward without running it (an operation failed while describing its dispatches).
  void abandon() {
    in_forward_ = false;
    dispatches_.clear();
  }

 private:
  void add_dispatch(const Pipeline& pipeline, std::initializer_list<BufferUse> buffers,
                    std::vector<std::uint32_t> push_constants, std::array<std::uint32_t, 3> groups);
  std::vector<std::uint64_t> signature(const std::vector<HostTransfer>& uploads,
                                       const std::vector<HostTransfer>& downloads) const;
  void record(const std::vector<HostTransfer>& uploads, const std::vector<HostTransfer>& downloads);
  void record_dispatches();
  void allocate_descriptor_sets();
  void submit_and_wait(VkCommandBuffer command_buffer);
  void send_constant_uploads();
  void read_gpu_time();
  void check_validation();

  const Context& context_;
  const DeviceFunctions& vk_;
  TensorBuffers& tensors_;
  VulkanStats& stats_;
  BufferFactory factory_;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer forward_commands_ = VK_NULL_HANDLE;
  VkCommandBuffer upload_commands_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkQueryPool timestamps_ = VK_NULL_HANDLE;
  VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
  std::vector<VkDescriptorSet> descriptor_sets_;
  Buffer scratch_;
  Buffer placeholder_;
  VkDeviceSize scratch_needed_ = 0;

  bool in_forward_ = false;
  std::vector<Dispatch> dispatches_;
  std::vector<std::uint64_t> recorded_signature_;
  int recorded_barriers_ = 0;
  std::uint64_t validation_seen_ = 0;
};

}  // namespace corgy::vulkan
