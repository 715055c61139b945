#include "corgy/backends/vulkan/device_memory.h"

#include <fmt/format.h>

#include <atomic>
#include <string>
#include <utility>

#include "corgy/error.h"

namespace corgy::vulkan {

namespace {

std::atomic<std::uint64_t> next_buffer_serial{1};

constexpr VkBufferUsageFlags buffer_usage =
    VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;

std::string mib(VkDeviceSize bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

}  // namespace

Buffer::~Buffer() { release(); }

Buffer::Buffer(Buffer&& other) noexcept { *this = std::move(other); }

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    release();
    context_ = std::exchange(other.context_, nullptr);
    buffer_ = std::exchange(other.buffer_, VK_NULL_HANDLE);
    memory_ = std::exchange(other.memory_, VK_NULL_HANDLE);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, nullptr);
    device_local_ = std::exchange(other.device_local_, false);
    serial_ = std::exchange(other.serial_, 0);
  }
  return *this;
}

void Buffer::release() {
  if (context_ == nullptr) return;
  const DeviceFunctions& vk = context_->vk();
  if (buffer_ != VK_NULL_HANDLE) vk.vkDestroyBuffer(context_->device(), buffer_, nullptr);
  if (memory_ != VK_NULL_HANDLE) vk.vkFreeMemory(context_->device(), memory_, nullptr);  // also unmaps
  context_ = nullptr;
  buffer_ = VK_NULL_HANDLE;
  memory_ = VK_NULL_HANDLE;
  mapped_ = nullptr;
}

VkBuffer BufferFactory::create_buffer(VkDeviceSize size, bool external) const {
  VkExternalMemoryBufferCreateInfo external_info{};
  external_info.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO;
  external_info.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  VkBufferCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  info.pNext = external ? &external_info : nullptr;
  info.size = size;
  info.usage = buffer_usage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer buffer = VK_NULL_HANDLE;
  check(context_.vk().vkCreateBuffer(context_.device(), &info, nullptr, &buffer), "vkCreateBuffer");
  return buffer;
}

// An allocation the device cannot make at all is refused before the driver is asked: drivers may return
// VK_ERROR_OUT_OF_DEVICE_MEMORY for it, or fail in ways the specification leaves undefined.
void BufferFactory::check_allocation_size(VkDeviceSize bytes, int memory_type) const {
  const VkDeviceSize largest = context_.physical().max_allocation;
  const VkDeviceSize heap = context_.heap_size(memory_type);
  if ((largest > 0 && bytes > largest) || bytes > heap) {
    throw Error(fmt::format("Vulkan: cannot allocate {} on {}: its largest allocation is {} and its memory heap {}",
                            mib(bytes), context_.physical().info.name, mib(largest), mib(heap)));
  }
}

// Takes ownership of `buffer`: on failure it is destroyed with `result`.
Buffer BufferFactory::bind(VkBuffer buffer, VkDeviceSize size, int memory_type, const void* allocation_next) const {
  const DeviceFunctions& vk = context_.vk();
  Buffer result;
  result.context_ = &context_;
  result.buffer_ = buffer;
  result.size_ = size;
  result.serial_ = next_buffer_serial++;
  if (memory_type < 0) {
    throw Error(fmt::format("Vulkan: no suitable memory type for a buffer of {} bytes", size));
  }
  VkMemoryRequirements requirements{};
  vk.vkGetBufferMemoryRequirements(context_.device(), buffer, &requirements);
  VkMemoryAllocateInfo allocation{};
  allocation.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  allocation.pNext = allocation_next;
  allocation.allocationSize = allocation_next ? size : requirements.size;
  allocation.memoryTypeIndex = static_cast<std::uint32_t>(memory_type);
  check_allocation_size(allocation.allocationSize, memory_type);
  const VkResult allocated = vk.vkAllocateMemory(context_.device(), &allocation, nullptr, &result.memory_);
  if (allocated == VK_ERROR_OUT_OF_DEVICE_MEMORY || allocated == VK_ERROR_OUT_OF_HOST_MEMORY) {
    throw Error(
        fmt::format("Vulkan: out of {} memory allocating {} on {} ({}); the model can move to another "
                    "backend with set_backend, or run with a smaller input",
                    allocated == VK_ERROR_OUT_OF_DEVICE_MEMORY ? "device" : "host", mib(size),
                    context_.physical().info.name, result_name(allocated)));
  }
  check(allocated, "vkAllocateMemory");
  check(vk.vkBindBufferMemory(context_.device(), buffer, result.memory_, 0), "vkBindBufferMemory");
  result.device_local_ = (context_.memory_type_flags(memory_type) & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) != 0;
  return result;
}

Buffer BufferFactory::device_buffer(VkDeviceSize size) const {
  const VkBuffer buffer = create_buffer(size, false);
  VkMemoryRequirements requirements{};
  context_.vk().vkGetBufferMemoryRequirements(context_.device(), buffer, &requirements);
  int type = context_.find_memory_type(requirements.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (type < 0) type = context_.find_memory_type(requirements.memoryTypeBits, 0);
  return bind(buffer, size, type, nullptr);
}

Buffer BufferFactory::host_buffer(VkDeviceSize size) const {
  const VkBuffer buffer = create_buffer(size, false);
  VkMemoryRequirements requirements{};
  context_.vk().vkGetBufferMemoryRequirements(context_.device(), buffer, &requirements);
  // Cached memory: the host reads results back from these buffers.
  const int type = context_.find_memory_type(requirements.memoryTypeBits,
                                             VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                             VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  Buffer result = bind(buffer, size, type, nullptr);
  check(context_.vk().vkMapMemory(context_.device(), result.memory_, 0, VK_WHOLE_SIZE, 0, &result.mapped_),
        "vkMapMemory");
  return result;
}

std::optional<Buffer> BufferFactory::import_host(void* pointer, VkDeviceSize bytes) const {
  const VkDeviceSize alignment = context_.import_alignment();
  if (!context_.host_import() || alignment == 0 || reinterpret_cast<std::uintptr_t>(pointer) % alignment != 0 ||
      bytes % alignment != 0) {
    return std::nullopt;
  }
  VkMemoryHostPointerPropertiesEXT pointer_properties{};
  pointer_properties.sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT;
  if (context_.vk().vkGetMemoryHostPointerPropertiesEXT(context_.device(),
                                                        VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, pointer,
                                                        &pointer_properties) != VK_SUCCESS) {
    return std::nullopt;
  }
  const VkBuffer buffer = create_buffer(bytes, true);
  VkMemoryRequirements requirements{};
  context_.vk().vkGetBufferMemoryRequirements(context_.device(), buffer, &requirements);
  // Coherent, since the host writes and reads the pages directly, with no flush; device-local where the
  // device shares the host's memory (integrated GPUs, lavapipe).
  const int type = context_.find_memory_type(requirements.memoryTypeBits & pointer_properties.memoryTypeBits,
                                             VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (type < 0 || requirements.size > bytes) {
    context_.vk().vkDestroyBuffer(context_.device(), buffer, nullptr);
    return std::nullopt;
  }
  VkImportMemoryHostPointerInfoEXT import{};
  import.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT;
  import.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  import.pHostPointer = pointer;
  return bind(buffer, bytes, type, &import);
}

}  // namespace corgy::vulkan
