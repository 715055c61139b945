// Compiles compute pipelines on worker threads. The driver's compiler is slow on large kernels (NVIDIA's took 0.2 to
// 0.5 s per cooperative-matrix pipeline on an H100, driver 580), and a first forward or a tuned layer asks for many:
// compiled one after another, ResNet-50's 80 pipelines took 37 s of its first forward at fp16. Started as soon as an
// operation asks for its pipeline and waited for only where a command buffer binds it, they compile side by side:
// the forward's pipelines while the rest of it is described, a tuned layer's candidates together.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <string>
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

class PipelineCompiler {
 public:
  explicit PipelineCompiler(const Context& context);
  /// Waits for the compiles in flight, then stops the workers; the pipelines made belong to whoever asked for them.
  ~PipelineCompiler();
  PipelineCompiler(const PipelineCompiler&) = delete;
  PipelineCompiler& operator=(const PipelineCompiler&) = delete;

  /// Starts compiling `source` on a worker thread (started at the first call); the future holds the pipeline, or
  /// the corgy::Error that says why the driver refused it.
  std::shared_future<VkPipeline> compile(PipelineSource source);

  /// The driver's compile time so far, summed over the workers (they overlap: more than anyone waited).
  double compile_ms() const { return static_cast<double>(compile_ns_.load()) * 1e-6; }

 private:
  VkPipeline create(const PipelineSource& source);
  void work();

  const Context& context_;
  std::atomic<std::uint64_t> compile_ns_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<VkPipeline()>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace corgy::vulkan
