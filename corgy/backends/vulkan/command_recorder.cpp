#include "corgy/backends/vulkan/command_recorder.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <limits>

#include "corgy/error.h"

namespace corgy::vulkan {

namespace {

constexpr VkAccessFlags shader_access = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;

void memory_barrier(const DeviceFunctions& vk, VkCommandBuffer commands, VkPipelineStageFlags from,
                    VkAccessFlags from_access, VkPipelineStageFlags to, VkAccessFlags to_access) {
  VkMemoryBarrier barrier{};
  barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  barrier.srcAccessMask = from_access;
  barrier.dstAccessMask = to_access;
  vk.vkCmdPipelineBarrier(commands, from, to, 0, 1, &barrier, 0, nullptr, 0, nullptr);
}

// Regions of buffers touched since the last barrier.
struct Touched {
  std::uint64_t serial;
  VkDeviceSize begin;
  VkDeviceSize end;
  bool writes;
};

bool conflicts(const std::vector<Touched>& touched, const BufferUse& use) {
  return std::any_of(touched.begin(), touched.end(), [&](const Touched& t) {
    return t.serial == use.buffer->serial() && (t.writes || use.writes) && t.begin < use.bytes &&
           use.region_begin < t.end;
  });
}

}  // namespace

CommandRecorder::CommandRecorder(const Context& context, TensorBuffers& tensors, VulkanStats& stats, int spin_wait_us)
    : context_(context),
      vk_(context.vk()),
      tensors_(tensors),
      stats_(stats),
      factory_(context),
      spin_wait_(std::max(spin_wait_us, 0)) {
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
  check(vk_.vkAllocateCommandBuffers(context.device(), &allocate, &forward_commands_), "vkAllocateCommandBuffers");
  check(vk_.vkAllocateCommandBuffers(context.device(), &allocate, &upload_commands_), "vkAllocateCommandBuffers");
  VkFenceCreateInfo fence{};
  fence.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  check(vk_.vkCreateFence(context.device(), &fence, nullptr, &fence_), "vkCreateFence");
  ensure_timestamp_queries(4);
  // Scratch buffers are addressed by pointer from BufferUse: the vector never grows after this.
  scratch_.resize(static_cast<std::size_t>(Scratch::converted) + max_bindings);
  scratch_needed_.resize(scratch_.size());
  placeholder_ = factory_.device_buffer(16);
}

void CommandRecorder::ensure_timestamp_queries(std::uint32_t count) {
  if (!context_.timestamps() || count <= timestamp_count_) return;
  if (timestamps_ != VK_NULL_HANDLE) vk_.vkDestroyQueryPool(context_.device(), timestamps_, nullptr);
  timestamps_ = VK_NULL_HANDLE;
  VkQueryPoolCreateInfo query{};
  query.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
  query.queryType = VK_QUERY_TYPE_TIMESTAMP;
  query.queryCount = count;
  check(vk_.vkCreateQueryPool(context_.device(), &query, nullptr, &timestamps_), "vkCreateQueryPool");
  timestamp_count_ = count;
}

CommandRecorder::~CommandRecorder() {
  const VkDevice device = context_.device();
  vk_.vkDeviceWaitIdle(device);
  if (descriptor_pool_ != VK_NULL_HANDLE) vk_.vkDestroyDescriptorPool(device, descriptor_pool_, nullptr);
  if (timestamps_ != VK_NULL_HANDLE) vk_.vkDestroyQueryPool(device, timestamps_, nullptr);
  vk_.vkDestroyFence(device, fence_, nullptr);
  vk_.vkDestroyCommandPool(device, command_pool_, nullptr);
}

void CommandRecorder::begin() {
  if (lost_) {
    throw Error(
        fmt::format("Vulkan: the device {} was lost earlier (VK_ERROR_DEVICE_LOST); this backend cannot run "
                    "again: set_backend to another backend (\"blas\") or to a new Vulkan backend",
                    context_.physical().info.name));
  }
  send_constant_uploads();
  tensors_.begin_forward();
  dispatches_.clear();
  std::fill(scratch_needed_.begin(), scratch_needed_.end(), 0);
  layer_ = -1;
  in_forward_ = true;
}

void CommandRecorder::send_constant_uploads() {
  if (!tensors_.has_pending_constants()) return;
  check(vk_.vkResetCommandBuffer(upload_commands_, 0), "vkResetCommandBuffer");
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vk_.vkBeginCommandBuffer(upload_commands_, &begin), "vkBeginCommandBuffer");
  tensors_.record_constant_uploads(upload_commands_);
  check(vk_.vkEndCommandBuffer(upload_commands_), "vkEndCommandBuffer");
  // The forward's own submission follows on the same queue; the fence wait orders the two.
  submit_and_wait(upload_commands_);
  tensors_.finish_constant_uploads();
  ++stats_.upload_submissions;
}

BufferUse CommandRecorder::scratch(Scratch use, VkDeviceSize bytes, bool writes, std::uint32_t binding) {
  const std::size_t slot = static_cast<std::size_t>(use) + (use == Scratch::converted ? binding : 0);
  if (slot >= scratch_.size()) throw Error(fmt::format("Vulkan: no scratch buffer for binding {}", binding));
  scratch_needed_[slot] = std::max(scratch_needed_[slot], bytes);
  return {&scratch_[slot], bytes, writes, 0, TensorFormat::fp32, static_cast<std::size_t>(bytes / sizeof(float))};
}

void CommandRecorder::describe_last(std::string detail, double flops) {
  if (dispatches_.empty()) return;
  dispatches_.back().detail = std::move(detail);
  dispatches_.back().flops = flops;
}

void CommandRecorder::add_dispatch(const Pipeline& pipeline, std::initializer_list<BufferUse> buffers,
                                   std::vector<std::uint32_t> push_constants, std::array<std::uint32_t, 3> groups) {
  if (buffers.size() != pipeline.kernel.bindings) {
    throw Error(fmt::format("Vulkan: kernel {} takes {} buffers, got {}", pipeline.kernel.name,
                            pipeline.kernel.bindings, buffers.size()));
  }
  const VkDeviceSize range = context_.limits().maxStorageBufferRange;
  for (const BufferUse& use : buffers) {
    // Checked while describing, before the scratch buffer that may be this large is allocated at end().
    if (use.bytes > range) {
      throw Error(
          fmt::format("Vulkan: kernel {} would bind {} bytes of one buffer; {} allows {} (maxStorageBufferRange)",
                      pipeline.kernel.name, use.bytes, context_.physical().info.name, range));
    }
  }
  const std::uint32_t* limit = context_.limits().maxComputeWorkGroupCount;
  for (int axis = 0; axis < 3; ++axis) {
    if (groups[axis] == 0 || groups[axis] > limit[axis]) {
      throw Error(fmt::format("Vulkan: kernel {} needs {} workgroups along axis {}; the device allows 1 to {}",
                              pipeline.kernel.name, groups[axis], axis, limit[axis]));
    }
  }
  Dispatch dispatch;
  dispatch.pipeline = &pipeline;
  dispatch.buffers = buffers;
  // fp16 tensors (device-only intermediates with fp16 precision) reach a kernel that reads fp32 only through
  // a converted copy.
  for (std::uint32_t b = 0; b < dispatch.buffers.size() && !pipeline.kernel.reads_fp16; ++b) {
    BufferUse& use = dispatch.buffers[b];
    if (use.writes || use.format != TensorFormat::fp16) continue;
    if (fp16_to_fp32_ == nullptr) {
      throw Error(
          fmt::format("Vulkan: kernel {} reads an fp16 tensor and there is no converter", pipeline.kernel.name));
    }
    const BufferUse converted = scratch(Scratch::converted, use.count * sizeof(float), true, b);
    const ConvertParams params{static_cast<std::uint32_t>(use.count)};
    std::vector<std::uint32_t> words(sizeof params / 4);
    std::memcpy(words.data(), &params, sizeof params);
    add_dispatch(*fp16_to_fp32_, {use, converted}, std::move(words), {elementwise_groups(use.count), 1, 1});
    use = converted;
    use.writes = false;
  }
  dispatch.push_constants = std::move(push_constants);
  std::copy(groups.begin(), groups.end(), dispatch.groups);
  dispatch.operation = operation_;
  dispatch.layer = layer_;
  dispatches_.push_back(std::move(dispatch));
}

std::vector<std::uint64_t> CommandRecorder::signature(const std::vector<HostTransfer>& uploads,
                                                      const std::vector<HostTransfer>& downloads) const {
  std::vector<std::uint64_t> words;
  for (const Dispatch& d : dispatches_) {
    words.insert(words.end(), {d.pipeline->serial, d.groups[0], d.groups[1], d.groups[2]});
    words.insert(words.end(), d.push_constants.begin(), d.push_constants.end());
    for (const BufferUse& use : d.buffers) {
      words.insert(words.end(), {use.buffer->serial(), use.bytes, use.region_begin, use.writes ? 1u : 0u});
    }
  }
  for (const auto* transfers : {&uploads, &downloads}) {
    words.push_back(transfers->size());
    for (const HostTransfer& t : *transfers) {
      words.insert(words.end(), {t.entry->host.serial(), t.entry->device.serial(), t.bytes});
    }
  }
  return words;
}

void CommandRecorder::allocate_scratch() {
  for (std::size_t slot = 0; slot < scratch_.size(); ++slot) {
    if (scratch_[slot].size() < scratch_needed_[slot]) {
      scratch_[slot] = Buffer();  // free the old one first: the new one may be large
      scratch_[slot] = factory_.device_buffer(scratch_needed_[slot]);
    }
  }
}

void CommandRecorder::append_to_last_detail(std::string_view text) {
  if (!dispatches_.empty()) dispatches_.back().detail += text;
}

std::vector<Dispatch> CommandRecorder::take_dispatches_from(std::size_t first) {
  first = std::min(first, dispatches_.size());
  std::vector<Dispatch> taken(std::make_move_iterator(dispatches_.begin() + static_cast<std::ptrdiff_t>(first)),
                              std::make_move_iterator(dispatches_.end()));
  dispatches_.resize(first);
  return taken;
}

void CommandRecorder::append_dispatches(const std::vector<Dispatch>& dispatches) {
  dispatches_.insert(dispatches_.end(), dispatches.begin(), dispatches.end());
}

void CommandRecorder::replace_dispatches(std::size_t first, std::size_t last, std::vector<Dispatch> dispatches) {
  if (first > last || last > dispatches_.size()) {
    throw Error(
        fmt::format("Vulkan: dispatches [{}, {}) replaced in a forward of {}", first, last, dispatches_.size()));
  }
  const auto begin = dispatches_.begin() + static_cast<std::ptrdiff_t>(first);
  dispatches_.erase(begin, dispatches_.begin() + static_cast<std::ptrdiff_t>(last));
  dispatches_.insert(dispatches_.begin() + static_cast<std::ptrdiff_t>(first),
                     std::make_move_iterator(dispatches.begin()), std::make_move_iterator(dispatches.end()));
}

void CommandRecorder::prepare_for_timing() {
  allocate_scratch();
  send_constant_uploads();
}

void CommandRecorder::restore_scratch_needs(const std::vector<VkDeviceSize>& needs) {
  scratch_needed_ = needs;
  // The GPU is idle between the tuner's submissions; a buffer the forward still needs is made again at end().
  for (std::size_t slot = 0; slot < scratch_.size(); ++slot) {
    if (scratch_[slot].size() > scratch_needed_[slot]) scratch_[slot] = Buffer();
  }
}

void CommandRecorder::end() {
  in_forward_ = false;
  allocate_scratch();
  // Constants an operation asked for while describing (fp16 weights) go up before the forward.
  send_constant_uploads();
  const std::vector<HostTransfer> uploads = tensors_.uploads();
  const std::vector<HostTransfer> downloads = tensors_.downloads();
  if (dispatches_.empty() && uploads.empty() && downloads.empty()) return;
  std::vector<std::uint64_t> words = signature(uploads, downloads);
  words.push_back(profiling_ ? 1 : 0);
  if (words != recorded_signature_) {
    record(uploads, downloads);
    recorded_signature_ = std::move(words);
    ++stats_.recordings;
  }
  tensors_.copy_into_staging(uploads);
  submit_and_wait(forward_commands_);
  ++stats_.submissions;
  stats_.last_dispatches = static_cast<int>(dispatches_.size());
  stats_.last_barriers = recorded_barriers_;
  tensors_.copy_out_of_staging(downloads);
  read_gpu_time();
  check_validation();
}

void CommandRecorder::submit_and_wait(VkCommandBuffer command_buffer) {
  VkSubmitInfo submit{};
  submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &command_buffer;
  check(vk_.vkResetFences(context_.device(), 1, &fence_), "vkResetFences");
  check_submission(vk_.vkQueueSubmit(context_.queue(), 1, &submit, fence_), "vkQueueSubmit");
  check_submission(wait_for_fence(), "vkWaitForFences");
}

void CommandRecorder::check_submission(VkResult result, const char* what) {
  if (result == VK_ERROR_DEVICE_LOST) {
    // Vulkan allows nothing but destruction on a lost device: remember it, so that later forwards fail at once.
    lost_ = true;
    throw Error(
        fmt::format("Vulkan: the device {} was lost (VK_ERROR_DEVICE_LOST at {}): the GPU was reset or its "
                    "driver failed; this backend cannot run again: set_backend to another backend "
                    "(\"blas\") or to a new Vulkan backend",
                    context_.physical().info.name, what));
  }
  if (result == VK_ERROR_OUT_OF_DEVICE_MEMORY || result == VK_ERROR_OUT_OF_HOST_MEMORY) {
    throw Error(
        fmt::format("Vulkan: {} ran out of memory on {} ({}); the model can move to another backend with "
                    "set_backend, or run with a smaller input",
                    what, context_.physical().info.name, result_name(result)));
  }
  check(result, what);
}

VkResult CommandRecorder::wait_for_fence() {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  if (spin_wait_.count() > 0 && !last_wait_was_long_) {
    const Clock::time_point until = start + spin_wait_;
    // VK_NOT_READY until the GPU is done; a device error leaves the loop for the blocking wait to report.
    while (vk_.vkGetFenceStatus(context_.device(), fence_) == VK_NOT_READY && Clock::now() < until) {
    }
  }
  // Also when the fence has signalled: returns at once, and reports the device's errors in one place.
  const VkResult result =
      vk_.vkWaitForFences(context_.device(), 1, &fence_, VK_TRUE, std::numeric_limits<std::uint64_t>::max());
  last_wait_was_long_ = Clock::now() - start > spin_wait_;
  return result;
}

void CommandRecorder::record(const std::vector<HostTransfer>& uploads, const std::vector<HostTransfer>& downloads) {
  // The pipelines compile on worker threads (pipeline_compiler.h): wait for them, and for a refused compile's error,
  // before the command buffer is begun.
  for (const Dispatch& d : dispatches_) d.pipeline->handle();
  allocate_descriptor_sets();
  VkCommandBuffer commands = forward_commands_;
  check(vk_.vkResetCommandBuffer(commands, 0), "vkResetCommandBuffer");
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  check(vk_.vkBeginCommandBuffer(commands, &begin), "vkBeginCommandBuffer");
  recorded_profiling_ = profiling_ && context_.timestamps();
  if (recorded_profiling_) ensure_timestamp_queries(static_cast<std::uint32_t>(dispatches_.size()) + 3);
  if (timestamps_ != VK_NULL_HANDLE) {
    vk_.vkCmdResetQueryPool(commands, timestamps_, 0, timestamp_count_);
    vk_.vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, timestamps_, 0);
  }
  bool copied = false;
  for (const HostTransfer& t : uploads) {
    if (t.entry->device.empty()) continue;
    const VkBufferCopy region{0, 0, t.bytes};
    vk_.vkCmdCopyBuffer(commands, t.entry->host.handle(), t.entry->device.handle(), 1, &region);
    copied = true;
  }
  if (copied) {
    memory_barrier(vk_, commands, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                   VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, shader_access);
  }
  // The dispatches alone are timed between queries 1 and after_dispatches(): written once everything before
  // them has finished.
  if (timestamps_ != VK_NULL_HANDLE) {
    vk_.vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps_, 1);
  }
  record_dispatches();
  if (timestamps_ != VK_NULL_HANDLE && !recorded_profiling_) {
    vk_.vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps_, after_dispatches());
  }
  copied = false;
  for (const HostTransfer& t : downloads) {
    if (t.entry->device.empty()) continue;
    if (!copied) {
      memory_barrier(vk_, commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                     VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    }
    const VkBufferCopy region{0, 0, t.bytes};
    vk_.vkCmdCopyBuffer(commands, t.entry->device.handle(), t.entry->host.handle(), 1, &region);
    copied = true;
  }
  // Results become visible to the host once the fence signals.
  memory_barrier(vk_, commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                 VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                 VK_ACCESS_HOST_READ_BIT);
  if (timestamps_ != VK_NULL_HANDLE) {
    vk_.vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps_, last_timestamp());
  }
  check(vk_.vkEndCommandBuffer(commands), "vkEndCommandBuffer");
}

VkDescriptorPool create_descriptor_sets(const Context& context, std::span<const Dispatch> dispatches,
                                        std::vector<VkDescriptorSet>& sets) {
  const DeviceFunctions& vk = context.vk();
  const VkDevice device = context.device();
  std::uint32_t descriptors = 0;
  std::vector<VkDescriptorSetLayout> layouts;
  for (const Dispatch& d : dispatches) {
    descriptors += d.pipeline->kernel.bindings;
    layouts.push_back(d.pipeline->set_layout);
  }
  const VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, std::max(descriptors, 1u)};
  VkDescriptorPoolCreateInfo pool_info{};
  pool_info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
  pool_info.maxSets = static_cast<std::uint32_t>(dispatches.size());
  pool_info.poolSizeCount = 1;
  pool_info.pPoolSizes = &size;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  check(vk.vkCreateDescriptorPool(device, &pool_info, nullptr, &pool), "vkCreateDescriptorPool");
  VkDescriptorSetAllocateInfo allocate{};
  allocate.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
  allocate.descriptorPool = pool;
  allocate.descriptorSetCount = static_cast<std::uint32_t>(layouts.size());
  allocate.pSetLayouts = layouts.data();
  sets.resize(layouts.size());
  const VkResult allocated = vk.vkAllocateDescriptorSets(device, &allocate, sets.data());
  if (allocated != VK_SUCCESS) vk.vkDestroyDescriptorPool(device, pool, nullptr);
  check(allocated, "vkAllocateDescriptorSets");

  std::vector<VkDescriptorBufferInfo> infos;
  infos.reserve(descriptors);
  std::vector<VkWriteDescriptorSet> writes;
  for (std::size_t i = 0; i < dispatches.size(); ++i) {
    for (std::size_t b = 0; b < dispatches[i].buffers.size(); ++b) {
      const BufferUse& use = dispatches[i].buffers[b];
      infos.push_back({use.buffer->handle(), 0, use.bytes});
      VkWriteDescriptorSet write{};
      write.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
      write.dstSet = sets[i];
      write.dstBinding = static_cast<std::uint32_t>(b);
      write.descriptorCount = 1;
      write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      write.pBufferInfo = &infos.back();
      writes.push_back(write);
    }
  }
  vk.vkUpdateDescriptorSets(device, static_cast<std::uint32_t>(writes.size()), writes.data(), 0, nullptr);
  return pool;
}

void CommandRecorder::allocate_descriptor_sets() {
  if (descriptor_pool_ != VK_NULL_HANDLE) vk_.vkDestroyDescriptorPool(context_.device(), descriptor_pool_, nullptr);
  descriptor_pool_ = VK_NULL_HANDLE;
  descriptor_sets_.clear();
  if (dispatches_.empty()) return;
  descriptor_pool_ = create_descriptor_sets(context_, dispatches_, descriptor_sets_);
}

void CommandRecorder::record_dispatches() {
  recorded_barriers_ = 0;
  std::vector<Touched> touched;
  for (std::size_t i = 0; i < dispatches_.size(); ++i) {
    const Dispatch& d = dispatches_[i];
    if (std::any_of(d.buffers.begin(), d.buffers.end(), [&](const BufferUse& u) { return conflicts(touched, u); })) {
      memory_barrier(vk_, forward_commands_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                     VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, shader_access);
      ++recorded_barriers_;
      touched.clear();
    }
    for (const BufferUse& u : d.buffers) touched.push_back({u.buffer->serial(), u.region_begin, u.bytes, u.writes});
    vk_.vkCmdBindPipeline(forward_commands_, VK_PIPELINE_BIND_POINT_COMPUTE, d.pipeline->handle());
    vk_.vkCmdBindDescriptorSets(forward_commands_, VK_PIPELINE_BIND_POINT_COMPUTE, d.pipeline->layout, 0, 1,
                                &descriptor_sets_[i], 0, nullptr);
    vk_.vkCmdPushConstants(forward_commands_, d.pipeline->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                           static_cast<std::uint32_t>(d.push_constants.size() * 4), d.push_constants.data());
    vk_.vkCmdDispatch(forward_commands_, d.groups[0], d.groups[1], d.groups[2]);
    // Written once every earlier command has finished: the difference to the one before is this dispatch's
    // time where nothing overlaps it (dispatches without a barrier between them may overlap).
    if (recorded_profiling_) {
      vk_.vkCmdWriteTimestamp(forward_commands_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps_,
                              static_cast<std::uint32_t>(i) + 2);
    }
  }
}

// Queries: 0 at the start, 1 before the first dispatch, then with profiling one after each dispatch (2 + i),
// else one after the last (2); the last query closes the command buffer.
std::uint32_t CommandRecorder::after_dispatches() const {
  return recorded_profiling_ ? static_cast<std::uint32_t>(dispatches_.size()) + 1 : 2;
}

std::uint32_t CommandRecorder::last_timestamp() const { return after_dispatches() + 1; }

void CommandRecorder::read_gpu_time() {
  profile_.clear();
  if (timestamps_ == VK_NULL_HANDLE) return;
  const std::uint32_t count = last_timestamp() + 1;
  std::vector<std::uint64_t> ticks(count);
  const VkResult result =
      vk_.vkGetQueryPoolResults(context_.device(), timestamps_, 0, count, ticks.size() * sizeof(std::uint64_t),
                                ticks.data(), sizeof(std::uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
  check(result, "vkGetQueryPoolResults");
  const double ms_per_tick = static_cast<double>(context_.limits().timestampPeriod) * 1e-6;
  stats_.last_gpu_ms = static_cast<double>(ticks[count - 1] - ticks[0]) * ms_per_tick;
  stats_.last_compute_ms = static_cast<double>(ticks[after_dispatches()] - ticks[1]) * ms_per_tick;
  if (!recorded_profiling_) return;
  for (std::size_t i = 0; i < dispatches_.size(); ++i) {
    const Dispatch& d = dispatches_[i];
    VulkanDispatchProfile record;
    record.layer = d.layer;
    record.operation = d.operation ? d.operation : d.pipeline->kernel.name;
    record.kernel = d.pipeline->kernel.name;
    record.detail = d.detail;
    record.flops = d.flops;
    record.ms = static_cast<double>(ticks[i + 2] - ticks[i + 1]) * ms_per_tick;
    taken_profile_.push_back(
        {record.layer, record.detail.empty() ? record.kernel : record.kernel + " " + record.detail, record.ms});
    profile_.push_back(std::move(record));
  }
}

void CommandRecorder::check_validation() {
  stats_.validation_messages = context_.validation_messages();
  if (stats_.validation_messages == validation_seen_) return;
  const std::uint64_t fresh = stats_.validation_messages - validation_seen_;
  validation_seen_ = stats_.validation_messages;
  throw Error(
      fmt::format("Vulkan validation: {} new message(s); the last: {}", fresh, context_.last_validation_message()));
}

}  // namespace corgy::vulkan
