// VulkanBackend::copy_strided: one dispatch of kernels/copy_strided.comp (or its _fp16 variant), a thread per copied
// element, over the copy in its fewest-axes form (StridedCopyDesc::simplified).
#include <fmt/format.h>

#include <cstdint>
#include <limits>

#include "corgy/backends/vulkan/dispatch_math.h"
#include "corgy/backends/vulkan/runtime.h"
#include "corgy/error.h"

namespace corgy {

namespace {

/// The lowest and highest address of one tensor that `s` touches (offset plus each axis's stride times 0 or
/// extent - 1).
std::array<std::int64_t, 2> address_range(std::int64_t offset, const std::array<std::int64_t, 6>& stride,
                                          const StridedCopyDesc& s) {
  std::int64_t low = offset, high = offset;
  for (int k = 0; k < s.rank; ++k) {
    const auto a = static_cast<std::size_t>(k);
    const std::int64_t span = stride[a] * (s.extent[a] - 1);
    (span < 0 ? low : high) += span;
  }
  return {low, high};
}

}  // namespace

void VulkanBackend::copy_strided(const StridedCopyDesc& desc, const Variable& input, Variable& output) {
  as_forward("strided copy", [&] {
    const StridedCopyDesc s = desc.simplified();
    const auto [in_low, in_high] = address_range(s.input_offset, s.input_stride, s);
    const auto [out_low, out_high] = address_range(s.output_offset, s.output_stride, s);
    // The shader addresses elements with 32-bit signed integers.
    constexpr std::int64_t most = std::numeric_limits<std::int32_t>::max();
    if (in_low < 0 || out_low < 0 || in_high > most || out_high > most || s.count() > static_cast<std::size_t>(most)) {
      throw Error(
          fmt::format("Vulkan: a strided copy of {} elements between tensors {} and {} addresses outside "
                      "[0, 2^31 - 1]",
                      s.count(), input.shape().str(), output.shape().str()));
    }
    vulkan::CopyStridedParams params{};
    params.count = vulkan::u32(s.count());
    params.rank = vulkan::u32(s.rank);
    params.input_offset = static_cast<std::int32_t>(s.input_offset);
    params.output_offset = static_cast<std::int32_t>(s.output_offset);
    for (std::size_t a = 0; a < 6; ++a) {
      const bool used = static_cast<int>(a) < s.rank;
      params.extent[a] = used ? vulkan::u32(s.extent[a]) : 1;
      params.input_stride[a] = used ? static_cast<std::int32_t>(s.input_stride[a]) : 0;
      params.output_stride[a] = used ? static_cast<std::int32_t>(s.output_stride[a]) : 0;
    }
    const vulkan::BufferUse source = runtime_->tensors.read(input);
    vulkan::BufferUse result = runtime_->tensors.write(output, true);
    // Only the region this copy writes: the copies of one concatenation into disjoint parts need no barrier.
    const std::size_t element = vulkan::element_bytes(result.format);
    result.region_begin = static_cast<VkDeviceSize>(out_low) * element;
    result.bytes = static_cast<VkDeviceSize>(out_high + 1) * element;
    runtime_->recorder.dispatch(vulkan::elementwise_pipeline(*runtime_, vulkan::kernels::copy_strided,
                                                             vulkan::kernels::copy_strided_fp16, source, result),
                                {source, result}, params, vulkan::elementwise_groups(s.count()));
  });
}

}  // namespace corgy
