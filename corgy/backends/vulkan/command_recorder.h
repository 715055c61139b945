// Records a forward's dispatches into one command buffer, submits it once and waits once.
//
// Operations only describe their dispatches during a forward (pipeline, buffers, push constants, groups). At
// end() the description is compared with the one last recorded: when nothing changed (same model, input shape
// and buffers), the recorded command buffer is submitted again as it is; otherwise it is re-recorded, with its
// descriptor sets, the copies host tensors need, and a barrier only where a dispatch touches a buffer region
// that an earlier one, since the last barrier, wrote (or wrote what it reads).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
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
  // For the profile: the operation and layer that added it, what was chosen, and its arithmetic.
  const char* operation = nullptr;
  int layer = -1;
  std::string detail;
  double flops = 0.0;
};

/// Creates a descriptor pool with one set per dispatch and writes each set's bindings with the dispatch's buffers
/// (binding i = buffers[i]). The caller destroys the pool, which frees the sets.
VkDescriptorPool create_descriptor_sets(const Context& context, std::span<const Dispatch> dispatches,
                                        std::vector<VkDescriptorSet>& sets);

/// The forward's scratch buffers, one per use, so that uses in one dispatch never share a buffer.
enum class Scratch : std::uint32_t {
  im2col_columns = 0,
  split_k_partials = 1,
  unpooled_output = 2,    // a convolution's output before a pool2d dispatch that could not be fused
  winograd_input = 3,     // a Winograd convolution's transformed input (16 matrices)
  winograd_products = 4,  // and its 16 GEMMs' products
  plane_statistics = 5,   // an instance norm's per-chunk means and squared deviations
  converted = 6,          // + binding: fp16 tensors converted for a kernel that reads fp32 only
};

class CommandRecorder {
 public:
  /// `spin_wait_us`: VulkanOptions::spin_wait_us.
  CommandRecorder(const Context& context, TensorBuffers& tensors, VulkanStats& stats, int spin_wait_us);
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
  /// The forward's scratch buffer for `use`, at least `bytes` long; one buffer serves every dispatch of a use.
  BufferUse scratch(Scratch use, VkDeviceSize bytes, bool writes, std::uint32_t binding = 0);
  /// Names the operation (and the Sequential layer, for the profile) of the dispatches added next.
  void set_operation(const char* operation) { operation_ = operation; }
  const char* operation() const { return operation_; }
  void set_layer(int layer) { layer_ = layer; }
  /// Says what the last dispatch added is (tile shape, split-K, fused pool) and how many flops it does.
  void describe_last(std::string detail, double flops);
  /// Converts fp16 tensors for kernels that read fp32 only, with this pipeline (tensor_convert_fp16).
  void set_fp16_converter(const Pipeline* converter) { fp16_to_fp32_ = converter; }
  /// Timestamps around each dispatch from the next recording on; profile() lists the last forward's.
  void set_profiling(bool enabled) { profiling_ = enabled; }
  /// Whether describe_last's text is used: operations skip formatting it otherwise (every forward describes).
  bool profiling() const { return profiling_; }
  const std::vector<VulkanDispatchProfile>& profile() const { return profile_; }
  /// Every profiled dispatch since the last call, as Backend::take_profile() gives them.
  std::vector<OpProfile> take_profile() { return std::exchange(taken_profile_, {}); }
  /// A small buffer for a binding the kernel does not read (a convolution without bias).
  BufferUse unused_binding() const { return {&placeholder_, placeholder_.size(), false}; }
  /// Records (if anything changed), submits, waits, and copies staged results to the host. Throws corgy::Error
  /// for a device error or, with validation, when a validation message arrived since the last check.
  void end();
  /// Appends `text` to what the last dispatch added says it is (the tuner's note of where a plan came from).
  void append_to_last_detail(std::string_view text);

  // The tuner's hooks (conv_tuner.h): it describes each candidate plan of a layer like any operation, takes its
  // dispatches out of the forward and times them on their own (DispatchTimer).
  std::size_t dispatch_count() const { return dispatches_.size(); }
  /// Removes the dispatches from index `first` on and returns them.
  std::vector<Dispatch> take_dispatches_from(std::size_t first);
  /// Makes what the dispatches described so far need exist now instead of at end(): scratch buffers of the sizes
  /// asked for, and the constants pending upload (fp16 or rearranged weights) sent.
  void prepare_for_timing();
  /// The scratch sizes asked for so far, and their restoration: restore_scratch_needs forgets what was asked for
  /// since (the candidates') and frees the buffers that grew for them, so that a rejected candidate's large
  /// scratch (Winograd's transformed input) does not stay allocated.
  std::vector<VkDeviceSize> scratch_needs() const { return scratch_needed_; }
  void restore_scratch_needs(const std::vector<VkDeviceSize>& needs);
  /// Sets what the scratch buffers must hold without freeing any (the tuner measures each candidate's needs alone).
  void set_scratch_needs(std::vector<VkDeviceSize> needs) { scratch_needed_ = std::move(needs); }
  /// Adds dispatches described earlier (a candidate's, taken out with take_dispatches_from) to the forward.
  void append_dispatches(const std::vector<Dispatch>& dispatches);
  /// Puts `dispatches` in place of the forward's dispatches [first, last).
  void replace_dispatches(std::size_t first, std::size_t last, std::vector<Dispatch> dispatches);

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
  /// Grows the scratch buffers to what this forward asked for.
  void allocate_scratch();
  void submit_and_wait(VkCommandBuffer command_buffer);
  /// Throws corgy::Error for a failed submission or wait; VK_ERROR_DEVICE_LOST also marks the backend lost.
  void check_submission(VkResult result, const char* what);
  VkResult wait_for_fence();
  void send_constant_uploads();
  void read_gpu_time();
  void ensure_timestamp_queries(std::uint32_t count);
  std::uint32_t after_dispatches() const;
  std::uint32_t last_timestamp() const;

  static constexpr std::size_t max_bindings = 8;
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
  std::chrono::microseconds spin_wait_;
  bool last_wait_was_long_ = false;
  VkQueryPool timestamps_ = VK_NULL_HANDLE;
  VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
  std::vector<VkDescriptorSet> descriptor_sets_;
  std::vector<Buffer> scratch_;
  std::vector<VkDeviceSize> scratch_needed_;
  Buffer placeholder_;
  std::uint32_t timestamp_count_ = 0;
  const Pipeline* fp16_to_fp32_ = nullptr;
  const char* operation_ = nullptr;
  int layer_ = -1;
  bool profiling_ = false;
  bool recorded_profiling_ = false;
  std::vector<VulkanDispatchProfile> profile_;
  std::vector<OpProfile> taken_profile_;

  bool in_forward_ = false;
  std::vector<Dispatch> dispatches_;
  std::vector<std::uint64_t> recorded_signature_;
  int recorded_barriers_ = 0;
  std::uint64_t validation_seen_ = 0;
  bool lost_ = false;  // the device reported VK_ERROR_DEVICE_LOST: every later forward fails at once
};

}  // namespace corgy::vulkan
