#include "corgy/backends/vulkan/tensor_buffers.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "corgy/error.h"

namespace corgy::vulkan {

namespace {

VkDeviceSize bytes_of(const Variable& tensor) { return tensor.count() * sizeof(float); }

}  // namespace

TensorBuffers::TensorBuffers(const Context& context, bool force_staging)
    : context_(context), factory_(context), force_staging_(force_staging) {}

void TensorBuffers::set_device_only(std::span<const std::uint64_t> storage_ids) {
  device_only_ = std::set<std::uint64_t>(storage_ids.begin(), storage_ids.end());
}

bool TensorBuffers::zero_copy() const { return context_.host_import() && !force_staging_; }

void TensorBuffers::upload_constant(const Variable& tensor) {
  if (tensor.empty()) return;
  const std::uint64_t id = tensor.storage()->id();
  auto& slot = entries_[id];
  const VkDeviceSize bytes = tensor.storage()->bytes();
  if (!slot || slot->place != TensorPlace::constant || slot->device.size() != bytes) {
    slot = std::make_unique<TensorEntry>();
    slot->storage = tensor.storage();
    slot->place = TensorPlace::constant;
    slot->device = factory_.device_buffer(bytes);
  }
  PendingConstant pending{factory_.host_buffer(bytes), &slot->device, bytes};
  std::memcpy(pending.staging.mapped(), tensor.storage()->data(), bytes);
  pending_constants_.push_back(std::move(pending));
}

void TensorBuffers::record_constant_uploads(VkCommandBuffer command_buffer) {
  for (const PendingConstant& pending : pending_constants_) {
    const VkBufferCopy region{0, 0, pending.bytes};
    context_.vk().vkCmdCopyBuffer(command_buffer, pending.staging.handle(), pending.target->handle(), 1, &region);
  }
}

void TensorBuffers::begin_forward() {
  for (TensorEntry* entry : touched_) {
    entry->upload_bytes = 0;
    entry->download_bytes = 0;
    entry->touched = false;
  }
  touched_.clear();
  // Nobody but this map holds these storages any more: their buffers (and imports) can go.
  std::erase_if(entries_, [](const auto& item) { return item.second->storage.use_count() == 1; });
}

void TensorBuffers::make_host_buffers(TensorEntry& entry) {
  Storage& storage = *entry.storage;
  if (!force_staging_) {
    if (std::optional<Buffer> imported = factory_.import_host(storage.data(), storage.bytes())) {
      entry.host = std::move(*imported);
      entry.imported = true;
    }
  }
  if (!entry.imported) entry.host = factory_.host_buffer(storage.bytes());
  // Kernels reading host memory across the bus would be slow: give them a device-local copy.
  if (!entry.host.device_local()) entry.device = factory_.device_buffer(storage.bytes());
}

TensorEntry& TensorBuffers::entry_for(const Variable& tensor) {
  if (tensor.empty()) throw Error("Vulkan: an operation got an empty Variable");
  const std::uint64_t id = tensor.storage()->id();
  auto& slot = entries_[id];
  const TensorPlace wanted = slot && slot->place == TensorPlace::constant ? TensorPlace::constant
                             : device_only_.contains(id)                  ? TensorPlace::device_only
                                                                          : TensorPlace::host;
  if (!slot || slot->place != wanted) {
    slot = std::make_unique<TensorEntry>();
    slot->storage = tensor.storage();
    slot->place = wanted;
    if (wanted == TensorPlace::device_only) {
      slot->device = factory_.device_buffer(tensor.storage()->bytes());
    } else {
      make_host_buffers(*slot);
    }
  }
  const VkDeviceSize limit = context_.limits().maxStorageBufferRange;
  if (bytes_of(tensor) > limit) {
    throw Error(fmt::format("Vulkan: a tensor of shape {} ({} bytes) is larger than {} allows in one buffer ({} bytes)",
                            tensor.shape().str(), bytes_of(tensor), context_.physical().info.name, limit));
  }
  return *slot;
}

BufferUse TensorBuffers::read(const Variable& tensor) {
  TensorEntry& entry = entry_for(tensor);
  if (entry.place == TensorPlace::host) {
    if (!entry.touched) touched_.push_back(&entry);
    entry.touched = true;
    // Bytes not yet written in this forward come from the host.
    if (bytes_of(tensor) > entry.download_bytes) entry.upload_bytes = std::max(entry.upload_bytes, bytes_of(tensor));
  }
  return {&entry.kernel_buffer(), bytes_of(tensor), false};
}

BufferUse TensorBuffers::write(const Variable& tensor) {
  TensorEntry& entry = entry_for(tensor);
  if (entry.place == TensorPlace::constant) {
    throw Error(fmt::format("Vulkan: an operation writes a tensor of shape {} that was uploaded as a constant",
                            tensor.shape().str()));
  }
  if (entry.place == TensorPlace::host) {
    if (!entry.touched) touched_.push_back(&entry);
    entry.touched = true;
    entry.download_bytes = std::max(entry.download_bytes, bytes_of(tensor));
  }
  return {&entry.kernel_buffer(), bytes_of(tensor), true};
}

std::vector<HostTransfer> TensorBuffers::uploads() const {
  std::vector<HostTransfer> transfers;
  for (TensorEntry* entry : touched_) {
    if (entry->upload_bytes > 0 && !(entry->imported && entry->device.empty())) {
      transfers.push_back({entry, entry->upload_bytes});
    }
  }
  return transfers;
}

std::vector<HostTransfer> TensorBuffers::downloads() const {
  std::vector<HostTransfer> transfers;
  for (TensorEntry* entry : touched_) {
    if (entry->download_bytes > 0 && !(entry->imported && entry->device.empty())) {
      transfers.push_back({entry, entry->download_bytes});
    }
  }
  return transfers;
}

void TensorBuffers::copy_into_staging(const std::vector<HostTransfer>& uploads) const {
  for (const HostTransfer& transfer : uploads) {
    if (!transfer.entry->imported) {
      std::memcpy(transfer.entry->host.mapped(), transfer.entry->storage->data(), transfer.bytes);
    }
  }
}

void TensorBuffers::copy_out_of_staging(const std::vector<HostTransfer>& downloads) const {
  for (const HostTransfer& transfer : downloads) {
    if (!transfer.entry->imported) {
      std::memcpy(transfer.entry->storage->data(), transfer.entry->host.mapped(), transfer.bytes);
    }
  }
}

}  // namespace corgy::vulkan
