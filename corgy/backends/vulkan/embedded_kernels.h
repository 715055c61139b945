// The SPIR-V of the kernels in kernels/*.comp, compiled at build time and linked into the library.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace corgy::vulkan {

/// The SPIR-V words of the kernel kernels/<name>.comp; empty when there is no such kernel.
/// Defined in the file that kernels/CMakeLists.txt generates.
std::span<const std::uint32_t> embedded_spirv(std::string_view name);

/// A hash of every kernel's name and SPIR-V: files of compiled pipelines (the driver's pipeline cache) written by a
/// library with other kernels are not read back.
std::uint64_t embedded_kernels_fingerprint();

}  // namespace corgy::vulkan
