#include "corgy/backends/vulkan/pipelines.h"

#include <fmt/format.h>

#include <atomic>

#include "corgy/backends/vulkan/embedded_kernels.h"
#include "corgy/error.h"

namespace corgy::vulkan {

namespace {
std::atomic<std::uint64_t> next_pipeline_serial{1};
}

PipelineCache::PipelineCache(const Context& context, VulkanStats& stats, std::filesystem::path driver_cache_file)
    : context_(context), stats_(stats), compiler_(context, std::move(driver_cache_file)) {}

PipelineCache::~PipelineCache() {
  const DeviceFunctions& vk = context_.vk();
  const VkDevice device = context_.device();
  for (auto& [key, pipeline] : pipelines_) {
    try {
      vk.vkDestroyPipeline(device, pipeline->handle(), nullptr);  // waits for a compile in flight
    } catch (...) {
      // the compile failed (the driver refused it, or memory ran out): there is nothing to destroy
    }
    vk.vkDestroyPipelineLayout(device, pipeline->layout, nullptr);
  }
  for (auto& [bindings, layout] : set_layouts_) vk.vkDestroyDescriptorSetLayout(device, layout, nullptr);
  for (auto& [name, module] : modules_) vk.vkDestroyShaderModule(device, module, nullptr);
}

VkShaderModule PipelineCache::shader_module(const KernelInfo& kernel) {
  if (auto found = modules_.find(kernel.name); found != modules_.end()) return found->second;
  const std::span<const std::uint32_t> words = embedded_spirv(kernel.name);
  if (words.empty()) throw Error(fmt::format("Vulkan: kernel '{}' is not built into this library", kernel.name));
  VkShaderModuleCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  info.codeSize = words.size_bytes();
  info.pCode = words.data();
  VkShaderModule module = VK_NULL_HANDLE;
  check(context_.vk().vkCreateShaderModule(context_.device(), &info, nullptr, &module), "vkCreateShaderModule");
  modules_.emplace(kernel.name, module);
  return module;
}

VkDescriptorSetLayout PipelineCache::set_layout(std::uint32_t bindings) {
  if (auto found = set_layouts_.find(bindings); found != set_layouts_.end()) return found->second;
  std::vector<VkDescriptorSetLayoutBinding> entries(bindings);
  for (std::uint32_t i = 0; i < bindings; ++i) {
    entries[i].binding = i;
    entries[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    entries[i].descriptorCount = 1;
    entries[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  info.bindingCount = bindings;
  info.pBindings = entries.data();
  VkDescriptorSetLayout layout = VK_NULL_HANDLE;
  check(context_.vk().vkCreateDescriptorSetLayout(context_.device(), &info, nullptr, &layout),
        "vkCreateDescriptorSetLayout");
  set_layouts_.emplace(bindings, layout);
  return layout;
}

const Pipeline& PipelineCache::get(const KernelInfo& kernel, const SpecializationConstants& constants) {
  Key key{kernel.name, constants.ids(), constants.values()};
  if (auto found = pipelines_.find(key); found != pipelines_.end()) return *found->second;

  auto pipeline = std::make_unique<Pipeline>();
  pipeline->kernel = kernel;
  pipeline->serial = next_pipeline_serial++;
  pipeline->set_layout = set_layout(kernel.bindings);
  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, kernel.push_constant_bytes};
  VkPipelineLayoutCreateInfo layout_info{};
  layout_info.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  layout_info.setLayoutCount = 1;
  layout_info.pSetLayouts = &pipeline->set_layout;
  layout_info.pushConstantRangeCount = 1;
  layout_info.pPushConstantRanges = &push;
  const DeviceFunctions& vk = context_.vk();
  check(vk.vkCreatePipelineLayout(context_.device(), &layout_info, nullptr, &pipeline->layout),
        "vkCreatePipelineLayout");

  pipeline->compiled =
      compiler_.compile({kernel.name, shader_module(kernel), pipeline->layout, constants.ids(), constants.values()});
  ++stats_.pipelines_compiled;
  return *pipelines_.emplace(std::move(key), std::move(pipeline)).first->second;
}

}  // namespace corgy::vulkan
