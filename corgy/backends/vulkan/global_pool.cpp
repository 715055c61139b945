#include "corgy/backends/vulkan/global_pool.h"

#include <algorithm>
#include <bit>

namespace corgy::vulkan {

bool is_global_pool(const Pool2dDesc& desc, const Shape& input) {
  return desc.kernel_h == input.h && desc.kernel_w == input.w && desc.pad_top == 0 && desc.pad_left == 0 &&
         desc.pad_bottom == 0 && desc.pad_right == 0;
}

void record_global_pool(Runtime& runtime, PoolKind kind, const Variable& input, Variable& output) {
  const Shape& in = input.shape();
  const std::uint32_t planes = u32(in.n * in.c);
  const std::uint32_t plane_size = u32(in.plane_count());
  // About 16 values per thread, in a power of two of threads up to the workgroup: a 7 x 7 plane gets 4 threads (64
  // planes per workgroup), 112 x 112 gets 256. A first guess: the kernel is memory-bound at any of these.
  const std::uint32_t threads_per_plane =
      std::min<std::uint32_t>(std::bit_ceil(std::max<std::uint32_t>((plane_size + 15) / 16, 1)), elementwise_workgroup);
  const std::uint32_t planes_per_group = elementwise_workgroup / threads_per_plane;
  const GlobalPoolParams params{planes, plane_size, threads_per_plane,
                                kind == PoolKind::max ? PoolKernelKind::max : PoolKernelKind::average};
  const BufferUse source = runtime.tensors.read(input);
  const BufferUse result = runtime.tensors.write(output, true);
  const std::uint32_t groups = std::min<std::uint32_t>((planes + planes_per_group - 1) / planes_per_group, 65535);
  runtime.recorder.dispatch(
      elementwise_pipeline(runtime, kernels::global_pool, kernels::global_pool_fp16, source, result), {source, result},
      params, groups);
}

}  // namespace corgy::vulkan
