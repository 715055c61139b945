#include "corgy/backends/vulkan/pipeline_compiler.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <system_error>
#include <utility>

#include "corgy/backends/vulkan/embedded_kernels.h"
#include "corgy/error.h"
#include "corgy/io/cache_file.h"

namespace corgy::vulkan {

namespace {

// One worker per core, up to the most compiles a layer's tuning starts at once (conv_tuner.cpp: at most 8
// candidates, some of two pipelines).
constexpr unsigned most_workers = 16;

// The file: magic, the fingerprint of the library's kernels, the data's size and FNV-1a hash (8 bytes each,
// little-endian as written), then the data. A driver's data for the pipelines of a few models is a few MB; a
// larger file is not one corgy wrote. A library with other kernels starts a new file instead of adding its
// pipelines to the old ones', which no one would ask for again.
constexpr std::string_view magic = "corgy-vk-pipes-2";
constexpr std::size_t header_bytes = 16 + 8 + 8 + 8;
constexpr std::size_t most_pipeline_cache_bytes = std::size_t{256} << 20;

std::uint64_t fnv1a(std::string_view bytes) {
  std::uint64_t hash = 14695981039346656037ull;
  for (const char byte : bytes) hash = (hash ^ static_cast<unsigned char>(byte)) * 1099511628211ull;
  return hash;
}

std::uint64_t read_u64(const char* at) {
  std::uint64_t value = 0;
  std::memcpy(&value, at, sizeof value);
  return value;
}

}  // namespace

std::string pipeline_cache_file_bytes(std::string_view driver_data) {
  std::string bytes(magic);
  const std::uint64_t numbers[3] = {embedded_kernels_fingerprint(), driver_data.size(), fnv1a(driver_data)};
  bytes.append(reinterpret_cast<const char*>(numbers), sizeof numbers);
  bytes.append(driver_data);
  return bytes;
}

std::optional<std::string_view> pipeline_cache_driver_data(std::string_view file_bytes,
                                                           const VkPhysicalDeviceProperties& properties) {
  if (file_bytes.size() < header_bytes || file_bytes.substr(0, magic.size()) != magic) return std::nullopt;
  const char* numbers = file_bytes.data() + magic.size();
  if (read_u64(numbers) != embedded_kernels_fingerprint()) return std::nullopt;
  const std::uint64_t size = read_u64(numbers + 8);
  const std::string_view data = file_bytes.substr(header_bytes);
  if (size != data.size() || read_u64(numbers + 16) != fnv1a(data)) return std::nullopt;
  // VkPipelineCacheHeaderVersionOne: header size, version, vendor id, device id (4 bytes each), the UUID.
  VkPipelineCacheHeaderVersionOne header{};
  if (data.size() < sizeof header) return std::nullopt;
  std::memcpy(&header, data.data(), sizeof header);
  if (header.headerVersion != VK_PIPELINE_CACHE_HEADER_VERSION_ONE || header.vendorID != properties.vendorID ||
      header.deviceID != properties.deviceID ||
      std::memcmp(header.pipelineCacheUUID, properties.pipelineCacheUUID, VK_UUID_SIZE) != 0) {
    return std::nullopt;
  }
  return data;
}

PipelineCompiler::PipelineCompiler(const Context& context, std::filesystem::path cache_file)
    : context_(context), cache_file_(std::move(cache_file)) {
  std::optional<std::string> file_bytes;
  if (!cache_file_.empty()) file_bytes = read_cache_file(cache_file_, most_pipeline_cache_bytes);
  std::optional<std::string_view> data;
  if (file_bytes) data = pipeline_cache_driver_data(*file_bytes, context.physical().properties);
  VkPipelineCacheCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
  info.initialDataSize = data ? data->size() : 0;
  info.pInitialData = data ? data->data() : nullptr;
  if (context.vk().vkCreatePipelineCache(context.device(), &info, nullptr, &cache_) == VK_SUCCESS) {
    loaded_bytes_ = info.initialDataSize;
  } else {
    cache_ = VK_NULL_HANDLE;  // compiles then go without a cache
  }
}

PipelineCompiler::~PipelineCompiler() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& worker : workers_) worker.join();  // each finishes the queue before it stops
  if (cache_ != VK_NULL_HANDLE) context_.vk().vkDestroyPipelineCache(context_.device(), cache_, nullptr);
}

void PipelineCompiler::save() {
  const std::uint64_t compiled = compiled_.load();
  if (cache_file_.empty() || cache_ == VK_NULL_HANDLE || compiled == saved_compiled_) return;
  saved_compiled_ = compiled;
  const DeviceFunctions& vk = context_.vk();
  std::size_t size = 0;
  if (vk.vkGetPipelineCacheData(context_.device(), cache_, &size, nullptr) != VK_SUCCESS || size == 0 ||
      size > most_pipeline_cache_bytes - header_bytes) {
    return;
  }
  std::string data(size, '\0');
  // VK_INCOMPLETE: the cache grew between the two calls (a compile in flight); what was written is whole.
  const VkResult got = vk.vkGetPipelineCacheData(context_.device(), cache_, &size, data.data());
  if (got != VK_SUCCESS && got != VK_INCOMPLETE) return;
  data.resize(size);
  replace_cache_file(cache_file_, pipeline_cache_file_bytes(data));  // a failure costs later processes time only
}

std::shared_future<VkPipeline> PipelineCompiler::compile(PipelineSource source) {
  std::packaged_task<VkPipeline()> job([this, source = std::move(source)] { return create(source); });
  std::shared_future<VkPipeline> result = job.get_future().share();
  {
    const std::lock_guard lock(mutex_);
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    if (workers_.size() < std::min(cores, most_workers)) {
      try {
        workers_.emplace_back([this] { work(); });
      } catch (const std::system_error&) {
        // No thread to be had (a process at its limit): the workers there are take the job, or this thread does.
      }
    }
    if (!workers_.empty()) jobs_.push_back(std::move(job));
  }
  if (job.valid()) {
    job();
  } else {
    wake_.notify_one();
  }
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
  const bool statistics = context_.features().pipeline_statistics;
  if (statistics) info.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  VkPipeline pipeline = VK_NULL_HANDLE;
  const auto start = std::chrono::steady_clock::now();
  const VkResult created =
      context_.vk().vkCreateComputePipelines(context_.device(), cache_, 1, &info, nullptr, &pipeline);
  compile_ns_ += static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
  check(created, fmt::format("vkCreateComputePipelines ({})", source.kernel).c_str());
  ++compiled_;
  if (statistics) keep_statistics(source, pipeline);
  return pipeline;
}

void PipelineCompiler::keep_statistics(const PipelineSource& source, VkPipeline pipeline) {
  const DeviceFunctions& vk = context_.vk();
  if (!vk.vkGetPipelineExecutablePropertiesKHR || !vk.vkGetPipelineExecutableStatisticsKHR) return;
  VulkanPipelineStatistics kept;
  kept.kernel = source.kernel;
  for (std::size_t i = 0; i < source.constant_ids.size(); ++i) {
    kept.constants.emplace_back(source.constant_ids[i], source.constant_values[i]);
  }
  VkPipelineInfoKHR info{};
  info.sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR;
  info.pipeline = pipeline;
  std::uint32_t executables = 0;
  if (vk.vkGetPipelineExecutablePropertiesKHR(context_.device(), &info, &executables, nullptr) != VK_SUCCESS) return;
  for (std::uint32_t e = 0; e < executables; ++e) {
    VkPipelineExecutableInfoKHR executable{};
    executable.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR;
    executable.pipeline = pipeline;
    executable.executableIndex = e;
    std::uint32_t count = 0;
    if (vk.vkGetPipelineExecutableStatisticsKHR(context_.device(), &executable, &count, nullptr) != VK_SUCCESS)
      continue;
    std::vector<VkPipelineExecutableStatisticKHR> values(count);
    for (VkPipelineExecutableStatisticKHR& value : values)
      value.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR;
    if (vk.vkGetPipelineExecutableStatisticsKHR(context_.device(), &executable, &count, values.data()) != VK_SUCCESS) {
      continue;
    }
    for (const VkPipelineExecutableStatisticKHR& value : values) {
      std::string text;
      switch (value.format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: text = value.value.b32 ? "true" : "false"; break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: text = fmt::format("{}", value.value.i64); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: text = fmt::format("{}", value.value.u64); break;
        default: text = fmt::format("{}", value.value.f64); break;
      }
      kept.values.emplace_back(value.name, std::move(text));
    }
  }
  const std::lock_guard lock(statistics_mutex_);
  statistics_.push_back(std::move(kept));
}

std::vector<VulkanPipelineStatistics> PipelineCompiler::statistics() const {
  const std::lock_guard lock(statistics_mutex_);
  return statistics_;
}

}  // namespace corgy::vulkan
