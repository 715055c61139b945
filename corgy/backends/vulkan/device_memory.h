// Buffers and their memory: device-local buffers, mapped host buffers for staging, and buffers over imported
// host memory (VK_EXT_external_memory_host), which let a page-aligned Variable be used without a copy.
#pragma once

#include <cstdint>
#include <optional>

#include "corgy/backends/vulkan/vulkan_context.h"

namespace corgy::vulkan {

/// A VkBuffer bound to memory of its own. Move-only; frees both on destruction.
class Buffer {
 public:
  Buffer() = default;
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  VkBuffer handle() const { return buffer_; }
  VkDeviceSize size() const { return size_; }
  /// The host address of a mapped (staging) buffer; null otherwise.
  void* mapped() const { return mapped_; }
  /// The memory is device-local: kernels may use it directly at full speed.
  bool device_local() const { return device_local_; }
  /// Unique across the process: a recorded command buffer remembers which buffers it used by serial, since a
  /// new buffer may get a destroyed one's handle.
  std::uint64_t serial() const { return serial_; }
  bool empty() const { return buffer_ == VK_NULL_HANDLE; }

 private:
  friend class BufferFactory;
  void release();

  const Context* context_ = nullptr;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  VkDeviceSize size_ = 0;
  void* mapped_ = nullptr;
  bool device_local_ = false;
  std::uint64_t serial_ = 0;
};

/// Makes buffers on one context. Every buffer can be a storage buffer and a copy source and destination.
class BufferFactory {
 public:
  explicit BufferFactory(const Context& context) : context_(context) {}

  /// Device-local memory (any memory when the device has no device-local type).
  Buffer device_buffer(VkDeviceSize size) const;
  /// Host-visible, coherent, mapped memory: a staging buffer.
  Buffer host_buffer(VkDeviceSize size) const;
  /// A buffer over `bytes` of host memory at `pointer`, which must stay allocated while the buffer lives.
  /// Empty when import is off, the pointer or size is not aligned to minImportedHostPointerAlignment, or no
  /// coherent memory type accepts it; the caller then stages.
  std::optional<Buffer> import_host(void* pointer, VkDeviceSize bytes) const;

 private:
  VkBuffer create_buffer(VkDeviceSize size, bool external) const;
  Buffer bind(VkBuffer buffer, VkDeviceSize size, int memory_type, const void* allocation_next) const;
  /// Throws corgy::Error when `bytes` is over the device's maxMemoryAllocationSize or the size of the type's heap.
  void check_allocation_size(VkDeviceSize bytes, int memory_type) const;

  const Context& context_;
};

}  // namespace corgy::vulkan
