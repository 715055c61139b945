#include "corgy/backends/vulkan/tensor_buffers.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "corgy/error.h"

namespace corgy::vulkan {

namespace {

VkDeviceSize bytes_of(const Variable& tensor) { return tensor.count() * sizeof(float); }

}  // namespace

std::uint16_t to_half(float value) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) return static_cast<std::uint16_t>(sign | (magnitude > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (magnitude >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (magnitude < 0x38800000u) {
    // Subnormal in fp16 (or zero): shift the significand with its implicit bit, rounding to nearest even.
    if (magnitude < 0x33000000u) return static_cast<std::uint16_t>(sign);
    const std::uint32_t exponent = magnitude >> 23;
    const std::uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126 - exponent;  // 14 .. 24
    std::uint32_t half = significand >> shift;
    const std::uint32_t rest = significand & ((1u << shift) - 1);
    const std::uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = ((magnitude - 0x38000000u) >> 13);
  const std::uint32_t rest = magnitude & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return static_cast<std::uint16_t>(sign | half);
}

TensorBuffers::TensorBuffers(const Context& context, bool force_staging, bool half_intermediates)
    : context_(context), factory_(context), force_staging_(force_staging), half_intermediates_(half_intermediates) {}

void TensorBuffers::set_device_only(std::span<const std::uint64_t> storage_ids) {
  device_only_ = std::set<std::uint64_t>(storage_ids.begin(), storage_ids.end());
}

bool TensorBuffers::zero_copy() const { return context_.host_import() && !force_staging_; }

void TensorBuffers::check_binding_range(const Variable& tensor) const {
  const VkDeviceSize limit = context_.limits().maxStorageBufferRange;
  if (bytes_of(tensor) > limit) {
    throw Error(fmt::format("Vulkan: a tensor of shape {} ({} bytes) is larger than {} allows in one buffer ({} bytes)",
                            tensor.shape().str(), bytes_of(tensor), context_.physical().info.name, limit));
  }
}

void TensorBuffers::upload_constant(const Variable& tensor) {
  if (tensor.empty()) return;
  check_binding_range(tensor);
  const std::uint64_t id = tensor.storage()->id();
  const VkDeviceSize bytes = tensor.storage()->bytes();
  const auto found = entries_.find(id);
  TensorEntry* entry = found == entries_.end() ? nullptr : found->second.get();
  if (!entry || entry->place != TensorPlace::constant || entry->device.size() != bytes) {
    // Built aside and stored only once its buffer exists: an allocation that fails leaves no half-made entry.
    auto made = std::make_unique<TensorEntry>();
    made->storage = tensor.storage();
    made->place = TensorPlace::constant;
    made->device = factory_.device_buffer(bytes);
    entry = made.get();
    entries_[id] = std::move(made);
  }
  entry->half_rows = Buffer();  // the values changed: the fp16 copy is made again on its next use
  entry->half_row_length = 0;
  entry->derived.clear();
  PendingConstant pending{factory_.host_buffer(bytes), &entry->device, bytes};
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
  check_binding_range(tensor);  // before anything is allocated for it
  const std::uint64_t id = tensor.storage()->id();
  const auto found = entries_.find(id);
  TensorEntry* entry = found == entries_.end() ? nullptr : found->second.get();
  const TensorPlace wanted = entry && entry->place == TensorPlace::constant ? TensorPlace::constant
                             : device_only_.contains(id)                    ? TensorPlace::device_only
                                                                            : TensorPlace::host;
  if (!entry || entry->place != wanted) {
    // Built aside and stored only once its buffers exist: after an allocation fails (out of device memory) the
    // next forward starts clean instead of binding a half-made entry.
    auto made = std::make_unique<TensorEntry>();
    made->storage = tensor.storage();
    made->place = wanted;
    if (wanted == TensorPlace::device_only) {
      made->device = factory_.device_buffer(tensor.storage()->bytes());
    } else {
      make_host_buffers(*made);
    }
    entry = made.get();
    entries_[id] = std::move(made);
  }
  return *entry;
}

BufferUse TensorBuffers::read(const Variable& tensor) {
  TensorEntry& entry = entry_for(tensor);
  if (entry.place == TensorPlace::host) {
    if (!entry.touched) touched_.push_back(&entry);
    entry.touched = true;
    // Bytes not yet written in this forward come from the host.
    if (bytes_of(tensor) > entry.download_bytes) entry.upload_bytes = std::max(entry.upload_bytes, bytes_of(tensor));
  }
  const TensorFormat format = entry.place == TensorPlace::device_only ? entry.format : TensorFormat::fp32;
  return {&entry.kernel_buffer(), tensor.count() * element_bytes(format), false, 0, format, tensor.count()};
}

BufferUse TensorBuffers::write(const Variable& tensor, bool allow_fp16) {
  TensorEntry& entry = entry_for(tensor);
  if (entry.place == TensorPlace::constant) {
    throw Error(fmt::format("Vulkan: an operation writes a tensor of shape {} that was uploaded as a constant",
                            tensor.shape().str()));
  }
  if (entry.place == TensorPlace::host) {
    if (!entry.touched) touched_.push_back(&entry);
    entry.touched = true;
    // What the caller reads is the last write's: a larger tensor written earlier into the same storage (an
    // intermediate sharing the buffer) is dead and need not come back.
    entry.download_bytes = bytes_of(tensor);
  }
  const bool half = allow_fp16 && half_intermediates_ && entry.place == TensorPlace::device_only;
  entry.format = half ? TensorFormat::fp16 : TensorFormat::fp32;
  return {&entry.kernel_buffer(), tensor.count() * element_bytes(entry.format), true, 0, entry.format, tensor.count()};
}

BufferUse TensorBuffers::half_rows(const Variable& constant, std::uint32_t row_length) {
  TensorEntry& entry = entry_for(constant);
  if (entry.place != TensorPlace::constant) {
    throw Error(
        fmt::format("Vulkan: fp16 weights of shape {} were not uploaded as a constant", constant.shape().str()));
  }
  const std::uint32_t padded = (row_length + 7) / 8 * 8;
  const std::size_t rows = constant.count() / row_length;
  const VkDeviceSize bytes = rows * padded * sizeof(std::uint16_t);
  if (entry.half_rows.empty() || entry.half_row_length != row_length) {
    // Both buffers are made before the entry changes: a failed allocation leaves no fp16 copy that is never filled.
    Buffer device = factory_.device_buffer(bytes);
    PendingConstant pending{factory_.host_buffer(bytes), nullptr, bytes};
    auto* halves = static_cast<std::uint16_t*>(pending.staging.mapped());
    const float* values = constant.data();
    for (std::size_t row = 0; row < rows; ++row) {
      for (std::uint32_t i = 0; i < padded; ++i) {
        halves[row * padded + i] = i < row_length ? to_half(values[row * row_length + i]) : 0;
      }
    }
    entry.half_rows = std::move(device);
    entry.half_row_length = row_length;
    pending.target = &entry.half_rows;
    pending_constants_.push_back(std::move(pending));
  }
  return {&entry.half_rows, bytes, false, 0, TensorFormat::fp16, rows * padded};
}

BufferUse TensorBuffers::derived_constant(const Variable& constant, const void* kind, VkDeviceSize bytes,
                                          const std::function<void(const float*, void*)>& fill) {
  TensorEntry& entry = entry_for(constant);
  if (entry.place != TensorPlace::constant) {
    throw Error(fmt::format("Vulkan: weights of shape {} were not uploaded as a constant", constant.shape().str()));
  }
  auto found = std::find_if(entry.derived.begin(), entry.derived.end(),
                            [&](const std::unique_ptr<TensorEntry::Derived>& d) { return d->kind == kind; });
  if (found == entry.derived.end()) {
    entry.derived.push_back(std::make_unique<TensorEntry::Derived>(TensorEntry::Derived{kind, Buffer()}));
    found = entry.derived.end() - 1;
  }
  Buffer& derived = (*found)->buffer;
  if (derived.empty() || derived.size() < bytes) {
    Buffer device = factory_.device_buffer(bytes);
    PendingConstant pending{factory_.host_buffer(bytes), nullptr, bytes};
    fill(constant.data(), pending.staging.mapped());
    derived = std::move(device);
    pending.target = &derived;
    pending_constants_.push_back(std::move(pending));
  }
  return {&derived, bytes, false, 0, TensorFormat::fp32, static_cast<std::size_t>(bytes / sizeof(float))};
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
