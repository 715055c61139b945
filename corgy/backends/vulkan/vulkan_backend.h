// VulkanBackend: runs every Backend operation as a compute shader (kernels/*.comp) on a Vulkan device.
//
//   corgy::Sequential model = ...;
//   model.set_backend("vulkan");            // or "vulkan:1", "vulkan:NVIDIA", or a VulkanBackend with options
//   const corgy::Variable& out = model.forward(input);
//
// A whole Sequential forward is recorded into one command buffer and submitted once. Page-aligned Variables are
// imported as device buffers (VK_EXT_external_memory_host) where the driver offers it, so inputs and outputs
// need no staging copy; weights are uploaded once. See docs/vulkan.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "corgy/backend.h"

namespace corgy {

/// A Vulkan device as the loader reports it.
struct VulkanDeviceInfo {
  int index = 0;             // position in the driver's list, as in "vulkan:<index>"
  std::string name;          // e.g. "NVIDIA H100 80GB HBM3", "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string type;          // "discrete GPU", "integrated GPU", "virtual GPU", "CPU" or "other"
  std::string driver;        // driver name and version, e.g. "NVIDIA 580.159.4"
  std::string api_version;   // e.g. "1.3.230"
  bool host_import = false;  // offers VK_EXT_external_memory_host: Variables are used without a copy

  bool is_gpu() const { return type == "discrete GPU" || type == "integrated GPU"; }
};

/// Every Vulkan device the loader reports, in its order (empty when there is none). Throws corgy::Error when
/// the Vulkan loader cannot be opened or refuses to create an instance.
std::vector<VulkanDeviceInfo> vulkan_devices();

/// A tile shape of the GEMM kernel (kernels/gemm_tiled.comp): a workgroup computes a tile_m x tile_n block of C
/// in steps of tile_k, each thread a thread_m x thread_n block of it. All zero (the default) lets the backend
/// choose by problem size; benchmarks and tests may force one, which the first GEMM checks against the kernel's
/// rules and the device's limits (corgy::Error when it does not fit).
struct VulkanGemmTiles {
  std::uint32_t tile_m = 0;
  std::uint32_t tile_n = 0;
  std::uint32_t tile_k = 0;
  std::uint32_t thread_m = 0;
  std::uint32_t thread_n = 0;

  bool automatic() const { return tile_m == 0; }
  std::uint32_t threads() const { return thread_m && thread_n ? (tile_m / thread_m) * (tile_n / thread_n) : 0; }
  /// Two stages of A and B tiles in shared memory.
  std::uint32_t shared_bytes() const { return 2 * tile_k * (tile_m + tile_n) * 4; }
};

struct VulkanOptions {
  /// "" picks the best device: a discrete GPU, else an integrated one, else any other, a CPU (lavapipe) last.
  /// A number picks by index in vulkan_devices(); other text picks the first device whose name contains it
  /// (case-insensitive). Throws corgy::Error, listing the devices, when nothing matches.
  std::string device;
  /// Enables VK_LAYER_KHRONOS_validation. Every warning or error it reports is counted (stats()), and
  /// end_forward() throws corgy::Error when a new one arrived since the last check.
  bool validation = false;
  /// Receives each validation message; when unset they are printed to stderr.
  std::function<void(const std::string&)> on_validation_message;
  /// Copy Variables through staging buffers even where host memory could be imported (tests, measurements).
  bool force_staging = false;
  VulkanGemmTiles gemm_tiles{};
  /// The Vulkan loader library to open.
  std::string loader = "libvulkan.so.1";
};

/// Counters that show what the backend did; tests check them, benchmarks print them.
struct VulkanStats {
  std::uint64_t submissions = 0;         // command buffers submitted: one per forward
  std::uint64_t recordings = 0;          // command buffers recorded: once per model and input shape
  std::uint64_t upload_submissions = 0;  // one-time weight uploads, sent before the forward that needs them
  std::uint64_t validation_messages = 0;
  int last_dispatches = 0;   // compute dispatches in the last forward
  int last_barriers = 0;     // pipeline barriers in the last forward
  double last_gpu_ms = 0.0;  // GPU time of the last forward (timestamp queries; 0 if unsupported)
};

namespace vulkan {
class Runtime;
}

class VulkanBackend final : public Backend {
 public:
  /// Opens the loader, picks a device and creates the context. Throws corgy::Error when there is no loader, no
  /// device, no device matching options.device, or validation is asked for but the layer is not installed.
  explicit VulkanBackend(const VulkanOptions& options = {});
  ~VulkanBackend() override;

  std::string name() const override { return "vulkan"; }
  const VulkanDeviceInfo& device() const;
  /// True when Variables are imported (zero-copy); false when they go through staging buffers.
  bool zero_copy() const;
  const VulkanStats& stats() const;

  void set_device_only(std::span<const std::uint64_t> storage_ids) override;
  void upload_constant(const Variable& tensor) override;
  void begin_forward() override;
  void end_forward() override;

  void conv2d(const Conv2dDesc& desc, const Variable& input, const Variable& weights, const Variable* bias,
              Variable& output) override;
  void conv2d_maxpool(const Conv2dDesc& conv, const Pool2dDesc& pool, const Variable& input, const Variable& weights,
                      const Variable* bias, Variable& output) override;
  void pool2d(const Pool2dDesc& desc, const Variable& input, Variable& output) override;
  void activation(Activation activation, const Variable& input, Variable& output) override;
  void linear(const Variable& input, const Variable& weights, const Variable* bias, Activation activation,
              Variable& output) override;
  void softmax(const Variable& input, Variable& output) override;
  void channel_affine(const Variable& input, const Variable& scale, const Variable& shift, Variable& output) override;
  void upsample_nearest(int scale, const Variable& input, Variable& output) override;
  void concat_channels(std::span<const Variable* const> inputs, Variable& output) override;
  void add(const Variable& a, const Variable& b, Activation activation, Variable& output) override;
  void matmul(const Variable& a, bool transpose_a, const Variable& b, bool transpose_b, Variable& c) override;
  // Defined in files of their own (vulkan_instance_norm.cpp, vulkan_pad.cpp, vulkan_elementwise.cpp, vulkan_prelu.cpp).
  void instance_norm(const Variable& input, const Variable& scale, const Variable& shift, float epsilon,
                     Activation activation, Variable& output) override;
  void pad(const PadDesc& desc, const Variable& input, Variable& output) override;
  void elementwise(ElementwiseOp op, const Variable& a, const Variable& b, Variable& output) override;
  void prelu(const Variable& input, const Variable& slope, Variable& output) override;

 private:
  /// Runs `record` inside begin_forward()/end_forward() when called outside a forward (a lone operation).
  void as_forward(const std::function<void()>& record);

  std::unique_ptr<vulkan::Runtime> runtime_;
};

}  // namespace corgy
