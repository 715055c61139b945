#include "corgy/backends/vulkan/gemm_dispatch.h"

#include <fmt/format.h>

#include <algorithm>

#include "corgy/backends/vulkan/dispatch_math.h"
#include "corgy/error.h"

namespace corgy::vulkan {

namespace {

// Workgroups that keep a large GPU (100+ compute units) busy.
constexpr double gemm_busy_workgroups = 128.0;

// GFLOP/s at 2048^3 on an H200 relative to the fastest (docs/benchmarks.md): 33.8, 30.5, 27.1, 21.0 TFLOP/s.
constexpr RatedTiles rated_tiles[] = {
    {{64, 128, 16, 4, 8}, 1.0},  // 256 threads, 24 KiB shared memory
    {{128, 128, 8, 8, 8}, 0.9},  // 256 threads, 16 KiB
    {{64, 64, 16, 4, 4}, 0.8},   // 256 threads, 16 KiB
    {{32, 32, 16, 4, 4}, 0.62},  // 64 threads, 8 KiB
};

double estimated_speed(const RatedTiles& rated, std::uint32_t m, std::uint32_t n, std::uint32_t batch) {
  const VulkanGemmTiles& t = rated.tiles;
  const double groups = static_cast<double>(ceil_div(m, t.tile_m)) * ceil_div(n, t.tile_n) * batch;
  const double useful = static_cast<double>(m) * n * batch / (groups * t.tile_m * t.tile_n);
  return std::min(1.0, groups / gemm_busy_workgroups) * useful * rated.speed;
}

bool fits(const VulkanGemmTiles& t, const VkPhysicalDeviceLimits& limits) {
  return t.shared_bytes() <= limits.maxComputeSharedMemorySize && t.threads() <= limits.maxComputeWorkGroupInvocations;
}

}  // namespace

std::span<const RatedTiles> gemm_tile_choices() { return rated_tiles; }

void check_gemm_tiles(const VulkanGemmTiles& t, const VkPhysicalDeviceLimits& limits) {
  const auto fail = [&](const char* rule) {
    throw Error(fmt::format("Vulkan: GEMM tiles {}x{}x{} with {}x{} per thread: {}", t.tile_m, t.tile_n, t.tile_k,
                            t.thread_m, t.thread_n, rule));
  };
  if (t.thread_m == 0 || t.thread_n == 0 || t.thread_m % 4 || t.thread_n % 4 || t.tile_k == 0 || t.tile_k % 4) {
    fail("thread_m, thread_n and tile_k must be positive multiples of 4");
  }
  if (t.tile_m % t.thread_m || t.tile_n % t.thread_n) fail("a tile must be a whole number of thread blocks");
  const std::uint32_t vec4s_per_step = 4 * t.threads();
  if ((t.tile_m * t.tile_k) % vec4s_per_step || (t.tile_n * t.tile_k) % vec4s_per_step) {
    fail("each thread must move a whole number of vec4s of A and of B per step");
  }
  if (!fits(t, limits)) {
    fail(fmt::format("needs {} threads and {} bytes of shared memory; the device allows {} and {}", t.threads(),
                     t.shared_bytes(), limits.maxComputeWorkGroupInvocations, limits.maxComputeSharedMemorySize)
             .c_str());
  }
}

VulkanGemmTiles choose_gemm_tiles(std::uint32_t m, std::uint32_t n, std::uint32_t batch,
                                  const VkPhysicalDeviceLimits& limits) {
  const RatedTiles* best = nullptr;
  for (const RatedTiles& rated : rated_tiles) {
    if (!fits(rated.tiles, limits)) continue;
    if (!best || estimated_speed(rated, m, n, batch) > estimated_speed(*best, m, n, batch)) best = &rated;
  }
  if (!best) throw Error("Vulkan: the device's workgroup limits are too small for every GEMM tile shape");
  return best->tiles;
}

VulkanGemmTiles record_gemm(Runtime& runtime, const GemmCall& call) {
  const GemmParams& p = call.params;
  const std::uint32_t batch = call.images * p.groups;
  const VkPhysicalDeviceLimits& limits = runtime.context.limits();
  VulkanGemmTiles tiles = runtime.options.gemm_tiles;
  if (tiles.automatic()) {
    tiles = choose_gemm_tiles(p.m, p.n, batch, limits);
  } else {
    check_gemm_tiles(tiles, limits);
  }
  // vec4 reads and writes need rows (and batch strides) that are whole vec4s.
  const bool a_vec4 = p.lda % 4 == 0 && p.a_group_stride % 4 == 0 && (call.a_transposed ? p.m : p.k) % 4 == 0;
  const bool b_vec4 = p.ldb % 4 == 0 && p.b_image_stride % 4 == 0 && p.b_group_stride % 4 == 0 &&
                      (call.b_transposed ? p.k : p.n) % 4 == 0;
  const bool c_vec4 = p.ldc % 4 == 0 && p.c_image_stride % 4 == 0 && p.c_group_stride % 4 == 0 && p.n % 4 == 0;
  SpecializationConstants constants;
  constants.set(GemmConstant::tile_m, tiles.tile_m)
      .set(GemmConstant::tile_n, tiles.tile_n)
      .set(GemmConstant::tile_k, tiles.tile_k)
      .set(GemmConstant::thread_m, tiles.thread_m)
      .set(GemmConstant::thread_n, tiles.thread_n)
      .set_flag(GemmConstant::a_transposed, call.a_transposed)
      .set_flag(GemmConstant::b_transposed, call.b_transposed)
      .set_flag(GemmConstant::a_vec4, a_vec4)
      .set_flag(GemmConstant::b_vec4, b_vec4)
      .set_flag(GemmConstant::c_vec4, c_vec4)
      .set(GemmConstant::workgroup_size, tiles.threads());
  const Pipeline& pipeline = runtime.pipelines.get(kernels::gemm_tiled, constants);
  runtime.recorder.dispatch(pipeline, {call.a, call.b, call.c, call.bias}, p, ceil_div(p.n, tiles.tile_n),
                            ceil_div(p.m, tiles.tile_m), batch);
  return tiles;
}

}  // namespace corgy::vulkan
