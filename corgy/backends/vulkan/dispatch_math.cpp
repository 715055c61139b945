#include "corgy/backends/vulkan/dispatch_math.h"

#include <fmt/format.h>

#include "corgy/error.h"

namespace corgy::vulkan {

void check_dispatch_fits(const VkPhysicalDeviceLimits& limits, std::string_view what, std::string_view input,
                         std::string_view output, std::uint64_t largest_tensor, std::uint64_t groups_x,
                         std::uint64_t groups_y, std::uint64_t groups_z) {
  const std::uint32_t* most = limits.maxComputeWorkGroupCount;
  if (largest_tensor < (1ull << 32) && groups_x <= most[0] && groups_y <= most[1] && groups_z <= most[2]) return;
  throw Error(
      fmt::format("Vulkan: a {} of input {} into output {} is too large for one dispatch ({} elements, "
                  "{}x{}x{} workgroups; the kernel indexes fewer than 2^32 elements and the device allows "
                  "{}x{}x{} workgroups)",
                  what, input, output, largest_tensor, groups_x, groups_y, groups_z, most[0], most[1], most[2]));
}

}  // namespace corgy::vulkan
