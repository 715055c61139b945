// make_backend(): the one switch that picks where a model runs.
#include <fmt/format.h>

#include "corgy/backend.h"
#include "corgy/backends/blas/blas_backend.h"
#include "corgy/backends/naive/naive_backend.h"
#include "corgy/error.h"
#if CORGY_HAS_VULKAN
#include "corgy/backends/vulkan/vulkan_backend.h"
#endif

namespace corgy {

std::vector<std::string> available_backends() {
#if CORGY_HAS_VULKAN
  return {"vulkan", "blas", "naive"};
#else
  return {"blas", "naive"};
#endif
}

namespace {

constexpr std::string_view vulkan_prefix = "vulkan:";

// A "+fp16" / "+fp32" suffix of a backend name sets the precision; returns the name without it.
std::string strip_precision(const std::string& name, BackendOptions& options) {
  for (const auto& [suffix, precision] :
       {std::pair{std::string_view("+fp16"), Precision::fp16}, std::pair{std::string_view("+fp32"), Precision::fp32}}) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      options.precision = precision;
      return name.substr(0, name.size() - suffix.size());
    }
  }
  return name;
}

#if CORGY_HAS_VULKAN
std::unique_ptr<Backend> make_vulkan_backend(const std::string& device, const BackendOptions& options) {
  VulkanOptions vulkan;
  vulkan.device = device;
  vulkan.validation = options.validation;
  vulkan.precision = options.precision;
  if (!options.tuning) vulkan.convolution.tuning = VulkanTuning::off;
  vulkan.tuning_cache = options.tuning_cache;
  return std::make_unique<VulkanBackend>(vulkan);
}
#endif

// "auto": Vulkan on a discrete or integrated GPU, else OpenBLAS (faster than a CPU Vulkan implementation).
std::unique_ptr<Backend> make_auto_backend(const BackendOptions& options) {
  std::string reason = "corgy was built without Vulkan (CORGY_VULKAN=OFF)";
#if CORGY_HAS_VULKAN
  try {
    reason = "no Vulkan GPU (a CPU Vulkan device such as lavapipe is slower than OpenBLAS)";
    for (const VulkanDeviceInfo& device : vulkan_devices()) {
      if (!device.is_gpu()) continue;
      auto backend = make_vulkan_backend(std::to_string(device.index), options);
      fmt::print(stderr, "corgy: backend auto: vulkan on {} ({})\n", device.name, device.type);
      return backend;
    }
  } catch (const Error& e) {
    reason = e.what();
  }
#endif
  fmt::print(stderr, "corgy: backend auto: blas, since {}\n", reason);
  return std::make_unique<BlasBackend>(BlasOptions{.threads = options.threads, .tuning_cache = options.tuning_cache});
}

}  // namespace

std::unique_ptr<Backend> make_backend(const std::string& full_name, const BackendOptions& given) {
  BackendOptions options = given;
  const std::string name = strip_precision(full_name, options);
  if (name == "naive") return std::make_unique<NaiveBackend>();
  if (name == "blas")
    return std::make_unique<BlasBackend>(BlasOptions{.threads = options.threads, .tuning_cache = options.tuning_cache});
  for (const auto& [suffix, convolution] :
       {std::pair{"im2col", BlasConvolution::im2col}, std::pair{"packed", BlasConvolution::packed},
        std::pair{"winograd", BlasConvolution::winograd}, std::pair{"winograd2x2", BlasConvolution::winograd2x2},
        std::pair{"bands", BlasConvolution::bands}, std::pair{"channel_blocks", BlasConvolution::channel_blocks},
        std::pair{"batch", BlasConvolution::batch}, std::pair{"channels_in_lanes", BlasConvolution::channels_in_lanes},
        std::pair{"few_channels", BlasConvolution::few_channels}}) {
    if (name == std::string("blas:") + suffix)
      return std::make_unique<BlasBackend>(
          BlasOptions{.threads = options.threads, .convolution = convolution, .tuning_cache = options.tuning_cache});
  }
  if (name == "auto") return make_auto_backend(options);
  if (name == "vulkan" || name.starts_with(vulkan_prefix)) {
#if CORGY_HAS_VULKAN
    const std::string device = name == "vulkan" ? std::string() : name.substr(vulkan_prefix.size());
    return make_vulkan_backend(device, options);
#else
    throw Error(fmt::format("backend '{}' is not available: corgy was built without Vulkan (CORGY_VULKAN=OFF)", name));
#endif
  }
  throw Error(
      fmt::format("unknown backend '{}': expected one of naive, blas, blas:im2col, blas:packed, blas:winograd, "
                  "blas:winograd2x2, blas:bands, blas:channel_blocks, blas:batch, blas:channels_in_lanes, "
                  "blas:few_channels, vulkan, vulkan:<device>, auto, each optionally with +fp16",
                  full_name));
}

std::unique_ptr<Backend> make_backend(const std::string& name, int threads) {
  return make_backend(name, BackendOptions{.threads = threads});
}

}  // namespace corgy
