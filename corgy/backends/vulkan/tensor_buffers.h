// Where each Variable lives on the device, keyed by its Storage::id():
//  - constants (weights): a device-local buffer, uploaded once by upload_constant();
//  - device-only intermediates (Backend::set_device_only): a device-local buffer, never copied;
//  - everything else is a host tensor, readable by the caller after a forward. Its host side is the Storage's
//    own pages imported as a buffer (zero-copy) or else a staging buffer; kernels use that buffer directly when
//    its memory is device-local (integrated GPUs, lavapipe) and a device-local shadow otherwise (discrete GPUs),
//    filled and emptied by copies recorded in the forward's command buffer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <span>
#include <unordered_map>
#include <vector>

#include "corgy/backends/vulkan/device_memory.h"
#include "corgy/variable.h"

namespace corgy::vulkan {

/// The element type of a tensor's buffer: fp16 only for device-only intermediates with fp16 precision.
enum class TensorFormat { fp32, fp16 };

/// IEEE 754 binary16 of a float, rounded to nearest even (weights; overflow becomes infinity).
std::uint16_t to_half(float value);

inline VkDeviceSize element_bytes(TensorFormat format) { return format == TensorFormat::fp16 ? 2 : 4; }

/// One buffer a dispatch binds, and the bytes of it the dispatch touches.
struct BufferUse {
  const Buffer* buffer = nullptr;
  VkDeviceSize bytes = 0;  // bound from offset 0
  bool writes = false;
  /// First byte the dispatch touches; with `bytes`, the region checked for hazards between dispatches (the
  /// copies of a concatenation write disjoint regions of one buffer and need no barrier between them).
  VkDeviceSize region_begin = 0;
  /// What the elements are; a kernel that reads only fp32 gets fp16 tensors converted (CommandRecorder).
  TensorFormat format = TensorFormat::fp32;
  /// Elements of the tensor (bytes / element size, for a conversion).
  std::size_t count = 0;
};

enum class TensorPlace { constant, device_only, host };

struct TensorEntry {
  std::shared_ptr<Storage> storage;  // keeps imported pages alive; dropped once nobody else holds the storage
  TensorPlace place = TensorPlace::host;
  Buffer host;    // host tensors: the imported pages or a staging buffer
  Buffer device;  // constants, intermediates, and shadows of host tensors whose `host` is not device-local
  bool imported = false;
  // This forward: bytes to bring to the device before the first dispatch, and bytes written (to bring back).
  VkDeviceSize upload_bytes = 0;
  VkDeviceSize download_bytes = 0;
  bool touched = false;

  // Device-only intermediates: the format the last writer of this forward used.
  TensorFormat format = TensorFormat::fp32;
  // Constants with fp16 precision: a copy in fp16 with rows padded to a multiple of 8 halves (the A operand of
  // conv2d_coopmat.comp), made on first use.
  Buffer half_rows;
  std::uint32_t half_row_length = 0;
  // Constants: copies rearranged for kernels (Winograd's transformed weights), each made on first use and kept,
  // one per arrangement: a model planned at several input shapes (Sequential::set_kept_plans) may pick another
  // algorithm at each, and must not rebuild the arrangement at every change of shape.
  struct Derived {
    const void* kind;
    Buffer buffer;
  };
  std::vector<std::unique_ptr<Derived>> derived;  // unique_ptr: a pending upload targets the Buffer's address

  const Buffer& kernel_buffer() const { return device.empty() ? host : device; }
};

/// A copy the forward's command buffer records, or the host does around the submission.
struct HostTransfer {
  TensorEntry* entry;
  VkDeviceSize bytes;
};

class TensorBuffers {
 public:
  /// With half_intermediates, device-only intermediates may be written in fp16 (write(tensor, true)).
  TensorBuffers(const Context& context, bool force_staging, bool half_intermediates = false);

  /// Replaces the set of storages that are device-only intermediates.
  void set_device_only(std::span<const std::uint64_t> storage_ids);
  /// Adds one storage to that set (the backend's own scratch tensors; the next set_device_only drops it).
  void add_device_only(std::uint64_t storage_id) { device_only_.insert(storage_id); }
  /// Copies `tensor` into a device-local buffer, through a staging buffer whose copy the next forward sends first.
  void upload_constant(const Variable& tensor);
  bool has_pending_constants() const { return !pending_constants_.empty(); }
  /// The pending constant copies, recorded into `command_buffer`.
  void record_constant_uploads(VkCommandBuffer command_buffer);
  /// Frees the staging buffers of the constant copies once they have run.
  void finish_constant_uploads() { pending_constants_.clear(); }

  /// Starts a forward: forgets last forward's accesses and frees buffers of storages nobody else holds.
  void begin_forward();
  /// The buffer a kernel reads for `tensor`; a host tensor read before it is written gets uploaded. Its format
  /// is what the tensor's last writer in this forward stored (fp32 unless that writer allowed fp16).
  BufferUse read(const Variable& tensor);
  /// The buffer a kernel writes for `tensor`; a host tensor written gets downloaded after the forward. With
  /// `allow_fp16`, a device-only intermediate is written in fp16 when the precision is fp16.
  BufferUse write(const Variable& tensor, bool allow_fp16 = false);
  /// A constant (OIHW weights, `rows` x `row_length`) as fp16 with rows padded to a multiple of 8 halves; made
  /// and uploaded before the forward's submission (CommandRecorder::end sends pending constants first).
  BufferUse half_rows(const Variable& constant, std::uint32_t row_length);

  /// A constant rearranged for a kernel: `fill` writes its `bytes` (on the host) once, at first use, and again
  /// after the constant changes; `kind` (any address unique to the arrangement) tells arrangements apart.
  BufferUse derived_constant(const Variable& constant, const void* kind, VkDeviceSize bytes,
                             const std::function<void(const float* values, void* destination)>& fill);

  /// This forward's transfers, in the order they must happen.
  std::vector<HostTransfer> uploads() const;
  std::vector<HostTransfer> downloads() const;
  /// Host copies of staged tensors: into staging buffers before the submission, out of them after it.
  void copy_into_staging(const std::vector<HostTransfer>& uploads) const;
  void copy_out_of_staging(const std::vector<HostTransfer>& downloads) const;

  bool zero_copy() const;

 private:
  TensorEntry& entry_for(const Variable& tensor);
  /// Throws corgy::Error when `tensor` is larger than one storage buffer binding may be (maxStorageBufferRange).
  void check_binding_range(const Variable& tensor) const;
  void make_host_buffers(TensorEntry& entry);

  const Context& context_;
  BufferFactory factory_;
  bool force_staging_;
  bool half_intermediates_;
  std::set<std::uint64_t> device_only_;
  std::unordered_map<std::uint64_t, std::unique_ptr<TensorEntry>> entries_;
  std::vector<TensorEntry*> touched_;  // this forward's host tensors, in the order of first use
  struct PendingConstant {
    Buffer staging;
    const Buffer* target;
    VkDeviceSize bytes;
  };
  std::vector<PendingConstant> pending_constants_;
};

}  // namespace corgy::vulkan
