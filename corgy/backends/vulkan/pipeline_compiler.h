// Compiles compute pipelines on worker threads. The driver's compiler is slow on large kernels (NVIDIA's took 0.2 to
// 0.5 s per cooperative-matrix pipeline on an H100, driver 580), and a first forward or a tuned layer asks for many:
// compiled one after another, ResNet-50's 80 pipelines took 37 s of its first forward at fp16. Started as soon as an
// operation asks for its pipeline and waited for only where a command buffer binds it, they compile side by side:
// the forward's pipelines while the rest of it is described, a tuned layer's candidates together.
//
// The driver's pipeline cache (VkPipelineCache) is kept in a file between processes, beside the tuning cache: a
// process that plans from the tuning cache then also skips the compiles. The file is the driver's data behind a
// header of corgy's (a magic string, the data's size and an FNV-1a hash of it); a file whose hash or size does not
// match, or whose data's Vulkan header names another vendor, device or pipeline-cache UUID, is not given to the
// driver. Writes go through a temporary file and a rename; a file that cannot be written changes nothing but speed
// and says nothing (the tuning cache notes an unwritable folder).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "corgy/backends/vulkan/vulkan_context.h"

namespace corgy::vulkan {

/// What one pipeline is compiled from; the module and layout outlive the compile (PipelineCache owns them).
struct PipelineSource {
  std::string kernel;  // for error messages
  VkShaderModule module = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  std::vector<std::uint32_t> constant_ids;
  std::vector<std::uint32_t> constant_values;
};

/// The file's bytes for the driver's pipeline-cache data `driver_data`.
std::string pipeline_cache_file_bytes(std::string_view driver_data);
/// The driver's data in file bytes `file_bytes`, when they are a whole file of pipeline_cache_file_bytes written by a
/// library with these kernels (embedded_kernels_fingerprint) and the data's header (VkPipelineCacheHeaderVersionOne)
/// is `properties`' vendor, device and pipeline-cache UUID; none otherwise.
std::optional<std::string_view> pipeline_cache_driver_data(std::string_view file_bytes,
                                                           const VkPhysicalDeviceProperties& properties);

class PipelineCompiler {
 public:
  /// `cache_file`: where the driver's pipeline cache is read from now and saved to (save()); empty for none.
  PipelineCompiler(const Context& context, std::filesystem::path cache_file);
  /// Waits for the compiles in flight, then stops the workers; the pipelines made belong to whoever asked for them.
  ~PipelineCompiler();
  PipelineCompiler(const PipelineCompiler&) = delete;
  PipelineCompiler& operator=(const PipelineCompiler&) = delete;

  /// Starts compiling `source` on a worker thread (started at the first call); the future holds the pipeline, or
  /// the corgy::Error that says why the driver refused it.
  std::shared_future<VkPipeline> compile(PipelineSource source);

  /// The driver's compile time so far, summed over the workers (they overlap: more than anyone waited).
  double compile_ms() const { return static_cast<double>(compile_ns_.load()) * 1e-6; }

  /// Bytes of the driver's data read from the cache file at construction (0: none, or the file was not used).
  std::size_t loaded_bytes() const { return loaded_bytes_; }

  /// Writes the driver's cache to the file when pipelines were compiled since the last save. Never throws.
  void save();

  /// The driver's statistics of each pipeline compiled so far, where the context enabled them
  /// (DeviceFeatures::pipeline_statistics); empty otherwise.
  std::vector<VulkanPipelineStatistics> statistics() const;

 private:
  VkPipeline create(const PipelineSource& source);
  void keep_statistics(const PipelineSource& source, VkPipeline pipeline);
  void work();

  const Context& context_;
  std::filesystem::path cache_file_;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  std::size_t loaded_bytes_ = 0;
  std::atomic<std::uint64_t> compiled_{0};
  std::uint64_t saved_compiled_ = 0;
  std::atomic<std::uint64_t> compile_ns_{0};
  mutable std::mutex statistics_mutex_;
  std::vector<VulkanPipelineStatistics> statistics_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<VkPipeline()>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace corgy::vulkan
