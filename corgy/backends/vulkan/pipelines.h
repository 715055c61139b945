// Compute pipelines: one per kernel and set of specialization constants, created on first use and kept for the
// backend's life, with the descriptor-set and pipeline layouts they need. The driver compiles them on worker threads
// (pipeline_compiler.h): a pipeline is waited for where a command buffer binds it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "corgy/backends/vulkan/kernel_params.h"
#include "corgy/backends/vulkan/pipeline_compiler.h"
#include "corgy/backends/vulkan/vulkan_backend.h"
#include "corgy/backends/vulkan/vulkan_context.h"

namespace corgy::vulkan {

/// Values for a kernel's `layout(constant_id = ...)` constants, set through the kernel's named ids.
class SpecializationConstants {
 public:
  template <class Id>
  SpecializationConstants& set(Id id, std::uint32_t value) {
    ids_.push_back(static_cast<std::uint32_t>(id));
    values_.push_back(value);
    return *this;
  }
  /// GLSL bool constants are 32-bit.
  template <class Id>
  SpecializationConstants& set_flag(Id id, bool value) {
    return set(id, value ? 1u : 0u);
  }
  const std::vector<std::uint32_t>& ids() const { return ids_; }
  const std::vector<std::uint32_t>& values() const { return values_; }

 private:
  std::vector<std::uint32_t> ids_;
  std::vector<std::uint32_t> values_;
};

struct Pipeline {
  /// The compiled pipeline, waited for: throws the corgy::Error of a compile the driver refused.
  VkPipeline handle() const { return compiled.get(); }
  std::shared_future<VkPipeline> compiled;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  KernelInfo kernel{};
  /// Unique per pipeline, for the recorded command buffer's signature.
  std::uint64_t serial = 0;
};

class PipelineCache {
 public:
  /// `stats` counts the pipelines compiled (it may be constructed after this cache: nothing touches it before get());
  /// `driver_cache_file` keeps the driver's pipeline cache between processes (PipelineCompiler; empty: none).
  PipelineCache(const Context& context, VulkanStats& stats, std::filesystem::path driver_cache_file);
  ~PipelineCache();
  PipelineCache(const PipelineCache&) = delete;
  PipelineCache& operator=(const PipelineCache&) = delete;

  /// The pipeline of `kernel` with `constants`, its compile started on first use. Throws corgy::Error when the
  /// kernel is not embedded in the library (a compile the driver refuses throws from Pipeline::handle()).
  const Pipeline& get(const KernelInfo& kernel, const SpecializationConstants& constants = {});

  /// The driver's compile time so far, summed over its threads (PipelineCompiler::compile_ms).
  double compile_ms() const { return compiler_.compile_ms(); }

  /// Bytes of the driver's pipeline cache read from its file (PipelineCompiler::loaded_bytes).
  std::size_t loaded_bytes() const { return compiler_.loaded_bytes(); }

  /// Saves the driver's pipeline cache when it changed (PipelineCompiler::save).
  void save() { compiler_.save(); }

  /// The driver's statistics of the pipelines compiled so far (PipelineCompiler::statistics).
  std::vector<VulkanPipelineStatistics> statistics() const { return compiler_.statistics(); }

 private:
  VkShaderModule shader_module(const KernelInfo& kernel);
  VkDescriptorSetLayout set_layout(std::uint32_t bindings);

  const Context& context_;
  VulkanStats& stats_;
  PipelineCompiler compiler_;
  std::map<std::string, VkShaderModule> modules_;
  std::map<std::uint32_t, VkDescriptorSetLayout> set_layouts_;
  using Key = std::tuple<std::string, std::vector<std::uint32_t>, std::vector<std::uint32_t>>;
  std::map<Key, std::unique_ptr<Pipeline>> pipelines_;
};

}  // namespace corgy::vulkan
