#include "corgy/backends/vulkan/pipeline_compiler.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "corgy/error.h"

namespace corgy::vulkan {

namespace {

// One worker per core, up to the most compiles a layer's tuning starts at once (conv_tuner.cpp: at most 8
// candidates, some of two pipelines).
constexpr unsigned most_workers = 16;

}  // namespace

PipelineCompiler::PipelineCompiler(const Context& context) : context_(context) {}

PipelineCompiler::~PipelineCompiler() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& worker : workers_) worker.join();  // each finishes the queue before it stops
}

std::shared_future<VkPipeline> PipelineCompiler::compile(PipelineSource source) {
  std::packaged_task<VkPipeline()> job([this, source = std::move(source)] { return create(source); });
  std::shared_future<VkPipeline> result = job.get_future().share();
  {
    const std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    if (workers_.size() < std::min(cores, most_workers)) workers_.emplace_back([this] { work(); });
  }
  wake_.notify_one();
  return result;
}

void PipelineCompiler::work() {
  for (;;) {
    std::packaged_task<VkPipeline()> job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and nothing left
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();  // an exception goes into the job's future
  }
}

VkPipeline PipelineCompiler::create(const PipelineSource& source) {
  std::vector<VkSpecializationMapEntry> entries;
  for (std::size_t i = 0; i < source.constant_ids.size(); ++i) {
    entries.push_back(
        {source.constant_ids[i], static_cast<std::uint32_t>(i * sizeof(std::uint32_t)), sizeof(std::uint32_t)});
  }
  VkSpecializationInfo specialization{};
  specialization.mapEntryCount = static_cast<std::uint32_t>(entries.size());
  specialization.pMapEntries = entries.data();
  specialization.dataSize = source.constant_values.size() * sizeof(std::uint32_t);
  specialization.pData = source.constant_values.data();
  VkComputePipelineCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = source.module;
  info.stage.pName = "main";
  info.stage.pSpecializationInfo = entries.empty() ? nullptr : &specialization;
  info.layout = source.layout;
  VkPipeline pipeline = VK_NULL_HANDLE;
  const auto start = std::chrono::steady_clock::now();
  const VkResult created =
      context_.vk().vkCreateComputePipelines(context_.device(), VK_NULL_HANDLE, 1, &info, nullptr, &pipeline);
  compile_ns_ += static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
  check(created, fmt::format("vkCreateComputePipelines ({})", source.kernel).c_str());
  return pipeline;
}

}  // namespace corgy::vulkan
