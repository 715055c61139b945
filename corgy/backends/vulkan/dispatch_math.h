// Small integer helpers the Vulkan backend's recorders share: the 32-bit values push constants and dispatch sizes
// are made of, and the check that a dispatch's grid fits the device.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace corgy::vulkan {

/// A size or count as the 32-bit value a push constant holds. Callers check that the tensors involved stay below
/// 2^32 elements where that is not evident from their shapes.
inline std::uint32_t u32(std::size_t value) { return static_cast<std::uint32_t>(value); }
inline std::uint32_t u32(int value) { return static_cast<std::uint32_t>(value); }

/// a / b rounded up: whole workgroups or tiles.
inline std::uint32_t ceil_div(std::uint32_t a, std::uint32_t b) { return (a + b - 1) / b; }

/// Throws corgy::Error when a dispatch of groups_x x groups_y x groups_z workgroups exceeds the device's grid, or
/// when a tensor it indexes with 32 bits has 2^32 elements or more: "Vulkan: a <what> of input <input> into output
/// <output> is too large for one dispatch (...)".
void check_dispatch_fits(const VkPhysicalDeviceLimits& limits, std::string_view what, std::string_view input,
                         std::string_view output, std::uint64_t largest_tensor, std::uint64_t groups_x,
                         std::uint64_t groups_y, std::uint64_t groups_z);

}  // namespace corgy::vulkan
