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

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
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

/// How convolutions run (VulkanOptions::convolution).
///  - automatic: per layer, the fastest that fits (docs/vulkan.md#convolution);
///  - im2col_gemm: im2col.comp + gemm_tiled.comp, the reference path;
///  - implicit_gemm: conv2d_implicit_gemm.comp, fp32 arithmetic on fp32 or fp16 tensors;
///  - cooperative_matrix: conv2d_coopmat.comp on tensor cores; needs fp16 precision and a device that offers it;
///  - patch_cooperative_matrix: conv2d_patch_coopmat.comp, tensor cores over an input patch in shared memory, for
///    one group (patch_coopmat_conv.h); automatic picks it in fp16 on tensor cores up to 16 input channels where the
///    direct kernel does not fit (the second layer of an RGB network), and the tuner times it on every layer;
///  - direct: conv2d_direct.comp, for one group with K = in channels * kernel * kernel of at most 160; automatic
///    picks it up to K = 32 (the first layer of an RGB network) unless a GEMM tile shape is forced;
///  - winograd: Winograd's F(2x2, 3x3) (winograd_conv.h), for 3x3 convolutions at stride 1 without dilation or
///    groups: 2.25x fewer multiplications through 16 batched gemm_tiled.comp GEMMs; automatic picks it for wide
///    layers with many output tiles in fp32 precision. VulkanOptions::gemm_tiles forces its GEMMs' tile shape.
/// Depthwise convolutions always run depthwise_conv2d.comp.
enum class VulkanConvAlgorithm {
  automatic,
  im2col_gemm,
  implicit_gemm,
  cooperative_matrix,
  patch_cooperative_matrix,
  direct,
  winograd
};

/// conv2d_coopmat.comp's tile: warps_m x warps_n subgroups, each frags_m x frags_n 16x16 fragments of C, steps of
/// tile_k along K. All zero lets the backend choose.
struct VulkanCoopmatTiles {
  std::uint32_t warps_m = 0;
  std::uint32_t warps_n = 0;
  std::uint32_t frags_m = 0;
  std::uint32_t frags_n = 0;
  std::uint32_t tile_k = 0;

  bool automatic() const { return warps_m == 0; }
  std::uint32_t tile_m() const { return warps_m * frags_m * 16; }
  std::uint32_t tile_n() const { return warps_n * frags_n * 16; }
  std::uint32_t threads() const { return warps_m * warps_n * 32; }
  /// One stage of A and B tiles (fp16, rows padded by 16 bytes), which the epilogue's 16x16 fp32 and fp16 scratch
  /// per subgroup then reuse.
  std::uint32_t shared_bytes() const {
    const std::uint32_t stage = tile_m() * (tile_k + 8) * 2 + tile_k * (tile_n() + 8) * 2;
    return std::max(stage, warps_m * warps_n * (1024 + 512));
  }
};

/// Whether convolution plans are measured on the device (docs/vulkan.md#tuning).
enum class VulkanTuning {
  /// On for GPUs; off on CPU devices (lavapipe), where a timing measures the CPU and every test would pay for it.
  automatic,
  /// Time the candidate plans of each new convolution shape on any device (the tuning tests on lavapipe).
  on,
  /// The static tables only.
  off,
};

/// Forces a convolution plan, for benchmarks and tests; the defaults let the backend choose per layer.
struct VulkanConvolutionOptions {
  VulkanConvAlgorithm algorithm = VulkanConvAlgorithm::automatic;
  /// conv2d_implicit_gemm.comp's tile (the same rules as gemm_tiled.comp's).
  VulkanGemmTiles tiles{};
  VulkanCoopmatTiles coopmat_tiles{};
  /// K split into this many parts, summed by conv2d_split_k_reduce.comp; 0 chooses, 1 never splits.
  std::uint32_t split_k = 0;
  /// With split_k 0: the most parts the choice may split K into (0: the planner's own limit, 16).
  std::uint32_t most_splits = 0;
  /// Fuse a following 2x2 stride-2 max pool into the convolution's output (false: a separate pool2d dispatch).
  bool fuse_pool = true;
  /// Add a residual connection (Backend::conv2d_add) as the convolution writes, where its kernel can (the implicit
  /// GEMMs, Winograd); false: add.comp after it. With tuning on, the tuner also times the best plan without it.
  bool fuse_residual = true;
  /// Time the plans that fit each new convolution shape at its first forward and keep the fastest (conv_tuner.h);
  /// the static tables' choice is the first candidate and what runs with `off`. Forcing the algorithm, a tile
  /// shape, the split of K or VulkanOptions::gemm_tiles turns tuning off: what is forced runs.
  VulkanTuning tuning = VulkanTuning::automatic;
};

struct VulkanOptions {
  /// "" picks the best device: a discrete GPU, else an integrated one, else any other, a CPU (lavapipe) last.
  /// A number picks by index in vulkan_devices(); other text picks the first device whose name contains it
  /// (case-insensitive). Throws corgy::Error, listing the devices, when nothing matches.
  std::string device;
  /// Enables VK_LAYER_KHRONOS_validation. Every error, and every warning of the layer's checks of corgy's calls,
  /// is counted (stats()), and end_forward() throws corgy::Error when a new one arrived since the last check. The
  /// loader's and the layers' general notices (such as the loader's about an exported VK_INSTANCE_LAYERS) are not.
  bool validation = false;
  /// Receives each counted validation message; when unset they are printed to stderr. Called one message at a time,
  /// but possibly from the backend's pipeline-compiling threads as well as the caller's.
  std::function<void(const std::string&)> on_validation_message;
  /// Copy Variables through staging buffers even where host memory could be imported (tests, measurements).
  bool force_staging = false;
  /// gemm_tiled.comp's tile (im2col convolutions, matmul).
  VulkanGemmTiles gemm_tiles{};
  VulkanConvolutionOptions convolution{};
  /// Precision::fp16: see corgy::Precision. Falls back to fp32 where the device lacks 16-bit storage, and to
  /// conv2d_implicit_gemm_fp16 (fp32 arithmetic on fp16 tensors) where it lacks cooperative matrices.
  Precision precision = Precision::fp32;
  /// How long, in microseconds, a forward polls its fence before it sleeps in the driver's blocking wait. A
  /// blocking wait wakes up tens of microseconds after the GPU finishes on some drivers, which is a large part of
  /// a sub-millisecond forward; polling keeps one CPU thread busy meanwhile. The poll is skipped while the
  /// previous wait lasted longer than this (large batches sleep at once). 0: always sleep.
  int spin_wait_us = 1000;
  /// The file where measured convolution plans are kept for later processes on this device model (JSON Lines;
  /// docs/vulkan.md#tuning). Empty: vulkan-tuning-<vendor id>-<device id>.jsonl in $XDG_CACHE_HOME/corgy, else
  /// ~/.cache/corgy. A file of another device, driver, corgy version or kernels, or that does not parse, is
  /// ignored and replaced; one that cannot be written leaves a note on stderr and the plans in memory.
  std::string tuning_cache{};
  /// The driver's compiled pipelines are kept beside it, in <tuning_cache>.pipelines (default:
  /// vulkan-pipelines-<vendor id>-<device id>.bin in the same folder): a later process skips their compiles.
  /// false: plans are measured (when tuning is on) and kept for the backend's life, but no file is read or written.
  bool use_tuning_cache = true;
  /// The Vulkan loader library to open.
  std::string loader = "libvulkan.so.1";
  /// Keep the driver's statistics of each compute pipeline compiled (VK_KHR_pipeline_executable_properties; on
  /// NVIDIA's driver the registers per invocation, local memory for spills, shared memory), for kernel work:
  /// VulkanBackend::pipeline_statistics() lists them. Where the device does not offer them (lavapipe) nothing is kept.
  bool pipeline_statistics = false;
};

/// One compute pipeline's statistics as its driver reports them (VulkanOptions::pipeline_statistics).
struct VulkanPipelineStatistics {
  std::string kernel;                                              // the embedded kernel, e.g. "conv2d_coopmat_fp16"
  std::vector<std::pair<std::uint32_t, std::uint32_t>> constants;  // its specialization constants: id, value
  std::vector<std::pair<std::string, std::string>> values;         // the driver's name and value of each statistic
};

/// Counters that show what the backend did; tests check them, benchmarks print them.
struct VulkanStats {
  std::uint64_t submissions = 0;         // command buffers submitted: one per forward
  std::uint64_t recordings = 0;          // command buffers recorded: once per model and input shape
  std::uint64_t upload_submissions = 0;  // one-time weight uploads, sent before the forward that needs them
  std::uint64_t validation_messages = 0;
  int last_dispatches = 0;       // compute dispatches in the last forward
  int last_barriers = 0;         // pipeline barriers in the last forward
  double last_gpu_ms = 0.0;      // GPU time of the last forward's command buffer (timestamps; 0 if unsupported)
  double last_compute_ms = 0.0;  // ... of its dispatches alone, without the copies of host tensors
  // Convolution tuning (VulkanConvolutionOptions::tuning), since the backend was made:
  std::uint64_t conv_plans_timed = 0;       // convolution shapes whose candidate plans were timed on the device
  std::uint64_t conv_candidates_timed = 0;  // candidate plans timed for them
  std::uint64_t conv_plans_from_cache = 0;  // shapes whose plan came from the tuning cache file, without timing
  double tuning_ms = 0.0;                   // host time spent choosing (describing, compiling and timing candidates)
  double tuning_timing_ms = 0.0;            // ... of it in the candidates' timed runs (recording, submitting, waiting)
  // Pipelines (a kernel with its specialization constants) compiled by the driver for the forwards and the tuning's
  // candidates, and the driver's time for them (vkCreateComputePipelines, summed over the threads that compile side
  // by side; as of the end of the last forward).
  std::uint64_t pipelines_compiled = 0;
  double pipeline_compile_ms = 0.0;
  // Bytes of the driver's pipeline cache read from the file beside the tuning cache (0: none, or not usable here).
  std::uint64_t pipeline_cache_loaded_bytes = 0;
};

/// One dispatch of the last forward, with profiling on (VulkanBackend::set_profiling).
struct VulkanDispatchProfile {
  int layer = -1;         // Backend::begin_layer's index; -1 outside a layer
  std::string operation;  // "conv2d", "pool2d", ...
  std::string kernel;     // the shader (kernels/<name>.comp; _fp16 for a half-precision variant)
  std::string detail;     // what was chosen for it: tile shape, split-K, fused pool
  double flops = 0.0;     // multiply-adds count 2; 0 for data movement
  double ms = 0.0;        // GPU time from the end of the previous dispatch (timestamps)
};

namespace vulkan {
struct Runtime;
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
  /// The precision in use: fp16 only when asked for and the device has 16-bit storage.
  Precision precision() const;
  /// Convolutions run on cooperative matrices (tensor cores): fp16 precision on a device that offers them.
  bool cooperative_matrix() const;
  /// Pipeline statistics are kept: asked for (VulkanOptions::pipeline_statistics) and offered by the device.
  bool keeps_pipeline_statistics() const;
  /// The statistics of every pipeline compiled so far, in the order their compiles finished (empty unless
  /// keeps_pipeline_statistics()).
  std::vector<VulkanPipelineStatistics> pipeline_statistics() const;

  /// Timestamps around every dispatch of the following forwards (a little slower); dispatch_profile() then
  /// lists the last forward's dispatches with their GPU time, and take_profile() every dispatch since its last
  /// call as "kernel plan" (e.g. "conv2d_coopmat_fp16 128x128x32 (2x4 warps of 4x2) +maxpool").
  void set_profiling(bool enabled) override;
  const std::vector<VulkanDispatchProfile>& dispatch_profile() const;
  std::vector<OpProfile> take_profile() override;
  /// The layer whose operations follow (for the profile); Sequential calls it before each layer.
  void begin_layer(int index) override;

  void set_device_only(std::span<const std::uint64_t> storage_ids) override;
  void upload_constant(const Variable& tensor) override;
  void begin_forward() override;
  void end_forward() override;

  void conv2d(const Conv2dDesc& desc, const Variable& input, const Variable& weights, const Variable* bias,
              Variable& output) override;
  /// output = maxpool(activation(conv(input) + bias)): a 2x2 stride-2 max pool is applied as the convolution
  /// writes its output (one dispatch, the unpooled output never stored); other pools run as a second dispatch.
  void conv2d_maxpool(const Conv2dDesc& conv, const Pool2dDesc& pool, const Variable& input, const Variable& weights,
                      const Variable* bias, Variable& output) override;
  /// The convolution, then add.comp with the activation, in place.
  void conv2d_add(const Conv2dDesc& desc, const Variable& input, const Variable& weights, const Variable* bias,
                  const Variable& residual, Variable& output) override;
  /// The three convolutions as their own dispatches, through scratch tensors.
  void inverted_residual(const InvertedResidualDesc& desc, const Variable& input, const Variable* residual,
                         Variable& output) override;
  /// The pool, the two 1x1 convolutions and the product as their own dispatches, through scratch tensors.
  void preactivated_conv2d(const Conv2dDesc& desc, std::span<const Variable* const> inputs, const Variable& scale,
                           const Variable& shift, Activation input_activation, const Pool2dDesc* input_pool,
                           const Variable& weights, const Variable* bias, Variable& output) override;
  void squeeze_excite(const SqueezeExciteDesc& desc, const Variable& input, const Variable& reduce_weights,
                      const Variable* reduce_bias, const Variable& expand_weights, const Variable* expand_bias,
                      Variable& output) override;
  /// Defined in vulkan_squeeze_excite.cpp: the block's dispatches into a scratch tensor, then the convolution's.
  void squeeze_excite_conv2d(const SqueezeExciteDesc& excite, const SqueezeExciteWeights& excite_weights,
                             const Conv2dDesc& conv, const Variable& input, const Variable& weights,
                             const Variable* bias, const Variable* residual, Variable& output) override;
  void pool2d(const Pool2dDesc& desc, const Variable& input, Variable& output) override;
  void activation(Activation activation, const Variable& input, Variable& output) override;
  void linear(const Variable& input, const Variable& weights, const Variable* bias, Activation activation,
              Variable& output) override;
  void softmax(const Variable& input, Variable& output) override;
  void channel_affine(const Variable& input, const Variable& scale, const Variable& shift, Activation activation,
                      Variable& output) override;
  void upsample_nearest(int scale, const Variable& input, Variable& output) override;
  void concat_channels(std::span<const Variable* const> inputs, Variable& output) override;
  void gather_channels(const ChannelGatherDesc& desc, const Variable& input, Variable& output) override;
  /// A thread per copied element (kernels/copy_strided.comp; vulkan_strided_copy.cpp).
  void copy_strided(const StridedCopyDesc& desc, const Variable& input, Variable& output) override;
  void add(const Variable& a, const Variable& b, Activation activation, Variable& output) override;
  void matmul(const Variable& a, bool transpose_a, const Variable& b, bool transpose_b, Variable& c) override;
  // Arithmetic on tensors of any rank, defined in vulkan_tensor_math.cpp.
  void broadcast_binary(BinaryOp op, const BroadcastDesc& desc, const Variable& a, const Variable& b,
                        Variable& output) override;
  void unary(UnaryOp op, const Variable& input, Variable& output) override;
  void reduce_axis(ReduceOp op, const AxisExtent& axis, const Variable& input, Variable& output) override;
  void softmax_axis(const AxisExtent& axis, bool log, const Variable& input, Variable& output) override;
  void batched_matmul(const BatchedMatmulDesc& desc, const Variable& a, const Variable& b, Variable& output) override;
  void layer_norm(const AxisExtent& axis, float epsilon, const Variable& scale, const Variable& shift,
                  const Variable& input, Variable& output) override;
  // Defined in files of their own (vulkan_instance_norm.cpp, vulkan_pad.cpp, vulkan_elementwise.cpp, vulkan_prelu.cpp,
  // vulkan_conv_transpose.cpp, vulkan_resize.cpp).
  void instance_norm(const Variable& input, const Variable& scale, const Variable& shift, float epsilon,
                     Activation activation, Variable& output) override;
  void pad(const PadDesc& desc, const Variable& input, Variable& output) override;
  void elementwise(ElementwiseOp op, const Variable& a, const Variable& b, Variable& output) override;
  void prelu(const Variable& input, const Variable& slope, Variable& output) override;
  /// A thread per output value that gathers what the input pixels scatter to it (kernels/conv_transpose2d.comp).
  void conv_transpose2d(const ConvTranspose2dDesc& desc, const Variable& input, const Variable& weights,
                        const Variable* bias, Variable& output) override;
  void resize(const ResizeDesc& desc, const Variable& input, Variable& output) override;

 private:
  /// Runs `record` inside begin_forward()/end_forward() when called outside a forward (a lone operation);
  /// `operation` names the dispatches it adds in the profile.
  void as_forward(const char* operation, const std::function<void()>& record);
  void as_forward(const std::function<void()>& record) { as_forward(nullptr, record); }

  std::unique_ptr<vulkan::Runtime> runtime_;
};

}  // namespace corgy
